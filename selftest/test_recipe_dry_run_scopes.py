"""docs/DEVELOPING.md's "Adding a check" for the other three scopes (selftest/test_recipe_dry_run.py
has node, rank and pair; a module of its own so that xdist runs the two beside each other): a
per-GPU PLAT check (every GPU's power management on auto), a PLAT check judged across the rack
(vm.swappiness the same on every node) and a per-server SRV check (a chat answer has content), each
followed literally in a throw-away copy of the checkout with its fault and nothing else by hand,
then proven as that module proves its own: 4 files edited + 1 regenerated, PASSED on every item of
the healthy sim, FAILED on exactly the faulted GPU, node or server with the row's diagnosis, and its
derived fault-matrix case proven. The real checkout is only read."""
from __future__ import annotations

import pytest

from .harness import REPO
from .test_recipe_dry_run import FAULT_IMPORT, Proof, _follow, _prove

# A bound, not a speed: as selftest/test_recipe_dry_run.py's.
pytestmark = [pytest.mark.suite, pytest.mark.timeout(1800)]


# --- the "rack" PLAT check: one item per node, judged across the rack -----------------------------
RACK_ROW_ID = "PLAT-DRYRUN-SWAP"
RACK_FAULT = "dryrun-swappiness-differs"
RACK_TARGET = "node3"

RACK_ROW = '''
[[row]]
id = "PLAT-DRYRUN-SWAP"
title = "vm.swappiness the same on every node"
markers = ["platform"]
scope = "per node, judged across the rack"
observe = "/proc/sys/vm/swappiness on every node"
healthy = "one value on every node"
signatures = ["vm.swappiness = 60 on one node, 10 on the others"]
meaning = "one node was set up apart from the others: it pages the engine's memory out under pressure"
action = "sysctl -w vm.swappiness=<the rack's value> on that node (and in /etc/sysctl.d/)"
action_class = "re-run"
anchor = "launch"
passes_on = "/proc/sys/vm/swappiness read as a number on every node, the node's the rack's majority"
'''

RACK_PROBE = '''"""vm.swappiness as the kernel prints it (/proc/sys/vm/swappiness: a number and a newline)."""
from __future__ import annotations

from ..errors import CouldNotObserve, UnrecognisedOutput
from .target import On

SWAPPINESS = "/proc/sys/vm/swappiness"


def swappiness(on: On) -> int:
    text = on.host.read(SWAPPINESS)
    if text is None:
        raise CouldNotObserve(f"{on.node}: {SWAPPINESS} does not exist")
    if not text.strip().isdecimal():
        raise UnrecognisedOutput(f"node {on.node}: {SWAPPINESS} is not a number: {text[:80]!r}")
    return int(text)
'''

RACK_JUDGE_IMPORT = "from ..probes import swap\n"
RACK_JUDGE = '''

# --- PLAT-DRYRUN-SWAP -------------------------------------------------------------------------
def swappiness_agrees(a: Across[int], rack: Rack, where: str) -> list[str]:
    most = Counter(a.facts.values()).most_common(1)[0][0]
    return [] if a.mine == most else [f"vm.swappiness = {a.mine} (the rack's other nodes: {most})"]


def swappiness_shown(a: Across[int], rack: Rack) -> list[Shown]:
    return [Shown(swap.SWAPPINESS, "\\n".join(f"{n}: {v}" for n, v in sorted(a.facts.items())))]


declare(across("PLAT-DRYRUN-SWAP", probe=swap.swappiness, judge=swappiness_agrees, shows=swappiness_shown))
'''

RACK_FAULT_DECL = '''

declare(Fault("dryrun-swappiness-differs", "PLAT-DRYRUN-SWAP", "one node left at the distro's vm.swappiness",
              target="node", default="node3",
              files=(NodeFile("/proc/sys/vm/swappiness", healthy="10\\n", faulted="60\\n"),)))
'''
RACK_HAND_EDITED = {"rackgate/catalogue/plat.toml", "rackgate/probes/swap.py", "rackgate/gates/plat.py",
                    "rackgate/sim/faults/plat.py"}


