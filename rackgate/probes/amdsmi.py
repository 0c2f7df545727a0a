"""amd-smi output -> typed facts: the `fabric` subcommand (UALoE info per GPU).

Shapes, as amd-smi's CLI prints them (amdsmi_cli, subcommands/fabric.py and amdsmi_logger.py):

- human readable: one block per GPU, keys upper-cased, 4 spaces per level::

      GPU: 0
          BDF: 0000:05:00.0
          FABRIC_INFO:
              VERSION: 4294967295
              ACCELERATOR_ID: 0
              BANDWIDTH: 0 Mb/s
              LATENCY: 0 ns
              PPOD_ID: 5a1c0de0-0000-0000-0000-000000000001
              VPOD_ID: 2
              ...
          FABRIC_TELEMETRY: N/A

- other releases name the section `FABRIC:` and indent by other amounts: fields are found by key
  (case-insensitive) inside the section named FABRIC or FABRIC_INFO, at any indentation deeper
  than the section's own line. A GPU block without either section is a layout this parser does not
  know: UnrecognisedOutput (could not observe), never "the id is N/A".

- --json: a plain list of per-GPU objects, or (newer releases, other subcommands) an object
  {"gpu_data": [...]}; a measured value is {"value": 0, "unit": "Mb/s"}; anything the library
  could not read is the string "N/A" (a whole "fabric_info" too).

This firmware does not populate BANDWIDTH, LATENCY and VERSION: it reports 0 Mb/s, 0 ns and
4294967295 (UINT32_MAX). They are classified here, once, as NOT_POPULATED so that no consumer
reads them as measurements (FAB-UNPOPULATED).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ..access import NodeAccess, Result
from ..errors import UnrecognisedOutput
from ..lines import clean_text

UNSET_U32 = 4294967295
POPULATED, NOT_POPULATED, UNKNOWN = "populated", "not populated", "unrecognised"
# The fields this firmware leaves unpopulated, the unit a measurement carries, and the raw
# values that mean "no data" (besides "N/A").
UNPOPULATED_FIELDS = {"bandwidth": ("Mb/s", {0, UNSET_U32}), "latency": ("ns", {0, UNSET_U32}),
                      "version": ("", {UNSET_U32})}


class AmdSmiParseError(UnrecognisedOutput, ValueError):
    """Output that is not amd-smi fabric output (one line, names what was wrong)."""


@dataclass(frozen=True)
class FieldReading:
    name: str
    raw: str  # as printed
    value: float | None  # the number, when it is a measurement
    unit: str
    status: str  # POPULATED, NOT_POPULATED or UNKNOWN

    def describe(self) -> str:
        return f"{self.name.upper()}: {self.raw} ({self.status})"


@dataclass(frozen=True)
class FabricGpu:
    gpu: int
    bdf: str
    accelerator_id: int | None  # None when unset (UINT32_MAX) or N/A
    accelerator_id_raw: str
    ppod_id: str | None
    vpod_id: str | None
    accel_state: str | None
    fields: dict[str, FieldReading] = field(default_factory=dict)

    @property
    def accelerator_id_known(self) -> bool:
        """False when amd-smi printed N/A (or nothing) for ACCELERATOR_ID: it could not read the
        driver, which says nothing about the rack."""
        return self.accelerator_id_raw.strip().upper() not in ("", "N/A", "NA")


# --- values ---------------------------------------------------------------------------------
def _number(text: object) -> float | None:
    if not isinstance(text, (str, int, float)):
        return None  # float() of anything else (None, a list) is a TypeError
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def classify(name: str, value: object, unit: str = "") -> FieldReading:
    """One of BANDWIDTH / LATENCY / VERSION, from text ('0 Mb/s') or JSON ({'value','unit'})."""
    want_unit, sentinels = UNPOPULATED_FIELDS[name]
    if isinstance(value, dict):
        unit = str(value.get("unit", unit) or "")
        value = value.get("value")
    raw = f"{value} {unit}".strip() if unit else str(value)
    if isinstance(value, str):
        text = value.strip()
        m = re.fullmatch(r"(\S+)(?:\s+(\S+))?", text)
        if m and m.group(2) and not unit:
            text, unit = m.group(1), m.group(2)
        if text.upper() in ("N/A", "NA"):
            return FieldReading(name, raw, None, unit, NOT_POPULATED)
        value = _number(text)
    elif isinstance(value, bool) or value is None:
        return FieldReading(name, raw, None, unit, UNKNOWN)
    num = _number(value)
    if num is None or (want_unit and unit and unit != want_unit) or num < 0:
        return FieldReading(name, raw, None, unit, UNKNOWN)
    if num in sentinels:
        return FieldReading(name, raw, None, unit, NOT_POPULATED)
    if name == "version" and not float(num).is_integer():
        return FieldReading(name, raw, None, unit, UNKNOWN)
    return FieldReading(name, raw, num, unit, POPULATED)


def _accel_id(raw: object) -> tuple[int | None, str]:
    text = str(raw).strip()
    try:
        v = int(text, 0)
    except ValueError:
        return None, text
    return (None if v == UNSET_U32 else v), text


def _gpu_from(gpu: int, bdf: str, info: dict[str, Any]) -> FabricGpu:
    info = {str(k).lower(): v for k, v in info.items()}
    if isinstance(info.get("accelerator_id"), dict):  # {"value": 5} in some releases
        info["accelerator_id"] = info["accelerator_id"].get("value", "N/A")
    aid, aid_raw = _accel_id(info.get("accelerator_id", "N/A"))
    fields = {n: classify(n, info[n]) for n in UNPOPULATED_FIELDS if n in info}
    def s(k: str) -> str | None:
        v = info.get(k)
        return None if v is None or str(v).strip().upper() == "N/A" else str(v).strip()
    return FabricGpu(gpu, bdf, aid, aid_raw, s("ppod_id"), s("vpod_id"), s("accel_state"), fields)


# --- human-readable text --------------------------------------------------------------------
FABRIC_SECTIONS = ("fabric_info", "fabric")
_KEY_LINE = re.compile(r"^(\s*)([A-Za-z][A-Za-z0-9_ ]*?)\s*:\s*(.*)$")
_GPU_LINE = re.compile(r"^\s*GPU\s*:\s*(\d+)\s*$", re.IGNORECASE)


class _Block(TypedDict):
    bdf: str
    fabric: dict[str, str] | None
    fabric_na: bool


def _parse_text(text: str) -> list[FabricGpu]:
    """Key-based: per `GPU: N` block, BDF wherever it sits outside the fabric section, and every
    `KEY: value` line indented under a FABRIC: / FABRIC_INFO: line."""
    blocks: list[tuple[int, _Block]] = []
    cur: _Block | None = None
    fab_indent: int | None = None   # indentation of the open fabric section's own line
    for line in text.split("\n"):
        if not line.strip():
            continue
        m = _GPU_LINE.match(line)
        if m:
            cur = {"bdf": "", "fabric": None, "fabric_na": False}
            blocks.append((int(m.group(1)), cur))
            fab_indent = None
            continue
        if cur is None:
            continue
        m = _KEY_LINE.match(line.expandtabs(4))
        if not m:
            continue  # a continuation line of a multi-line value (LOCAL_ACTIVE_ACCELERATORS)
        indent, key, val = len(m.group(1)), m.group(2).strip().lower().replace(" ", "_"), m.group(3).strip()
        if fab_indent is not None and indent > fab_indent:
            assert cur["fabric"] is not None  # fab_indent is set only with the section open
            cur["fabric"].setdefault(key, val)
            continue
        fab_indent = None
        if key in FABRIC_SECTIONS and cur["fabric"] is None:
            if val == "":
                cur["fabric"], fab_indent = {}, indent
            elif val.upper() in ("N/A", "NA"):
                cur["fabric"], cur["fabric_na"] = {}, True
            continue
        if key == "bdf" and not cur["bdf"]:
            cur["bdf"] = val
    out: list[FabricGpu] = []
    for gpu, b in blocks:
        if b["fabric"] is None:
            raise AmdSmiParseError(f"amd-smi fabric: GPU {gpu} has no FABRIC_INFO: or FABRIC: section (a layout "
                                   "this parser does not know)")
        out.append(_gpu_from(gpu, b["bdf"], b["fabric"]))
    return out


# --- JSON -----------------------------------------------------------------------------------
def gpu_list(data: object, error: type[Exception] | None = None) -> list[Any]:
    """amd-smi --json output -> its per-GPU list: a plain list (older releases), or the list under
    {"gpu_data": [...]} (7.x). `error`: the could-not-observe class to raise (AmdSmiParseError)."""
    error = error or AmdSmiParseError
    if isinstance(data, dict):
        if "gpu_data" not in data:
            raise error(f"amd-smi JSON has no 'gpu_data' (keys: {', '.join(sorted(map(str, data))[:6]) or 'none'})")
        data = data["gpu_data"]
    if not isinstance(data, list):
        raise error(f"amd-smi JSON is a {type(data).__name__}, not a list of GPUs")
    return data


def _gpu_index(raw: object, pos: int) -> int:
    text = str(raw).strip()
    if isinstance(raw, bool) or not text.isdecimal() or len(text) > 6:
        raise AmdSmiParseError(f"amd-smi JSON entry {pos}: 'gpu' is {str(raw)[:40]!r}, not a GPU index")
    return int(text)


def _parse_json(data: object) -> list[FabricGpu]:
    out: list[FabricGpu] = []
    for pos, rec in enumerate(gpu_list(data)):
        if not isinstance(rec, dict) or "gpu" not in rec:
            raise AmdSmiParseError(f"amd-smi JSON entry {pos} has no 'gpu' key")
        info = rec.get("fabric_info", rec.get("fabric"))
        if info is None:
            raise AmdSmiParseError(f"amd-smi JSON entry {pos} has no 'fabric_info' (keys: "
                                   f"{', '.join(sorted(map(str, rec))[:6])})")
        out.append(_gpu_from(_gpu_index(rec["gpu"], pos), str(rec.get("bdf", "")), info if isinstance(info, dict) else {}))
    return out


def parse_fabric(text: str) -> list[FabricGpu]:
    """`amd-smi fabric` output (text or --json) -> one FabricGpu per GPU block."""
    stripped = clean_text(text).strip()
    if not stripped:
        raise AmdSmiParseError("amd-smi fabric printed nothing")
    if stripped[0] in "[{":
        try:
            data = json.loads(stripped)
        except (ValueError, RecursionError) as e:
            raise AmdSmiParseError(f"amd-smi fabric --json is not valid JSON: {e}") from None
        gpus = _parse_json(data)
    else:
        gpus = _parse_text(stripped)
    if not gpus:
        raise AmdSmiParseError(f"no 'GPU: N' block in amd-smi fabric output: {stripped.splitlines()[0][:120]!r}")
    return gpus


_NO_JSON = re.compile(r"unrecogni[sz]ed argument|invalid choice|no such option|unknown option", re.IGNORECASE)


def fabric(host: NodeAccess, json_output: bool = True) -> tuple[Result, list[FabricGpu]]:
    """Run `amd-smi fabric --json` on a node, or the text form when the installed amd-smi does not
    take --json there; returns (Result, [FabricGpu])."""
    res = host.run(["amd-smi", "fabric", "--json"] if json_output else ["amd-smi", "fabric"], timeout=60)
    if json_output and not res.ok and res.rc != 127 and _NO_JSON.search(res.stderr + res.stdout):
        res = host.run(["amd-smi", "fabric"], timeout=60)
    try:
        return res, (parse_fabric(res.stdout) if res.ok else [])
    except AmdSmiParseError as e:  # name the node whose amd-smi said it
        raise AmdSmiParseError(f"{host.name}: {e}") from None


def table(gpus: list[FabricGpu]) -> str:
    """The classification as a text table (attached to reports)."""
    rows = [f"{'gpu':>3}  {'field':<10} {'raw':<22} classified as"]
    for g in gpus:
        for f in g.fields.values():
            rows.append(f"{g.gpu:>3}  {f.name.upper():<10} {f.raw:<22} {f.status}")
    return "\n".join(rows)
