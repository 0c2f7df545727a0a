"""The shipped data-check probe for real: gloo on CPU torch, one probe process per "node" fed on
stdin as the suite feeds it, every rank a forked process. Healthy worlds pass on every rank; a
member that never comes ends every other rank's wait within the rendezvous bound, naming it; and,
through the sim's transport (rackgate/sim/nccl/sitecustomize.py, driven by a sim node's state, the
probe knowing nothing of it), corrupted data is located on the GPU it landed on and a dropped
link ends both its ranks at the probe's bound, leaving no process behind."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rackgate.probes import datacheck
from rackgate.probes.datacheck import Pass
from rackgate.transport import ports

pytestmark = pytest.mark.suite

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def need_torch():
    pytest.importorskip("torch", reason="CPU torch is installed by scripts/setup.sh (torch==2.13.0+cpu)")


def sim_env(tmp_path, fabric: dict) -> dict:
    """A sim node's environment (its sitecustomize on PYTHONPATH, its state, the machine's torch)."""
    (tmp_path / "nodeX").mkdir()
    (tmp_path / "state.json").write_text(json.dumps({"nodes": {"nodeX": {"fabric": fabric}}}))
    return {"RACKGATE_SIM_NODE": str(tmp_path / "nodeX"), "RACKGATE_SIM_TORCH": "installed",
            "PYTHONPATH": os.pathsep.join([str(REPO / "rackgate/sim/nccl"), str(REPO)])}


def probe(members: str, nodes: list[int], env: dict | None = None, sizes: str = "2048,32768", iters: int = 3,
          join: float = 20, op: float = 4) -> tuple[Pass, float, list[subprocess.CompletedProcess]]:
    """Every listed node's probe at once; the pass they printed, the seconds it took, the runs."""
    port = ports.free_port("127.0.0.1", span=2)
    names = [f"node{i}/gpu{g}" for i, g in (m.split(":") for m in members.split(","))]
    src = datacheck.PROBE_PATH.read_text()
    t0 = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-", "--members", members, "--node", str(n), "--port", str(port),
                               "--backend", "gloo", "--sizes", sizes, "--iters", str(iters), "--join-timeout",
                               str(join), "--op-timeout", str(op), "--grace", "1"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, **(env or {})}) for n in nodes]
    for p in procs:  # every node's source first (a pipe holds it), as the suite starts every node at once
        assert p.stdin is not None
        p.stdin.write(src)
        p.stdin.close()
        p.stdin = None  # sent: communicate() reads both pipes only
    done = [subprocess.CompletedProcess(p.args, 0, *p.communicate(timeout=180)) for p in procs]
    took = time.monotonic() - t0
    p = Pass("whole", names)
    for n, d in zip(nodes, done):
        datacheck.parse(p, f"node{n}", d.stdout, d.stderr)
    return p, took, done


def test_a_healthy_world_passes_on_every_rank_each_saying_so_itself():
    p, _, done = probe("0:0,0:1,1:0,1:1", [0, 1])
    assert p.ok, (p.summary(), [d.stdout[-800:] + d.stderr[-800:] for d in done])
    assert sorted(v.rank for v in p.verdicts.values()) == [0, 1, 2, 3]
    assert all(v.iters_done == 3 for v in p.verdicts.values())


def test_a_member_that_never_comes_is_named_within_the_rendezvous_bound():
    p, _, _ = probe("0:0,0:1,1:0,1:1", [0], join=8)
    assert p.absent() == ["node1/gpu0", "node1/gpu1"] and {v.status for v in p.verdicts.values()} == {"absent"}
    assert all("did not arrive within 8s" in v.error for v in p.verdicts.values())


def test_the_sim_transport_corrupts_above_a_size_and_the_gpu_is_located(tmp_path):
    env = sim_env(tmp_path, {"corrupt": {"1": {"above": 16384, "after": 0}}})
    p, _, done = probe("0:0,0:1,0:2", [0], env=env)
    assert {v.member: v.status for v in p.verdicts.values()} == {
        "node0/gpu0": "ok", "node0/gpu1": "wrong", "node0/gpu2": "ok"}, [d.stderr[-800:] for d in done]
    wrong = p.verdicts[1].wrong
    assert {w.op for w in wrong} >= {"all_reduce", "all_gather", "reduce_scatter"}
    assert {w.size for w in wrong} == {32768}  # 2048 B arrives right
    assert all(w.first_iter == 0 and w.count > 0 and w.first_offset <= w.last_offset for w in wrong)


def test_the_sim_transport_corrupts_only_after_k_calls(tmp_path):
    env = sim_env(tmp_path, {"corrupt": {"0": {"above": 0, "after": 2}}})
    p, _, _ = probe("0:0,0:1", [0], env=env, sizes="2048", iters=4)
    assert p.verdicts[0].status == "wrong" and p.verdicts[1].status == "ok"
    assert {w.first_iter for w in p.verdicts[0].wrong} == {2}


def test_a_dropped_link_ends_both_ranks_at_the_bound_and_leaves_nothing(tmp_path):
    env = sim_env(tmp_path, {"drop_link": {"0": ["nodeX/gpu1"], "1": ["nodeX/gpu0"]}})
    p, _, done = probe("0:0,0:1,0:2", [0], env=env, op=3)
    assert {v.status for v in p.verdicts.values()} <= {"killed", "timeout", "error"} and len(p.verdicts) == 3
    assert {v.member for v in p.verdicts.values() if v.status == "killed"} == {"node0/gpu0", "node0/gpu1"}
    assert all("iteration 0" in v.at for v in p.verdicts.values() if v.status == "killed")
    pids = [json.loads(ln[len("RGDATA "):])["pid"] for d in done for ln in d.stdout.splitlines()
            if ln.startswith("RGDATA {") and '"pid"' in ln]
    assert len(pids) == 3 and not [pid for pid in pids if Path(f"/proc/{pid}").exists()]


def test_a_rank_that_ends_without_a_word_gets_a_verdict_from_the_probe(monkeypatch, capfd):
    """NCCL's watchdog ends a process whose collective timed out: the rank never prints its own
    verdict, so the probe prints one for it (where it was, its exit status) -- it is never lost."""
    from rackgate.probes import datacheck_probe

    orig = datacheck_probe.Rank.run

    def run(self):
        if self.rank == 1:
            os._exit(9)  # as an abort would: no verdict, no cleanup
        orig(self)
    monkeypatch.setattr(datacheck_probe.Rank, "run", run)
    port = ports.free_port("127.0.0.1", span=2)
    assert datacheck_probe.main(["--members", "0:0,0:1", "--node", "0", "--port", str(port), "--backend", "gloo",
                                 "--sizes", "2048", "--iters", "1", "--join-timeout", "5", "--op-timeout", "3",
                                 "--grace", "1"]) == 0
    p = Pass("whole", ["node0/gpu0", "node0/gpu1"])
    datacheck.parse(p, "node0", capfd.readouterr().out)
    assert p.verdicts[1].status == "error" and "ended (9) without a verdict" in p.verdicts[1].error
    assert p.verdicts[0].status == "absent" and p.absent() == ["node0/gpu1"]