def test_adding_a_check_judged_across_the_rack_fails_exactly_the_node_apart(tmp_path):
    copy, env = _follow(tmp_path, "plat", "plat", RACK_ROW, ("rackgate/probes/swap.py", RACK_PROBE),
                        (RACK_JUDGE_IMPORT, RACK_JUDGE), (FAULT_IMPORT, RACK_FAULT_DECL))
    _prove(copy, env, tmp_path, Proof(RACK_ROW_ID, RACK_HAND_EDITED, RACK_ROW_ID, RACK_FAULT, (RACK_TARGET,), 4,
                                      "platform", (RACK_ROW_ID, "vm.swappiness = 60 (the rack's other nodes: 10)")))
    assert not (REPO / "rackgate/probes/swap.py").exists()


# --- the per-GPU PLAT check -----------------------------------------------------------------------
GPU_ROW_ID = "PLAT-DRYRUN-DPM"
GPU_FAULT = "dryrun-dpm-manual"
GPU_TARGET = "node2-card1"

GPU_ROW = '''
[[row]]
id = "PLAT-DRYRUN-DPM"
title = "every GPU's power management on auto"
markers = ["platform"]
scope = "per GPU"
observe = "/sys/class/drm/cardN/device/power_dpm_force_performance_level"
healthy = "auto"
signatures = ["manual"]
meaning = "someone pinned the GPU's clocks by hand: it does not boost under load"
action = "echo auto > /sys/class/drm/cardN/device/power_dpm_force_performance_level"
action_class = "re-run"
anchor = "launch"
passes_on = "the GPU's power_dpm_force_performance_level read: auto"
'''

GPU_PROBE = '''"""A GPU's power management level, as amdgpu prints it (one word and a newline)."""
from __future__ import annotations

from ..errors import CouldNotObserve
from .target import On


def level(on: On) -> str:
    assert on.card is not None, "a per-GPU check's item has its card"
    path = f"/sys/class/drm/card{on.card.card}/device/power_dpm_force_performance_level"
    text = on.host.read(path)
    if text is None or not text.strip():
        raise CouldNotObserve(f"{on.where}: {path} does not exist or is empty")
    return text.strip()
'''

GPU_JUDGE_IMPORT = "from ..probes import dpm\n"
GPU_JUDGE = '''

# --- PLAT-DRYRUN-DPM --------------------------------------------------------------------------
def dpm_auto(level: str, rack: Rack, where: str) -> list[str]:
    return [] if level == "auto" else [f"power_dpm_force_performance_level = {level} (want auto)"]


def dpm_shown(level: str, rack: Rack) -> list[Shown]:
    return [Shown("power_dpm_force_performance_level", level)]


declare(Check("PLAT-DRYRUN-DPM", "gpu", probe=dpm.level, judge=dpm_auto, shows=dpm_shown))
'''

GPU_FAULT_DECL = '''

declare(Fault("dryrun-dpm-manual", "PLAT-DRYRUN-DPM", "one GPU's clocks pinned by hand (manual)",
              target="gpu", default="node2:1",
              files=tuple(NodeFile(f"/sys/devices/pci0000:00/{port}/{bdf}/power_dpm_force_performance_level",
                                   healthy="auto\\n", faulted="manual\\n" if bdf == "0000:15:00.0" else "auto\\n")
                          for port, bdf in (("0000:00:01.1", "0000:05:00.0"), ("0000:00:02.1", "0000:15:00.0"),
                                            ("0000:00:03.1", "0000:65:00.0"), ("0000:00:04.1", "0000:75:00.0")))))
'''
GPU_HAND_EDITED = {"rackgate/catalogue/plat.toml", "rackgate/probes/dpm.py", "rackgate/gates/plat.py",
                   "rackgate/sim/faults/plat.py"}


