"""docs/DEVELOPING.md's "Adding a check", followed literally in a throw-away copy of the checkout,
for three scopes (the other three: selftest/test_recipe_dry_run_scopes.py): a per-node PLAT check of
a kernel setting the sim does not show yet (kernel.numa_balancing, judged 0), a per-rank SRV check
(every DP rank answers a completion with text) and a per-pair FAB check (the data-plane NIC's MTU
the same on both nodes of each ubench07 pair), each with its fault and nothing else by hand. Each
counts the hand-edited files (git status), runs the check on the healthy sim (PASSED on every node /
rank / pair) and under its fault (FAILED on the faulted node / rank only, or on the faulted node's
pairs only, with the row's diagnosis), proves the fault-matrix case derived for it, and throws the
copy away. The real checkout is only read."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from .harness import REPO, SUITE_PLUGINS, parse_junit, user_env

# A bound, not a speed: each dry run is a checkout copy, a healthy run and the matrix self-test (each
# step bounded by STEP_TIMEOUT_S); the suite's 300 s a test ended the per-pair one at load 59.
pytestmark = [pytest.mark.suite, pytest.mark.timeout(1800)]

ROW_ID = "PLAT-DRYRUN-NUMA"
ITEM = "PLAT-DRYRUN-NUMA"
FAULT = "dryrun-numa-balancing-on"
TARGET = "node2"
STEP_TIMEOUT_S = 600  # each subprocess below is bounded; none is timed

# Step 1, the row (rackgate/catalogue/plat.toml).
ROW = '''
[[row]]
id = "PLAT-DRYRUN-NUMA"
title = "automatic NUMA balancing off"
markers = ["platform"]
scope = "per node"
observe = "/proc/sys/kernel/numa_balancing"
healthy = "0"
signatures = ["kernel.numa_balancing = 1"]
meaning = "the kernel migrates the engine's pages between NUMA nodes while it serves: latency spikes"
action = "sysctl -w kernel.numa_balancing=0 (and in /etc/sysctl.d/ for the next boot)"
action_class = "re-run"
anchor = "launch"
passes_on = "/proc/sys/kernel/numa_balancing read as a number: 0"
'''

# Step 2, the probe (a new file: rackgate/probes/<thing>.py).
PROBE = '''"""Kernel settings under /proc/sys, as the kernel prints them (one number and a newline)."""
from __future__ import annotations

from ..errors import CouldNotObserve, UnrecognisedOutput
from .target import On

NUMA_BALANCING = "/proc/sys/kernel/numa_balancing"


def numa_balancing(on: On) -> int:
    text = on.host.read(NUMA_BALANCING)
    if text is None:
        raise CouldNotObserve(f"{on.node}: {NUMA_BALANCING} does not exist")
    if not text.strip().isdecimal():
        raise UnrecognisedOutput(f"node {on.node}: {NUMA_BALANCING} is not a number: {text[:80]!r}")
    return int(text)
'''

# Step 3, the judge and the declaration (rackgate/gates/plat.py): the import, then the code.
JUDGE_IMPORT = "from ..probes import sysctl\n"
JUDGE = '''

# --- PLAT-DRYRUN-NUMA -------------------------------------------------------------------------
def numa_balancing(value: int, rack: Rack, where: str) -> list[str]:
    return [] if value == 0 else [f"kernel.numa_balancing = {value} (want 0)"]


def numa_balancing_shown(value: int, rack: Rack) -> list[Shown]:
    return [Shown(sysctl.NUMA_BALANCING, f"{value}")]


declare(Check("PLAT-DRYRUN-NUMA", "node", probe=sysctl.numa_balancing, judge=numa_balancing,
              shows=numa_balancing_shown))
'''

# Step 4, the sim fault (rackgate/sim/faults/plat.py), the file's real path and its healthy value with it.
FAULT_IMPORT = "from . import Fault, NodeFile, declare\n"
FAULT_DECL = '''

declare(Fault("dryrun-numa-balancing-on", "PLAT-DRYRUN-NUMA", "automatic NUMA balancing left on (the distro default)",
              target="node", default="node2",
              files=(NodeFile("/proc/sys/kernel/numa_balancing", healthy="0\\n", faulted="1\\n"),)))
'''

HAND_EDITED = {"rackgate/catalogue/plat.toml", "rackgate/probes/sysctl.py", "rackgate/gates/plat.py",
               "rackgate/sim/faults/plat.py"}
REGENERATED = {"docs/catalogue.md"}


def _insert_import(path: Path, line: str) -> None:
    """Add an import line after the module's last relative import (where a person would put it)."""
    lines = path.read_text().splitlines(keepends=True)
    last = max(i for i, text in enumerate(lines) if re.match(r"from \.\S* import ", text))
    lines.insert(last + 1, line)
    path.write_text("".join(lines))


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(cmd[:6])} ... did not finish within {STEP_TIMEOUT_S}s")


