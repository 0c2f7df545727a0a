"""docs/DEVELOPING.md's "Adding a check", followed literally in a throw-away copy of the checkout:
a per-node PLAT check of a kernel setting the sim does not show yet (kernel.numa_balancing, judged
0), and a per-pair FAB check (the data-plane NIC's MTU the same on both nodes of each ubench07
pair), each with its fault and nothing else by hand. It counts the hand-edited files (git status),
runs the check on the healthy sim (PASSED on every node / pair) and under its fault (FAILED on the
faulted node only / on the faulted node's pairs only, with the row's diagnosis), proves the
fault-matrix case derived for it, and throws the copy away. The real checkout is only read."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .harness import REPO, SUITE_PLUGINS, parse_junit, user_env

pytestmark = pytest.mark.suite

ROW_ID = "PLAT-DRYRUN-NUMA"
ITEM = "rackgate/checks/test_declared.py::test_plat_dryrun_numa"
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

# --- the per-pair FAB check -----------------------------------------------------------------------
PAIR_ROW_ID = "FAB-DRYRUN-MTU"
PAIR_ITEM = "rackgate/checks/test_declared.py::test_fab_dryrun_mtu"
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


def _follow(tmp_path: Path, area: str, gate: str, row: str, probe: tuple[str, str], judge: tuple[str, str],
            fault: tuple[str, str], hand_edited: set[str], row_id: str) -> tuple[Path, dict[str, str]]:
    """Steps 1-5 of the recipe in a fresh copy of the checkout: the row appended to the area's
    catalogue file, the probe a new file, the judge and declaration (an import, then the code)
    under the area's gate module (rackgate/gates/<gate>.py), the fault under the area's sim faults, the page regenerated;
    the copy's changed files are exactly these. Returns the copy and the environment to run it."""
    copy = tmp_path / "checkout"
    _copy_checkout(copy)
    env = {**user_env(), "PYTHONPATH": str(copy), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    with (copy / f"rackgate/catalogue/{area}.toml").open("a") as f:
        f.write(row)
    (copy / probe[0]).write_text(probe[1])
    for path, (imp, code) in ((f"rackgate/gates/{gate}.py", judge), (f"rackgate/sim/faults/{area}.py", fault)):
        _insert_import(copy / path, imp)
        (copy / path).write_text((copy / path).read_text() + code)
    page = _run([sys.executable, "-m", "rackgate.report.catalogue_page"], copy, env)
    assert page.returncode == 0, page.stdout + page.stderr
    changed = _changed(copy)
    assert changed == hand_edited | REGENERATED, changed
    assert len(changed - REGENERATED) <= 4
    assert row_id in (copy / "docs/catalogue.md").read_text()
    return copy, env


def _statuses(run: dict) -> dict[str, str]:
    return {k: o.status for k, o in run["outcomes"].items()}


def _derived_case_holds(copy: Path, env: dict[str, str], fault: str, want: dict) -> None:
    """The fault-matrix case: derived, not written; the matrix's own self-test proves it."""
    listed = _run([sys.executable, "-m", "rackgate.faultmatrix"], copy, env)
    assert listed.returncode == 0, listed.stderr[-2000:]
    case = next((c for c in json.loads(listed.stdout) if c["fault"] == fault), None)
    assert case == {"fault": fault, **want, "source": "derived"}, case
    selftest_env = {k: v for k, v in env.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    matrix = _run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "selftest/test_fault_matrix.py",
                   "-k", f"valid or every_sim_fault or (matrix and {fault})"], copy, selftest_env)
    assert matrix.returncode == 0 and "3 passed" in matrix.stdout, matrix.stdout[-3000:] + matrix.stderr[-2000:]


def test_adding_a_check_touches_four_files_and_works(tmp_path):
    copy, env = _follow(tmp_path, "plat", "plat", ROW, ("rackgate/probes/sysctl.py", PROBE), (JUDGE_IMPORT, JUDGE),
                        (FAULT_IMPORT, FAULT_DECL), HAND_EDITED, ROW_ID)

    # healthy: PASSED on every node
    (tmp_path / "healthy").mkdir()
    healthy = _suite(copy, env, tmp_path / "healthy", ITEM)
    got = _statuses(healthy)
    assert got and set(got.values()) == {"passed"}, healthy["stdout"][-3000:]
    assert len(got) == 4, got  # the sim rack's four nodes

    # under its fault: FAILED on the faulted node only, with the row's diagnosis
    (tmp_path / "faulted").mkdir()
    faulted = _suite(copy, env, tmp_path / "faulted", ITEM, "--sim-fault", FAULT)
    got = _statuses(faulted)
    assert {k for k, s in got.items() if s != "passed"} == {f"{ITEM}[{TARGET}]"}, faulted["stdout"][-3000:]
    assert got[f"{ITEM}[{TARGET}]"] == "failed", faulted["stdout"][-3000:]
    msg = faulted["outcomes"][f"{ITEM}[{TARGET}]"].message
    assert ROW_ID in msg and "kernel.numa_balancing = 1 (want 0)" in msg, msg

    _derived_case_holds(copy, env, FAULT, {"row": ROW_ID, "select": "platform", "paths": [ITEM],
                                           "fail": [f"{ITEM}[{TARGET}]"]})

    # thrown away: the copy goes with tmp_path; the real checkout was never written
    shutil.rmtree(copy)
    assert not (REPO / "rackgate/probes/sysctl.py").exists()
    assert ROW_ID not in (REPO / "rackgate/catalogue/plat.toml").read_text()


def test_adding_a_pair_check_touches_four_files_and_fails_the_faulted_node_s_pairs(tmp_path):
    copy, env = _follow(tmp_path, "fab", "fabric", PAIR_ROW, ("rackgate/probes/netmtu.py", PAIR_PROBE),
                        (PAIR_JUDGE_IMPORT, PAIR_JUDGE), (PAIR_FAULT_IMPORT, PAIR_FAULT_DECL), PAIR_HAND_EDITED,
                        PAIR_ROW_ID)

    # healthy: PASSED on every pair
    (tmp_path / "healthy").mkdir()
    healthy = _suite(copy, env, tmp_path / "healthy", PAIR_ITEM)
    assert _statuses(healthy) == {f"{PAIR_ITEM}[{p}]": "passed" for p in PAIRS}, healthy["stdout"][-3000:]

    # under its fault: FAILED on the faulted node's pairs only, with the row's diagnosis
    (tmp_path / "faulted").mkdir()
    faulted = _suite(copy, env, tmp_path / "faulted", PAIR_ITEM, "--sim-fault", PAIR_FAULT)
    assert _statuses(faulted) == {f"{PAIR_ITEM}[{p}]": "failed" if p in FAULTED_PAIRS else "passed"
                                  for p in PAIRS}, faulted["stdout"][-3000:]
    for p in FAULTED_PAIRS:
        msg = faulted["outcomes"][f"{PAIR_ITEM}[{p}]"].message
        assert PAIR_ROW_ID in msg and f"{PAIR_TARGET} 1500" in msg and "9000" in msg, msg

    # the derived case: every pair of the faulted node (a bad tray fails all its pairs)
    _derived_case_holds(copy, env, PAIR_FAULT, {"row": PAIR_ROW_ID, "select": "fabric", "paths": [PAIR_ITEM],
                                                "fail": [f"{PAIR_ITEM}[{p}]" for p in PAIRS if p in FAULTED_PAIRS]})

    shutil.rmtree(copy)
    assert not (REPO / "rackgate/probes/netmtu.py").exists()
    assert PAIR_ROW_ID not in (REPO / "rackgate/catalogue/fab.toml").read_text()