def test_adding_a_per_gpu_check_fails_exactly_its_gpu(tmp_path):
    copy, env = _follow(tmp_path, "plat", "plat", GPU_ROW, ("rackgate/probes/dpm.py", GPU_PROBE),
                        (GPU_JUDGE_IMPORT, GPU_JUDGE), (FAULT_IMPORT, GPU_FAULT_DECL))
    _prove(copy, env, tmp_path, Proof(GPU_ROW_ID, GPU_HAND_EDITED, GPU_ROW_ID, GPU_FAULT, (GPU_TARGET,), 16,
                                      "platform", (GPU_ROW_ID, "power_dpm_force_performance_level = manual (want auto)")))
    assert not (REPO / "rackgate/probes/dpm.py").exists()


# --- the "server" SRV check: the one endpoint's item ----------------------------------------------
SERVER_ROW_ID = "SRV-DRYRUN-CHAT"
SERVER_FAULT = "dryrun-chat-no-content"

SERVER_ROW = '''
[[row]]
id = "SRV-DRYRUN-CHAT"
order = 27
needs = ["SRV-MODELS"]
title = "a chat answer has content"
markers = ["serving"]
scope = "server"
observe = "one chat completion routed to every DP rank, with room for the reasoning and the answer"
healthy = "every answer's content has text"
signatures = ["HTTP 200, finish_reason stop, content empty"]
meaning = "the server answers chat requests with nothing: its chat template or reasoning parser is broken"
action = "read the server's log for the chat template; restart the server"
action_class = "re-run"
anchor = "launch"
passes_on = "a chat answer with content from every DP rank"
'''

SERVER_PROBE = '''"""One chat completion from every DP rank, with room to reason and answer (probes/served.py each_rank)."""
from __future__ import annotations

from .served import Answer, Server, each_rank


def answers(s: Server) -> dict[int, Answer]:
    return each_rank(s, "The capital of France is", 4096, chat=True)
'''

SERVER_JUDGE_IMPORT = "from ..probes import chat_text\n"
SERVER_JUDGE = '''

# --- SRV-DRYRUN-CHAT --------------------------------------------------------------------------
def chat_has_content(answers: dict[int, served.Answer], rack: Rack, where: str) -> list[str]:
    hung = [a.hung for a in answers.values() if a.hung]
    if hung:
        return hung[:1]
    empty = sorted(r for r, a in answers.items() if not a.error and not a.text.strip())
    return [f"{len(empty)} of {len(answers)} DP ranks answered with no content"] if empty else []


def chat_shown(answers: dict[int, served.Answer], rack: Rack) -> list[Shown]:
    return [Shown("chat content by rank", "\\n".join(f"dp{r}: {a.text!r}" for r, a in sorted(answers.items())))]


declare(Check("SRV-DRYRUN-CHAT", "server", probe=chat_text.answers, judge=chat_has_content, shows=chat_shown))
'''

SERVER_FAULT_DECL = '''

declare(Fault("dryrun-chat-no-content", "SRV-DRYRUN-CHAT", "every chat answer comes back with no content",
              target="server", behaviours=("empty-content",)))
'''
SERVER_HAND_EDITED = {"rackgate/catalogue/srv.toml", "rackgate/probes/chat_text.py", "rackgate/gates/srv.py",
                      "rackgate/sim/faults/srv.py"}


def test_adding_a_server_check_fails_its_one_item(tmp_path):
    copy, env = _follow(tmp_path, "srv", "srv", SERVER_ROW, ("rackgate/probes/chat_text.py", SERVER_PROBE),
                        (SERVER_JUDGE_IMPORT, SERVER_JUDGE), ("", SERVER_FAULT_DECL))
    _prove(copy, env, tmp_path, Proof(SERVER_ROW_ID, SERVER_HAND_EDITED, SERVER_ROW_ID, SERVER_FAULT, ("server",), 1,
                                      "serving", (f"{SERVER_ROW_ID} [http", "16 of 16 DP ranks answered with no content")))
    assert not (REPO / "rackgate/probes/chat_text.py").exists()