def _copy_checkout(dst: Path) -> None:
    """The checkout's files as they are now (tracked and new, not ignored), committed in a fresh
    repository of their own, so git status there shows exactly what the recipe changes."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True, timeout=60).stdout
    for rel in filter(None, listed.split("\0")):
        src = REPO / rel
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)
    git = ["git", "-c", "user.name=dry run", "-c", "user.email=dry-run@localhost", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the checkout before the recipe"]):
        subprocess.run(git + cmd, cwd=dst, check=True, capture_output=True, timeout=120)


def _changed(copy: Path) -> set[str]:
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=copy, capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return {line[3:] for line in out.splitlines() if line.strip()}


def _suite(copy: Path, env: dict[str, str], out: Path, *args: str) -> dict:
    junit = out / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *SUITE_PLUGINS, "-q", "-p", "no:xdist",
           f"--junitxml={junit}", f"--alluredir={out / 'allure'}", f"--verdict-file={out / 'verdict.json'}",
           f"--baseline={out / 'no-baseline.json'}", *args]
    proc = _run(cmd, copy, env)
    assert junit.exists(), proc.stdout[-3000:] + proc.stderr[-2000:]
    return {"outcomes": parse_junit(junit), "stdout": proc.stdout}


@dataclass(frozen=True)
class Proof:
    """What following the recipe must give: the row, the files edited by hand, the check's items,
    its fault, the one item it fails, how many items the sim rack has, the row's first marker, and
    what the failure must say."""
    row: str
    hand_edited: set[str]
    item: str
    fault: str
    targets: tuple[str, ...]  # the items it fails (a node's, a rank's, or a node's pairs)
    items: int
    select: str
    says: tuple[str, ...]


def _prove(copy: Path, env: dict[str, str], tmp_path: Path, p: Proof) -> None:
    """After the recipe's steps: the files touched, the check healthy (PASSED on every item) and
    faulted (FAILED on exactly its item, with the row's diagnosis), its derived matrix case proven
    by the matrix's own self-test; then the copy is thrown away and the real checkout is untouched."""
    page = _run([sys.executable, "-m", "rackgate.report.catalogue_page"], copy, env)
    assert page.returncode == 0, page.stdout + page.stderr
    changed = _changed(copy)
    assert changed == p.hand_edited | REGENERATED, changed
    assert len(changed - REGENERATED) <= 4
    assert p.row in (copy / "docs/catalogue.md").read_text()

    (tmp_path / "healthy").mkdir()
    healthy = _suite(copy, env, tmp_path / "healthy", p.item)
    got = {k: o.status for k, o in healthy["outcomes"].items()}
    assert got and set(got.values()) == {"passed"}, healthy["stdout"][-3000:]
    assert len(got) == p.items, got

    # the fault-matrix case: derived, not written; the matrix's own self-test proves it (its fault
    # fails exactly its items, with the row's diagnosis), and its run is the faulted run read below
    listed = _run([sys.executable, "-m", "rackgate.faultmatrix"], copy, env)
    assert listed.returncode == 0, listed.stderr[-2000:]
    case = next((c for c in json.loads(listed.stdout) if c["fault"] == p.fault), None)
    bad = [f"{p.item}::{t}" for t in p.targets]
    assert case == {"fault": p.fault, "row": p.row, "select": p.select, "paths": [p.item],
                    "fail": bad, "source": "derived"}, case
    kept = tmp_path / "matrix"
    kept.mkdir()
    selftest_env = {**{k: v for k, v in env.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"},
                    "RACKGATE_KEEP_MATRIX": "1", "TMPDIR": str(kept)}
    matrix = _run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "selftest/test_fault_matrix.py",
                   "-k", f"valid or every_sim_fault or (matrix and {p.fault})"], copy, selftest_env)
    assert matrix.returncode == 0 and "3 passed" in matrix.stdout, matrix.stdout[-3000:] + matrix.stderr[-2000:]

    # the faulted run is the matrix's (one suite run, not two): its own run, or the run it shared
    faulted = _matrix_outcomes(kept, p)
    got = {k: o.status for k, o in faulted.items()}
    assert {k for k, s in got.items() if s != "passed"} == set(bad), got
    for b in bad:
        assert got[b] == "failed", faulted[b].message
        msg = faulted[b].message
        assert all(said.format(item=b.rpartition("::")[2]) in msg for said in p.says), msg

    # thrown away: the copy goes with tmp_path; the real checkout was never written
    shutil.rmtree(copy)
    assert p.row not in (REPO / next(f for f in p.hand_edited if f.endswith(".toml"))).read_text()


