"""SRV-GOLDEN: every DP rank's greedy answers to the golden prompt set against the golden set
recorded on the same image (the baseline file's, --record-baseline).

Recording (--record-baseline): the answers become the golden set (merged with an earlier
recording of the same rack and image); the ranks are held to each other meanwhile (a rank that
answers otherwise than most is FAILED before its answers turn golden). Comparing: each answer
against the golden answers of its prompt, within the band (rackgate/gates/golden.py).
"""
from typing import Any

import pytest

from rackgate.atom import fanout
from rackgate.atom.logs import rank_table
from rackgate.baseline import golden as store
from rackgate.errors import CouldNotObserve
from rackgate.fixtures.server import settle
from rackgate.gates import golden
from rackgate.probes import golden as answers_of
from rackgate.report.verdict import check, fail

ROW = "SRV-GOLDEN"


@pytest.mark.row(ROW)
def test_golden(server, per_rank, rack, evidence, facts, baseline, pytestconfig):
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
    # every rank (the hint, or spread by the server: the run's routing, decided once), each
    # prompt, prompt by prompt (store.asks)
    asks = store.asks(ps, per_rank.routing.targets(1, cfg.golden_repeats_attached))
    ids = {text: pid for pid, text in ps.prompts.items()}
    got = _asked(per_rank, asks, max_tokens, top_k, concurrency, server, evidence)
    evidence.attach("golden prompts, every rank", per_rank.routing.describe() + "\n" + "\n".join(
        f"dp{g.ask.rank if g.ask.rank is not None else '?'}\t{g.seconds:.1f}s\t{ids[g.ask.prompt]}\t"
        + (g.error or repr(_choice(g).get("text", ""))[:100]) for g in got))
    failed = [g for g in got if g.error]
    if failed and len(failed) == len(got):
        raise CouldNotObserve(f"none of {len(got)} golden prompts was answered (e.g. "
                              f"{_at(failed[0].ask, table)}: {failed[0].error})")
    if failed:  # others to the same server were answered: a finding about those ranks, not blindness
        fail(ROW, ", ".join(dict.fromkeys(_at(g.ask, table) for g in failed)),
             f"{len(failed)} of {len(got)} golden prompts answered with an error while the others were answered "
             f"(e.g. {_at(failed[0].ask, table)}: {failed[0].error})")
    answers = [answers_of.parse(ids[g.ask.prompt], _choice(g), g.ask.rank) for g in got]
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


def _asked(per_rank, asks: list[fanout.Ask], max_tokens: int, top_k: int, concurrency: int, server,
           evidence) -> list[fanout.Got]:
    """The golden asks, greedy and non-streamed (the whole choice with its logprobs), `concurrency`
    at a time -- the concurrency the golden set was recorded at, since batching changes kernels --
    each batch through the per-rank mechanism (rackgate/atom/perrank.py) with its hang rule: a
    request that never returns while others came back is SRV-DEADLOCK's FAILED (settle)."""
    extra = {"logprobs": top_k} if top_k else None
    got: list[fanout.Got] = []
    step = max(1, concurrency)
    for i in range(0, len(asks), step):
        spread = per_rank.asks(asks[i:i + step], max_tokens, stream=False, extra=extra)
        settle(spread, ROW, server, evidence)
        got += spread.got
    return got


def _choice(g: fanout.Got) -> dict[str, Any]:
    """The first choice of a 200 answer as the server sent it ({} when none)."""
    choices = g.body.get("choices") if not g.error else None
    return choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}


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
