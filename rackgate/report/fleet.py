"""A fleet of racks in one Allure report: merge each rack's allure-results, the rack as a label.

    python -m rackgate.report.fleet merge OUT RESULTS_DIR [RESULTS_DIR ...]
    python -m rackgate.report.render OUT -o reports/fleet-report   # then render once (docs/fleet.md)

Each rack's run (one CI job per rack file) writes its own results; its environment.properties
names the rack (`rack=`). Merging copies every file and tags each test result with the rack: its
name starts with the rack (`sim-b: PLAT-DRIVER [node1] amdgpu driver loaded and /dev/kfd
present`), its title path too (Allure 3's tree groups by it: rack, then the row's area and the
row, allure_files.by_row), a `rack` label and parameter, a parentSuite of the rack name (for a
report grouped by suites), and its historyId/testCaseId made per rack, so the
same check on two racks is two results, never one result retried. The merged
environment.properties lists every rack's entries prefixed with its name.

overview() (rackgate fleet, which knows each rack's verdict) adds what a person reads first: the
report's title names each rack's PASS / FAIL / UNKNOWN, one global error per rack that did not
pass (its findings, or what could not be observed), a global attachment with every rack's
verdict, findings and the path of its own report, and `<rack>.verdict` in the environment.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any, TypedDict

from ..verdicts import Verdict, of_runs
from . import allure_files

ENV = "environment.properties"


class RackSummary(TypedDict):
    """One rack as the overview shows it (rackgate fleet's fleet.json entry, and its report)."""
    rack: str
    verdict: str          # PASS, FAIL, UNKNOWN
    findings: list[str]   # "ROW [where] seen"
    unknown: list[str]    # "test: why"
    report: str           # its own report's index.html, relative to the merged report ("" if none)


class FleetError(ValueError):
    pass


def rack_of(results: Path) -> tuple[str, list[str]]:
    """(rack name, the environment.properties lines) of one run's results."""
    env = results / ENV
    if not env.exists():
        raise FleetError(f"{results}: no {ENV}: not a rackgate run's allure-results (its rack is unknown)")
    lines = env.read_text().splitlines()
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and key.strip() == "rack":
            return value.strip(), lines
    raise FleetError(f"{results}/{ENV} has no 'rack=' entry")


def _per_rack(value: str | None, rack: str) -> str | None:
    return None if value is None else hashlib.md5(f"{rack}:{value}".encode()).hexdigest()


def tag(result: dict[str, Any], rack: str) -> dict[str, Any]:
    labels = [lab for lab in result.get("labels", []) if lab.get("name") not in ("rack", "parentSuite")]
    result["labels"] = labels + [{"name": "rack", "value": rack}, {"name": "parentSuite", "value": rack}]
    params = [p for p in result.get("parameters", []) if p.get("name") != "rack"]
    result["parameters"] = [{"name": "rack", "value": rack}] + params
    prefix = f"{rack}: "
    for key in ("name", "fullName"):
        if key in result and not str(result[key]).startswith(prefix):
            result[key] = prefix + str(result[key])
    path = [p for p in result.get("titlePath", []) if p not in ("rackgate", "checks")]   # rackgate/checks: every check's
    result["titlePath"] = [rack, *(path[1:] if path[:1] == [rack] else path)]
    for key in ("historyId", "testCaseId"):
        if key in result:
            result[key] = _per_rack(result[key], rack)
    return result


def merge(out: Path, sources: list[Path]) -> dict[str, int]:
    """Merge runs into out; returns {rack: results merged}. Two runs of one rack name are refused
    (they would be indistinguishable in the report)."""
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    env_lines: list[str] = []
    for src in sources:
        if not src.is_dir():
            raise FleetError(f"{src}: not a directory of Allure results")
        rack, lines = rack_of(src)
        if rack in counts:
            raise FleetError(f"rack {rack!r} appears twice ({src}): give each rack file its own name")
        counts[rack] = 0
        env_lines += [f"{rack}.{ln}" for ln in lines if ln.strip() and not ln.startswith("#")]
        for f in sorted(src.iterdir()):
            if f.name == ENV or not f.is_file():
                continue
            if f.name.endswith("-result.json"):
                (out / f.name).write_text(json.dumps(tag(json.loads(f.read_text()), rack)))
                counts[rack] += 1
            elif f.name == "categories.json" and (out / f.name).exists():
                continue  # the same categories from every rack
            else:
                shutil.copyfile(f, out / f.name)
    (out / ENV).write_text("\n".join([f"racks={', '.join(counts)}", *env_lines]) + "\n")
    return counts


def title(racks: list[RackSummary]) -> str:
    """The merged report's name: the fleet's verdict, then each rack's."""
    worst = of_runs(r["verdict"] for r in racks).file
    return f"fleet {worst}: " + ", ".join(f"{r['rack']} {r['verdict']}" for r in racks)


def overview(out: Path, racks: list[RackSummary]) -> None:
    """Each rack's verdict where the merged report shows it first (module docstring)."""
    lines = []
    for r in racks:
        lines.append(f"{r['rack']}: {r['verdict']}")
        lines += [f"  finding: {f}" for f in r["findings"]] + [f"  could not observe: {u}" for u in r["unknown"]]
        lines.append(f"  its report: {r['report'] or '(none rendered)'}")
    errors = [{"message": f"{r['rack']}: {r['verdict']}" + "".join(f"; {x}" for x in (r["findings"] or r["unknown"])[:5]),
               "trace": "\n".join(r["findings"] + r["unknown"])} for r in racks if r["verdict"] != Verdict.PASSED.file]
    allure_files.write_globals(out, [("fleet: the verdict of each rack", "\n".join(lines).encode() + b"\n", "text/plain")],
                               errors=errors)
    env = out / ENV
    old = env.read_text().splitlines() if env.exists() else []
    verdicts = [f"{r['rack']}.verdict={r['verdict']}" + (f" ({'; '.join(r['findings'])})" if r["findings"] else "")
                for r in racks]
    env.write_text("\n".join([*old[:1], *verdicts, *old[1:]]) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[0] != "merge":
        print("usage: python -m rackgate.report.fleet merge OUT RESULTS_DIR [RESULTS_DIR ...]", file=sys.stderr)
        return 2
    try:
        counts = merge(Path(args[1]), [Path(a) for a in args[2:]])
    except (FleetError, OSError, json.JSONDecodeError) as e:
        print(f"rackgate fleet: {e}", file=sys.stderr)
        return 2
    print(f"merged into {args[1]}: " + ", ".join(f"{r} ({n} results)" for r, n in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