def _matrix_outcomes(kept: Path, p: Proof) -> dict:
    """The item's outcomes in the run the matrix judged the case on (RACKGATE_KEEP_MATRIX kept it
    under kept): the case's own run (<case>/run), and no other -- the matrix plans only the cases a
    session runs, so a `-k` of one case shares its run with no fault nobody asked about."""
    made = sorted(d.name for d in kept.glob("rackgate-matrix-*/*") if d.is_dir())
    assert made == [p.fault], f"the matrix's runs for -k {p.fault}: {made}"
    runs = sorted(kept.glob(f"rackgate-matrix-*/{p.fault}/run/junit.xml"))
    assert len(runs) == 1, f"the matrix's run of {p.fault}: {runs}"
    return {k: o for k, o in parse_junit(runs[0]).items() if k.startswith(f"{p.item}::")}


def _follow(tmp_path: Path, area: str, gate: str, row: str, probe: tuple[str, str], judge: tuple[str, str],
            fault: tuple[str, str]) -> tuple[Path, dict[str, str]]:
    """The recipe's steps 1-4 in a fresh copy of the checkout: the row appended to the area's
    catalogue file, the probe a new file, the judge with its declaration (an import, then the code)
    appended to rackgate/gates/<gate>.py, the fault to the area's sim faults (its import, when it
    needs one). Returns the copy and the environment to run it."""
    copy = tmp_path / "checkout"
    _copy_checkout(copy)
    env = {**user_env(), "PYTHONPATH": str(copy), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    with (copy / f"rackgate/catalogue/{area}.toml").open("a") as f:
        f.write(row)
    (copy / probe[0]).write_text(probe[1])
    for path, (imp, code) in ((f"rackgate/gates/{gate}.py", judge), (f"rackgate/sim/faults/{area}.py", fault)):
        if imp:
            _insert_import(copy / path, imp)
        (copy / path).write_text((copy / path).read_text() + code)
    return copy, env


def test_adding_a_check_touches_four_files_and_works(tmp_path):
    copy, env = _follow(tmp_path, "plat", "plat", ROW, ("rackgate/probes/sysctl.py", PROBE), (JUDGE_IMPORT, JUDGE),
                        (FAULT_IMPORT, FAULT_DECL))
    _prove(copy, env, tmp_path, Proof(ROW_ID, HAND_EDITED, ITEM, FAULT, (TARGET,), 4, "platform",
                                      (ROW_ID, "kernel.numa_balancing = 1 (want 0)")))
    assert not (REPO / "rackgate/probes/sysctl.py").exists()


# --- the per-rank SRV check ----------------------------------------------------------------------
SRV_ROW_ID = "SRV-DRYRUN-TEXT"
SRV_ITEM = "SRV-DRYRUN-TEXT"
SRV_FAULT = "dryrun-rank-no-text"
SRV_TARGET = "node3-dp9"  # the fault's pick (1, 2) of node3's ranks dp8..dp11

# Step 1, the row (rackgate/catalogue/srv.toml).
SRV_ROW = '''
[[row]]
id = "SRV-DRYRUN-TEXT"
order = 27
needs = ["SRV-MODELS"]
title = "every DP rank answers a completion with text"
markers = ["serving"]
scope = "rank"
observe = "one completion routed to every DP rank (ATOM's data_parallel_rank hint)"
healthy = "every rank's completion has text"
signatures = ["HTTP 200 with an empty completion from one rank"]
meaning = "one rank's engine returns nothing: its sampler or detokenizer is broken"
action = "read that rank's log; restart the server"
action_class = "re-run"
anchor = "launch"
passes_on = "a completion with text from every DP rank"
'''

# Step 2, the probe (a new file: rackgate/probes/<thing>.py), over the per-rank mechanism.
SRV_PROBE = '''"""One completion from every DP rank (rackgate/probes/served.py each_rank)."""
from __future__ import annotations

from .served import Answer, Server, each_rank


def capital(s: Server) -> dict[int, Answer]:
    return each_rank(s, "The capital of France is", 8)
'''

# Step 3, the judge and the declaration (rackgate/gates/srv.py): the import, then the code.
SRV_JUDGE_IMPORT = "from ..probes import rank_text\n"
SRV_JUDGE = '''

# --- SRV-DRYRUN-TEXT --------------------------------------------------------------------------
def has_text(r: Ranked[served.Answer], rack: Rack, where: str) -> list[str]:
    a = r.mine
    if a.hung:
        return [a.hung]
    if a.error:
        raise CouldNotObserve(f"the request routed to dp{a.rank} got no answer: {a.error}")
    return [] if a.text.strip() else [f"dp{a.rank} answered with no text (finish_reason {a.finish})"]


def text_shown(r: Ranked[served.Answer], rack: Rack) -> list[Shown]:
    a = r.ranks.get(r.rank)
    return [Shown(f"completion routed to dp{r.rank}", repr(a.text) if a else "(nothing came back)")]


declare(ranked("SRV-DRYRUN-TEXT", probe=rank_text.capital, judge=has_text, shows=text_shown))
'''

# Step 4, the sim fault (rackgate/sim/faults/srv.py): a rank behaviour the sim server has.
SRV_FAULT_DECL = '''

declare(Fault("dryrun-rank-no-text", "SRV-DRYRUN-TEXT", "a single DP rank answers HTTP 200 with no content",
              target="node", default="node3", rank=RankFault("empty-ranks", (1, 2))))
'''

SRV_HAND_EDITED = {"rackgate/catalogue/srv.toml", "rackgate/probes/rank_text.py", "rackgate/gates/srv.py",
                   "rackgate/sim/faults/srv.py"}


def test_adding_a_per_rank_check_touches_four_files_and_fails_exactly_its_rank(tmp_path):
    copy, env = _follow(tmp_path, "srv", "srv", SRV_ROW, ("rackgate/probes/rank_text.py", SRV_PROBE),
                        (SRV_JUDGE_IMPORT, SRV_JUDGE), ("", SRV_FAULT_DECL))
    _prove(copy, env, tmp_path, Proof(SRV_ROW_ID, SRV_HAND_EDITED, SRV_ITEM, SRV_FAULT, (SRV_TARGET,), 16, "serving",
                                      (f"{SRV_ROW_ID} [node3/dp9]", "dp9 answered with no text")))
    assert not (REPO / "rackgate/probes/rank_text.py").exists()


# --- the per-pair FAB check -----------------------------------------------------------------------
PAIR_ROW_ID = "FAB-DRYRUN-MTU"
PAIR_ITEM = "FAB-DRYRUN-MTU"
PAIR_FAULT = "dryrun-mtu-mismatch"
PAIR_TARGET = "node4"
# the sim's ubench07 pairs (triangles of node1..node4, rackgate/fabric/pairs.py); node4's are two of them
PAIRS = ("node1-node2", "node2-node3", "node3-node1", "node4-node1", "node2-node4")
FAULTED_PAIRS = ("node4-node1", "node2-node4")

PAIR_ROW = '''
[[row]]
id = "FAB-DRYRUN-MTU"
title = "the data-plane NIC's MTU the same on both nodes of each pair"
markers = ["fabric"]
scope = "pair"
observe = "/sys/class/net/<serving.lint.data_plane_nic>/mtu on both nodes of the pair"
healthy = "the same number on both nodes"
signatures = ["MTU 1500 on one node, 9000 on its peer"]
meaning = "a frame larger than the smaller MTU is dropped on its way in: large transfers between the two trays stall"
action = "set the same MTU on the data-plane NIC of every node (ip link set dev <nic> mtu 9000, and in the network config)"
action_class = "re-run"
anchor = "validate-the-fabric-first--ubench07"
passes_on = "both nodes' /sys/class/net/<nic>/mtu read as numbers, equal"
'''

PAIR_PROBE = '''"""A network interface's MTU, as the kernel prints it (/sys/class/net/<nic>/mtu: a number, a newline)."""
from __future__ import annotations

from ..errors import CouldNotObserve, UnrecognisedOutput
from .target import On, OnPair


def mtu(on: On, nic: str) -> int:
    path = f"/sys/class/net/{nic}/mtu"
    text = on.host.read(path)
    if text is None:
        raise CouldNotObserve(f"{on.node}: {path} does not exist (is serving.lint.data_plane_nic the data-plane NIC?)")
    if not text.strip().isdecimal():
        raise UnrecognisedOutput(f"node {on.node}: {path} is not a number: {text[:80]!r}")
    return int(text)


def pair_mtu(on: OnPair) -> dict[str, int]:
    """Both nodes' MTU of the data-plane NIC (serving.lint.data_plane_nic), by node."""
    nic = on.rack.serving.lint.data_plane_nic
    return {on.a.node: mtu(on.a, nic), on.b.node: mtu(on.b, nic)}
'''

PAIR_JUDGE_IMPORT = "from ..probes import netmtu\n"
PAIR_JUDGE = '''

# --- FAB-DRYRUN-MTU -------------------------------------------------------------------------
def same_mtu(mtus: dict[str, int], rack: Rack, where: str) -> list[str]:
    if len(set(mtus.values())) == 1:
        return []
    return ["data-plane MTU differs across the pair: " + ", ".join(f"{n} {m}" for n, m in mtus.items())]


def mtu_shown(mtus: dict[str, int], rack: Rack) -> list[Shown]:
    return [Shown(f"/sys/class/net/{rack.serving.lint.data_plane_nic}/mtu", "\\n".join(f"{n}: {m}" for n, m in mtus.items()))]


declare(per_pair("FAB-DRYRUN-MTU", probe=netmtu.pair_mtu, judge=same_mtu, shows=mtu_shown))
'''

PAIR_FAULT_IMPORT = "from . import Fault, NodeFile, declare\n"
PAIR_FAULT_DECL = '''

declare(Fault("dryrun-mtu-mismatch", "FAB-DRYRUN-MTU", "one node's data-plane NIC left at the default MTU 1500",
              target="node", default="node4",
              files=(NodeFile("/sys/class/net/enp1s0f1/mtu", healthy="9000\\n", faulted="1500\\n"),)))
'''
PAIR_HAND_EDITED = {"rackgate/catalogue/fab.toml", "rackgate/probes/netmtu.py", "rackgate/gates/fabric.py",
                    "rackgate/sim/faults/fab.py"}


def test_adding_a_per_pair_check_touches_four_files_and_fails_exactly_its_pairs(tmp_path):
    copy, env = _follow(tmp_path, "fab", "fabric", PAIR_ROW, ("rackgate/probes/netmtu.py", PAIR_PROBE),
                        (PAIR_JUDGE_IMPORT, PAIR_JUDGE), (PAIR_FAULT_IMPORT, PAIR_FAULT_DECL))

    # a bad tray fails every pair it is in: the faulted node's pairs, and no other
    _prove(copy, env, tmp_path, Proof(PAIR_ROW_ID, PAIR_HAND_EDITED, PAIR_ITEM, PAIR_FAULT, FAULTED_PAIRS, len(PAIRS),
                                      "fabric", (PAIR_ROW_ID, f"{PAIR_TARGET} 1500", "9000")))
    assert not (REPO / "rackgate/probes/netmtu.py").exists()

