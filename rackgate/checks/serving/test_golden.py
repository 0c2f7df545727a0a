"""SRV-GOLDEN: every DP rank's greedy answers to the golden prompt set against the golden set
recorded on the same image (the baseline file's, --record-baseline).

Recording (--record-baseline): the answers become the golden set (merged with an earlier
recording of the same rack and image); the ranks are held to each other meanwhile (a rank that
answers otherwise than most is FAILED before its answers turn golden). Comparing: each answer
against the golden answers of its prompt, within the band (rackgate/gates/golden.py).
"""
import pytest

from rackgate.atom import ask_ranks, fanout
from rackgate.atom.logs import rank_table
from rackgate.baseline import golden as store
from rackgate.errors import CouldNotObserve
from rackgate.gates import golden
from rackgate.probes import golden as answers_of
from rackgate.report.verdict import check

ROW = "SRV-GOLDEN"


@pytest.mark.row(ROW)
def test_golden(server, rack, evidence, facts, baseline, pytestconfig):
    cfg = rack.serving
    if not cfg.golden:
        pytest.skip("serving.golden = false in the rack file: the golden comparison does not apply")
    recording = bool(pytestconfig.option.record_baseline)
    gold = None if recording else _golden_set(baseline, pytestconfig)
    ps = store.prompt_set()
    if gold is not None and gold.version != ps.version:
        raise CouldNotObserve(f"the golden set was recorded with prompt set v{gold.version}, this rackgate asks "
                              f"v{ps.version}: record it again (--record-baseline)")
    max_tokens = gold.max_tokens if gold else cfg.golden_max_tokens
    top_k = gold.top_k if gold else cfg.golden_top_k
    concurrency = gold.concurrency if gold else cfg.golden_concurrency
    table = rank_table(rack)
    hinted = fanout.takes_rank_hint(server.client, len(table), cfg.request_timeout_s)
    ranks: list[int | None] = list(table) if hinted else [None] * cfg.golden_repeats_attached
    asks = [fanout.Ask(text, r) for r in ranks for text in ps.prompts.values()]
    ids = {text: pid for pid, text in ps.prompts.items()}
    got = ask_ranks.ask(server.client, asks, max_tokens, top_k, cfg.request_timeout_s, concurrency)
    evidence.attach("golden prompts, every rank", "\n".join(
        f"dp{g.ask.rank if g.ask.rank is not None else '?'}\t{g.seconds:.1f}s\t{ids[g.ask.prompt]}\t"
        + (g.error or repr((g.choice or {}).get("text", ""))[:100]) for g in got))
    failed = [g for g in got if g.error]
    if failed:
        raise CouldNotObserve(f"{len(failed)} of {len(got)} golden prompts got no answer (e.g. "
                              f"{_at(failed[0].ask, table)}: {failed[0].error})")
    answers = [answers_of.parse(ids[g.ask.prompt], g.choice or {}, g.ask.rank) for g in got]
    with_lp = all(a.has_logprobs for a in answers)
    floor = golden.Band(cfg.golden_logprob_tol, cfg.golden_kl_tol)
    if recording:
        ref, tol, against = golden.majority(answers), floor, "the answer most ranks gave (recording)"
    else:
        assert gold is not None
        ref, tol = gold.answers, golden.band(gold.answers, floor, cfg.golden_noise)
        if not (gold.logprobs and with_lp):  # one side has no logprobs: both compared as text (word pieces)
            ref = {p: [_as_text(g) for g in gs] for p, gs in ref.items()}
            answers = [_as_text(a) for a in answers]
            with_lp = False
        against = f"the golden set ({gold.describe()})"
    missing = sorted({a.prompt for a in answers} - set(ref))
    if missing:
        raise CouldNotObserve(f"the golden set has no answer to {', '.join(missing)}: record it again")
    drifts = [d for a in answers if (d := golden.drift(ref[a.prompt], a, tol)) is not None]
    if recording:  # a rank that answers otherwise than most is FAILED below; its answers never turn golden
        odd = {id(d.now) for d in drifts}
        facts.keep(store.KEY, store.recording([a for a in answers if id(a) not in odd], max_tokens, top_k,
                                              concurrency))
    lp_note = (f"top-{top_k} logprobs compared" if with_lp else
               "the server returns no logprobs: tokens alone compared (the text's word pieces)")
    evidence.attach("band and distances", f"against {against}\nband: {tol.describe()}\n{lp_note}\n" + "\n".join(
        f"{_at(fanout.Ask(a.prompt, a.rank), table)}\t{a.prompt}\t{golden.closest(ref[a.prompt], a)[1].describe()}"
        for a in answers))
    seen = golden.read(drifts, answers, table, server.url, with_lp)
    check(not drifts, ROW, seen.where, f"{seen.text} (against {against}; band {tol.describe()})")


def _golden_set(baseline, config):
    """The baseline's golden set; none recorded is could-not-observe: the comparison cannot be
    made (the item is in -m gate only when one is recorded: rackgate/fixtures/regression.py)."""
    if baseline is None:
        raise CouldNotObserve("no baseline recorded (--baseline FILE or the rack file's baseline): record one "
                              "with the golden set on a known-good image: pytest --record-baseline")
    try:
        gold = store.load(baseline.sets.get(store.KEY))
    except store.GoldenError as e:
        raise CouldNotObserve(f"{baseline.path}: {e}") from None
    if gold is None:
        raise CouldNotObserve(f"the baseline {baseline.path} holds no golden set: record one on a known-good image "
                              "with pytest -m 'serving or gate' --record-baseline")
    return gold


def _as_text(c: answers_of.Completion) -> answers_of.Completion:
    return answers_of.Completion(c.prompt, c.text, answers_of.pieces(c.text), rank=c.rank, finish=c.finish)


def _at(a: fanout.Ask, table: dict[int, str]) -> str:
    return f"{table.get(a.rank, '?')}/dp{a.rank}" if a.rank is not None else "(rank not known)"
