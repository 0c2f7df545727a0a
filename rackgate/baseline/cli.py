"""`rackgate compare OLD.json NEW.json`: the regression verdict from two recorded runs.

For CI jobs that record on one image (`pytest --record-baseline --baseline old.json`) and on the
next (`... --baseline new.json`), then compare. Prints old image -> new image, the old -> new
table and the verdict, as `pytest -m regression` does; writes one JUnit testcase and one Allure
result per fact name (the same ids as the REG-FACTS items), with the table and the picture.
Exit status: 0 every fact within tolerance, 1 a regression, 2 bad input (one line on stderr).

Tolerances: the [regression] table of --rack FILE (else the built-in defaults).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

from . import BaselineError, load
from . import compare as cmp

ITEM = "test_facts_within_tolerance"
CLASSNAME = "rackgate.checks.regression.test_regression"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="rackgate compare", description=__doc__.splitlines()[0])
    ap.add_argument("old", help="the baseline recorded on the old image")
    ap.add_argument("new", help="the run recorded on the new image")
    ap.add_argument("--rack", help="rack file whose [regression] tolerances apply (default: built-in)")
    ap.add_argument("--junitxml", help="write a JUnit XML file: one testcase per fact name")
    ap.add_argument("--alluredir", help="write Allure results here: one result per fact name")
    return ap


def by_name(moves: list[cmp.Move]) -> dict[str, list[cmp.Move]]:
    out: dict[str, list[cmp.Move]] = {}
    for m in moves:
        out.setdefault(m.name, []).append(m)
    return dict(sorted(out.items()))


def _message(name: str, ms: list[cmp.Move], head: str, old_desc: str) -> str:
    bad = [m for m in ms if not m.ok]
    return (f"REG-FACTS [{name}]: {len(bad)} of {len(ms)} {name} figures moved beyond tolerance since the "
            f"baseline {old_desc}:\n{head}\n{cmp.table(bad)}")


def write_junit(path: str | Path, groups: dict[str, list[cmp.Move]], head: str, old_desc: str, seconds: float) -> Path:
    bad = sum(1 for ms in groups.values() if any(not m.ok for m in ms))
    suite = ET.Element("testsuite", name="rackgate compare", tests=str(len(groups)), failures=str(bad),
                       errors="0", skipped="0", time=f"{seconds:.3f}")
    for name, ms in groups.items():
        case = ET.SubElement(suite, "testcase", classname=CLASSNAME, name=f"{ITEM}[{name}]", time="0")
        if any(not m.ok for m in ms):
            msg = _message(name, ms, head, old_desc)
            ET.SubElement(case, "failure", message=msg.splitlines()[0]).text = msg
        ET.SubElement(case, "system-out").text = head + "\n\n" + cmp.table(ms)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(p, encoding="utf-8", xml_declaration=True)
    return p


def write_allure(results: str | Path, groups: dict[str, list[cmp.Move]], head: str, old_desc: str) -> Path:
    from ..report import plots
    out = Path(results)
    out.mkdir(parents=True, exist_ok=True)
    now = int(time.time() * 1000)
    def attach(atts: list[dict[str, str]], title: str, body: bytes, mime: str, ext: str) -> None:
        src = f"{uuid.uuid4()}-attachment.{ext}"
        (out / src).write_bytes(body)
        atts.append({"name": title, "source": src, "type": mime})

    for name, ms in groups.items():
        atts: list[dict[str, str]] = []
        attach(atts, f"{name}: old -> new", (head + "\n\n" + cmp.table(ms)).encode(), "text/plain", "txt")
        attach(atts, f"{name}.csv", cmp.csv(ms).encode(), "text/csv", "csv")
        try:
            png = plots.fact_moves(name, ms)
        except plots.PlotError:
            png = None
        if png:
            attach(atts, f"{name}: baseline vs this run", png, "image/png", "png")
        failed = any(not m.ok for m in ms)
        full = f"rackgate/checks/regression/test_regression.py::{ITEM}[{name}]"
        result = {"uuid": str(uuid.uuid4()), "historyId": hashlib.md5(full.encode()).hexdigest(),
                  "name": f"{ITEM}[{name}]", "fullName": full, "status": "failed" if failed else "passed",
                  "statusDetails": {"message": _message(name, ms, head, old_desc)} if failed else {},
                  "stage": "finished", "start": now, "stop": now, "attachments": atts,
                  "labels": [{"name": "suite", "value": "rackgate compare"}, {"name": "tag", "value": "regression"},
                             {"name": "row", "value": "REG-FACTS"}]}
        (out / f"{result['uuid']}-result.json").write_text(json.dumps(result, indent=1))
    return out


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    t0 = time.monotonic()
    try:
        old, new = load(args.old), load(args.new)
    except BaselineError as e:
        print(f"rackgate compare: {e}", file=sys.stderr)
        return 2
    for path, got in ((args.old, old), (args.new, new)):
        if got is None:
            print(f"rackgate compare: {path}: no such file", file=sys.stderr)
            return 2
    assert old is not None and new is not None  # both were found just above
    if args.rack:
        from .. import config
        try:
            expect = config.load(args.rack).regression
        except config.RackFileError as e:
            print(f"rackgate compare: --rack {args.rack}: {str(e).splitlines()[0]}", file=sys.stderr)
            return 2
    else:
        from ..config.regression import RegressionExpect
        expect = RegressionExpect()
    moves = cmp.compare(old.facts, new.facts, expect)
    head = cmp.header(old.provenance, new.provenance)
    print(f"rackgate compare: baseline {old.describe()}\n          this run {new.describe()}")
    print(head)
    print(cmp.table(moves) if moves else "(neither file holds a fact)")
    print(cmp.verdict(moves))
    groups = by_name(moves)
    try:
        if args.junitxml:
            write_junit(args.junitxml, groups, head, old.describe(), time.monotonic() - t0)
        if args.alluredir:
            write_allure(args.alluredir, groups, head, old.describe())
    except OSError as e:
        print(f"rackgate compare: could not write the report: {e}", file=sys.stderr)
        return 2
    if not moves:
        return 2
    return 1 if any(not m.ok for m in moves) else 0


if __name__ == "__main__":
    sys.exit(main())
