"""SRV-GOLDEN on the simulated rack, one item per DP rank: recording twice merges, the healthy sim
passes against its own golden set (gate and regression select it then), no golden set is
could-not-observe, the rack file can say the comparison does not apply, and attached without a rack
file it is the server's one item. The faults are the matrix's (srv.toml)."""
import json

import pytest

from ..harness import REPO, run_suite, selected

pytestmark = pytest.mark.suite

CHECK = "SRV-GOLDEN"  # one item per DP rank (SRV-GOLDEN::node3-dp9)
ITEMS = {f"{CHECK}::node{r // 4 + 1}-dp{r}" for r in range(16)}


def test_recorded_twice_merged_then_the_healthy_sim_passes_its_own_golden_set(tmp_path):
    base = tmp_path / "baseline.json"
    for i in (1, 2):
        rec = run_suite(tmp_path / f"rec{i}", CHECK, "--record-baseline", "--baseline", str(base), timeout=600)
        assert rec.ids("passed") == ITEMS, rec.stdout[-3000:]
    assert "the golden set (SRV-GOLDEN)" in rec.stdout and "merged as run 2" in rec.stdout, rec.stdout[-2000:]
    gold = json.loads(base.read_text())["sets"]["golden"]
    assert gold["runs"] == 2 and gold["logprobs"] and gold["max_tokens"] == 32
    # every rank answered every prompt alike, both times: one distinct answer per prompt, seen 32 times
    assert {p: [(len(a["ranks"]), a["seen"]) for a in xs] for p, xs in gold["answers"].items()} == {
        p: [(16, 32)] for p in gold["answers"]}
    run = run_suite(tmp_path / "gate", "-m", "gate", CHECK, "--baseline", str(base))
    assert run.ids("passed") == ITEMS, run.stdout[-3000:]
    # -m regression selects the same items (collected, not run again: a second run of the same 16 items
    # against the same golden set on the same healthy sim repeated the gate run's work, ~1 CPU s more)
    assert selected(tmp_path / "reg", "-m", "regression", CHECK, "--baseline", str(base)) == ITEMS


def test_no_golden_set_is_could_not_observe_and_the_gate_does_not_select_it(tmp_path):
    none = tmp_path / "none.json"
    run = run_suite(tmp_path / "serving", "-m", "serving", CHECK, "--baseline",
                    str(none))
    assert set(run.outcomes) >= ITEMS, run.stdout[-2000:]
    for i in ITEMS:
        o = run.outcomes[i]
        assert o.status == "error" and "could not observe" in o.message and "--record-baseline" in o.message, o.message
    run = run_suite(tmp_path / "gate", "-m", "gate or regression", CHECK,
                    "--baseline", str(none))
    assert not ITEMS & set(run.outcomes), run.stdout[-2000:]


def test_the_rack_file_says_it_does_not_apply(tmp_path):
    text = (REPO / "rackgate" / "sim" / "racks" / "sim.toml").read_text()
    assert "\n[serving]\n" in text
    rack = tmp_path / "no-golden.toml"
    rack.write_text(text.replace("\n[serving]\n", "\n[serving]\ngolden = false\n"))
    run = run_suite(tmp_path, "--rack", str(rack), CHECK, timeout=600)
    assert {run.outcomes[i].status for i in ITEMS} == {"skipped"}, run.stdout[-3000:]
    assert all("does not apply" in run.outcomes[i].message for i in ITEMS), run.stdout[-3000:]


def test_recording_holds_the_ranks_to_each_other_and_keeps_the_odd_one_out(tmp_path):
    base = tmp_path / "baseline.json"
    rec = run_suite(tmp_path, CHECK, "--record-baseline", "--baseline", str(base), "--sim-fault", "rank-drift",
                    timeout=600)
    assert rec.ids("failed") == {f"{CHECK}::node3-dp9"} and rec.ids("passed") == ITEMS - rec.ids("failed"), \
        rec.stdout[-3000:]
    o = rec.outcomes[f"{CHECK}::node3-dp9"]
    assert o.message.lstrip().startswith("SRV-GOLDEN [node3/dp9]"), rec.stdout[-3000:]
    assert "the answer most ranks gave (recording)" in o.message, o.message
    gold = json.loads(base.read_text())["sets"]["golden"]
    assert all(9 not in a["ranks"] for xs in gold["answers"].values() for a in xs), gold["answers"]["count"]


def test_attached_without_a_rack_file_it_is_the_servers_one_item(tmp_path):
    """The DP ranks not known (--atom-url, no rack file): SRV-GOLDEN is one item keyed "server"
    (`SRV-GOLDEN::server`, declared unranked) that records the golden set and then compares
    with it."""
    from ..simserver import sim_server
    base = tmp_path / "baseline.json"
    one = f"{CHECK}::server"
    with sim_server() as (proc, url):
        attached = ("--atom-url", url, "--served-model", "moonshotai/Kimi-K3", "--baseline", str(base))
        rec = run_suite(tmp_path / "rec", CHECK, "--record-baseline", *attached, timeout=600)
        run = run_suite(tmp_path / "gate", "-m", "gate", CHECK, *attached, timeout=600)
        assert proc.poll() is None, "the suite stopped a server it did not start"
    assert rec.ids("passed") == {one} and set(rec.outcomes) == {one}, rec.stdout[-3000:]
    assert json.loads(base.read_text())["sets"]["golden"]["answers"], "the server's one item kept the golden set"
    assert run.ids("passed") == {one}, run.stdout[-3000:]
