"""Tool-failure injection, a pytest plugin of the self-tests: a runner wrapper that makes the
commands the suite sends fail.

A suite run given `-p selftest.inject --inject-plan=PLAN.json` (selftest/test_tool_failures.py)
wraps every node's runner in a FailingRunner, through the transport's runner wrappers
(rackgate.transport.wrap_runners). The plan is {"log": PATH, "fail": {NODE: {TOOL: WAY}}}:
- every command sent is logged to PATH as one JSON line {tool, node, test, way, running} (test: the
  check it was sent for, rackgate.transport.sent_for.current; running: the item pytest was running,
  PYTEST_CURRENT_TEST, "" outside one), so a healthy run (no "fail") discovers the commands;
- a command whose tool is in "fail" does not reach the node: it comes back failed in that WAY.
  A key "TOOL@CHECK" fails the tool only while that check (a test's node id without its
  parameters, e.g. `FAB-P2P`) runs, so one run can fail a
  different command in each check of a node without one failure hiding the next.

A command's tool is what runs under the wrappers the transport adds (`docker exec -i NAME`,
`timeout -k ..`, `sudo -n`, the env-exporting `sh -c`); a fixed shell script is keyed by its text
(`sh:` and its first words), so each Host helper is one tool.
"""
from __future__ import annotations

import json
import os
import threading
from typing import NotRequired, Sequence, TypedDict

from rackgate.transport import wrap_runners
from rackgate.transport.result import CommandTimeout, Result, TransportError
from rackgate.transport.runners import Runner, shown
from rackgate.transport.sent_for import current

WAYS = ("missing", "nonzero", "empty", "garbage", "cut", "timeout", "sudo", "ssh255")
_LOCK = threading.Lock()


class Plan(TypedDict):
    """The --inject-plan file (JSON): where to log, and {node: {tool or tool@check: way}}."""
    log: str
    fail: NotRequired[dict[str, dict[str, str]]]


def tool_of(cmd: Sequence[str]) -> str:
    """The tool a command runs, under the transport's own wrappers."""
    argv = list(cmd)
    while argv:
        head = os.path.basename(argv[0])
        if head == "docker" and argv[1:2] == ["exec"]:
            rest = argv[2:]
            while rest and rest[0].startswith("-"):
                rest = rest[1:] if rest[0] in ("-i", "-t", "-it") else rest[2:]
            argv = rest[1:]  # the container name
        elif head == "timeout":
            rest = argv[1:]
            while rest and rest[0].startswith("-"):
                rest = rest[2:] if rest[0] in ("-k", "-s") else rest[1:]
            argv = rest[1:]  # the duration
        elif head == "sudo":
            argv = [a for a in argv[1:] if not a.startswith("-")] if argv[1:2] == ["-n"] else argv[1:]
        elif head == "sh" and argv[1:2] == ["-c"] and len(argv) > 2 and argv[2].endswith('exec "$@"'):
            argv = argv[4:]  # with_env's exports
        elif head == "sh" and argv[1:2] == ["-c"] and len(argv) > 2:
            return "sh:" + " ".join(argv[2].split()[:4])[:48]
        else:
            return "docker " + argv[1] if head == "docker" and len(argv) > 1 else head
    return "?"


def failed(node: str, cmd: Sequence[str], tool: str, way: str, timeout: float, real: Result | None) -> Result:
    """The Result (or the exception) of `cmd` on `node` failing in `way`."""
    text = shown(cmd)
    name = tool.split(":", 1)[0] if tool.startswith("sh:") else tool.split()[0]
    if way == "missing":
        return Result(node, text, 127, "", f"sh: 1: {name}: not found\n", 0.0)
    if way == "nonzero":
        return Result(node, text, 2, "", f"{name}: error: injected failure (Input/output error)\n", 0.0)
    if way == "empty":
        return Result(node, text, 0, "", "", 0.0)
    if way == "garbage":
        return Result(node, text, 0, "\x1b[?1h\x1b=@@@ %%%% ~~~ qwxz 0xdeadbeef ~~~\n#$%^&*()\n", "", 0.0)
    if way == "cut":
        out = real.stdout if real is not None else ""
        return Result(node, text, 137, out[: len(out) // 2], "Killed\n", 0.0)
    if way == "timeout":
        raise CommandTimeout(node, text, timeout, "", "")
    if way == "sudo":
        return Result(node, text, 1, "", "sudo: a password is required\n", 0.0)
    if way == "ssh255":
        raise TransportError(node, f"unreachable over ssh ({node}): Connection to {node} closed by remote host. "
                                   f"(running `{text[:80]}`)")
    raise ValueError(f"unknown failure way {way!r} (one of {', '.join(WAYS)})")


class FailingRunner:
    """The runner below, with the plan's commands failing (and every command logged)."""

    def __init__(self, below: Runner, plan: Plan):
        self.below, self.plan = below, plan
        self.node, self.kind = below.node, below.kind
        self.fail: dict[str, str] = plan.get("fail", {}).get(below.node, {})

    def argv(self, cmd: Sequence[str], timeout: float | None = None) -> list[str]:
        return self.below.argv(cmd, timeout)

    def _log(self, tool: str, test: str, way: str | None) -> None:
        running = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
        line = json.dumps({"tool": tool, "node": self.node, "test": test, "way": way, "running": running}) + "\n"
        with _LOCK, open(self.plan["log"], "a") as f:
            f.write(line)

    def run(self, cmd: Sequence[str], timeout: float, stdin: str | None = None) -> Result:
        tool = tool_of(cmd)
        test = current()
        way = self.fail.get(f"{tool}@{test.split('[', 1)[0]}") or self.fail.get(tool)
        self._log(tool, test, way)
        if way is None:
            return self.below.run(cmd, timeout, stdin)
        real = self.below.run(cmd, timeout, stdin) if way == "cut" else None
        return failed(self.node, cmd, tool, way, timeout, real)


def pytest_addoption(parser):
    parser.addoption("--inject-plan", metavar="PLAN.json", default="",
                     help="self-tests: fail the commands the plan names, log every command sent (selftest/inject.py)")


def pytest_configure(config):
    path = config.getoption("inject_plan")
    if not path:
        return
    with open(path) as f:
        plan: Plan = json.load(f)
    config.add_cleanup(wrap_runners(lambda runner: FailingRunner(runner, plan)))
