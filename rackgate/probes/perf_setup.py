"""perf_setup's report and the node's boot time: was the tuning applied for *this* boot?

perf_setup_BPC21.sh (AMD-internal) writes /opt/amd-apps/perf_setup_BPC21_report_*.log. The
script is not public; the runbook quotes the lines this probe reads, and nothing else is
assumed about the report:

    D — MTYPE=RW, XNACK=disabled          the driver-load mode it applied (menu D)
    Perf steps: 8 passed, 0 failed        the tuning steps
    Result: [PARTIAL]                     PARTIAL is fine when only the TBP read failed

A tray is tuned for this boot only if the newest report is newer than `uptime -s`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..access import NodeAccess
from ..errors import CouldNotObserve, UnrecognisedOutput
from .modules import amdgpu_params
from .target import On

_STEPS = re.compile(r"Perf steps:\s*(\d+)\s+passed,\s*(\d+)\s+failed")
_RESULT = re.compile(r"Result:\s*\[\s*([A-Za-z_]+)\s*\]")
# "D — MTYPE=RW, XNACK=disabled" (an em dash in the report; accept -, – too)
_MODE = re.compile(r"(?<![A-Za-z])([A-H])\s+[—–-]+\s+MTYPE=([A-Za-z_]+),\s*XNACK=([A-Za-z_]+)")


@dataclass(frozen=True)
class PerfReport:
    steps_passed: int | None
    steps_failed: int | None
    steps_line: str | None
    result: str | None      # PASS / PARTIAL / FAIL as printed, upper-cased
    mode: str | None        # the menu letter, e.g. "D"
    mode_line: str | None


def parse_report(text: str) -> PerfReport:
    """A perf_setup report (or its tail) -> the summary it states. The last occurrence wins:
    a report can hold an earlier aborted attempt above the final summary."""
    passed = failed = result = mode = None
    steps_line = mode_line = None
    for line in text.splitlines():
        if m := _STEPS.search(line):
            passed, failed, steps_line = int(m.group(1)), int(m.group(2)), line.strip()
        if m := _RESULT.search(line):
            result = m.group(1).upper()
        if m := _MODE.search(line):
            mode, mode_line = m.group(1), line.strip()
    return PerfReport(passed, failed, steps_line, result, mode, mode_line)


@dataclass(frozen=True)
class ReportFile:
    path: str
    mtime: int  # seconds since the epoch


def parse_stat_lines(text: str) -> list[ReportFile]:
    """`stat -c '%Y %n'` lines -> files, newest first."""
    out = []
    for line in text.splitlines():
        mtime, _, path = line.strip().partition(" ")
        if mtime.isdecimal() and path:
            out.append(ReportFile(path, int(mtime)))
    return sorted(out, key=lambda f: f.mtime, reverse=True)


@dataclass(frozen=True)
class Boot:
    since: str   # `uptime -s` as printed (node-local time)
    epoch: int   # the same instant in seconds since the epoch, converted on the node


class BootParseError(CouldNotObserve, ValueError):
    """`uptime -s` / `date +%s` printed something else (could not observe)."""


def parse_boot(text: str) -> Boot:
    """Two lines: `uptime -s`, then `date -d "$(uptime -s)" +%s` (converted on the node, so
    its own time zone and DST rules apply)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2 or not re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", lines[0], re.ASCII) \
            or not re.fullmatch(r"-?\d{1,20}", lines[1], re.ASCII):
        raise BootParseError(f"unexpected `uptime -s` output: {text.strip()[:120]!r}")
    return Boot(lines[0], int(lines[1]))


@dataclass(frozen=True)
class TuningFacts:
    boot: Boot
    report: ReportFile | None   # the newest report, None when there is none
    parsed: PerfReport | None
    tail: str                   # the report's last lines, for the evidence


def boot(host: NodeAccess) -> Boot:
    res = host.shell('b=$(uptime -s) && echo "$b" && date -d "$b" +%s', timeout=30)
    if not res.ok:
        raise CouldNotObserve(f"{host.name}: `uptime -s` failed (rc={res.rc}): {res.stderr.strip()[:200]}")
    try:
        return parse_boot(res.stdout)
    except ValueError as e:
        raise CouldNotObserve(f"{host.name}: {e}") from None


def tuning(host: NodeAccess, report_glob: str, tail_lines: int = 64) -> TuningFacts:
    b = boot(host)
    stamped = host.stat(host.glob(report_glob), "%Y")
    files = parse_stat_lines("".join(f"{v} {p}\n" for p, v in stamped.items() if v))
    if not files:
        return TuningFacts(b, None, None, "")
    newest = files[0]
    tail = host.run(["tail", "-n", str(tail_lines), host.path(newest.path)], timeout=30)
    if not tail.ok:
        raise CouldNotObserve(f"{host.name}: cannot read {newest.path}: {tail.stderr.strip()[:200]}")
    tail.require(tool="tail")
    rep = parse_report(tail.stdout)
    if rep.steps_line is None and rep.result is None and rep.mode_line is None:
        raise UnrecognisedOutput(f"node {host.name}: {newest.path} does not read as a perf_setup report "
                                 f"(no steps, result or mode line): {tail.came_back()}")
    return TuningFacts(b, newest, rep, tail.stdout)


@dataclass(frozen=True)
class Tuned:
    """PLAT-TUNED's facts: the boot and the newest report, and the loaded mode-D parameters."""
    tuning: TuningFacts
    params: dict[str, str | None]


def tuned(on: On) -> Tuned:
    p = on.rack.platform
    return Tuned(tuning(on.host, p.perf_report_glob), amdgpu_params(on.host, tuple(p.perf_mode_d_params)))
