"""The failure catalogue as data: one source of truth for checks, sim faults, reports.

Rows live in the area files next to this module (plat.toml, fab.toml, ...). Every check names
its row by id; the report, the fault matrix and the diagnosis text all come from here.
"""
from __future__ import annotations

import fnmatch
import functools
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

HERE = Path(__file__).parent
RUNBOOK_URL = "https://github.com/ROCm/ATOM/blob/main/recipes/Kimi-K3-455-wideEP.md"
AREAS = {"PLAT": "platform", "FAB": "fabric", "SRV": "serving", "BENCH": "serving", "ACC": "accuracy",
         "REG": "regression"}
ROW_FILES = ("plat", "fab", "srv", "bench", "acc", "reg")
# Rows without an `order`: platform and fabric first (they launch nothing), the rest after the
# decisive server checks and before the costly ones.
DEFAULT_ORDER = 60
FAMILY_ORDER = {"PLAT": 1, "FAB": 2}
# The stage of a run a row's items belong to (rackgate/fixtures/bracket.py snapshots the GPUs' error
# counters where the stage changes); a row may name its own `stage`, "" is none (it moves no hardware).
FAMILY_STAGE = {"PLAT": "platform", "FAB": "fabric", "SRV": "serving load", "BENCH": "benchmark",
                "ACC": "accuracy", "REG": ""}
# What a finding asks of the tray (verdict.json, the fleet's drain): `none` -- nothing to do to the
# tray, the fix is in the launch, the rack file or the image; `re-run` -- clear the named leftover or
# transient and run again; `reboot-or-reload-driver`; `service-hardware`; `do-not-use` -- keep work
# off the tray until a person has looked (another owner, wrong pod, wrong answers).
# How long a row's verdict stands (verdict.json's valid_until; rackgate/report/validity.py): a
# duration (`10m`, `1h`, `1d`) or `image` -- until the container image changes (the digest the run
# read is part of the result), at most validity.IMAGE_CAP. A row may name its own `validity`; the
# family's is the default. Error counters move in minutes, link state within the hour, the fabric
# rounds' figures over a day; what the image decides (answers, accuracy) stands while the image does.
FAMILY_VALIDITY = {"PLAT": "1h", "FAB": "1h", "SRV": "1h", "BENCH": "1d", "ACC": "image", "REG": "image"}
VALIDITY = re.compile(r"(?:[1-9]\d*[smhd]|image)")
ACTION_CLASSES = ("none", "re-run", "reboot-or-reload-driver", "service-hardware", "do-not-use")
ActionClass = Literal["none", "re-run", "reboot-or-reload-driver", "service-hardware", "do-not-use"]


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Pattern(_Data):
    """A signature as a regex over one line of the real output, with the real lines it must
    match (the catalogue self-test runs every example)."""
    name: str                       # what a person calls it (shown in the failure)
    regex: str
    examples: tuple[str, ...] = Field(min_length=1)

    @field_validator("regex")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as e:
            raise ValueError(f"not a regex: {e}") from None
        return v

    def search(self, text: str) -> bool:
        return re.search(self.regex, text) is not None


class Row(_Data):
    id: str
    title: str
    markers: tuple[str, ...]
    scope: str
    observe: str
    healthy: str
    signatures: tuple[str, ...]     # as a person reads them in the runbook
    meaning: str
    action: str
    action_class: ActionClass       # required: what the finding asks of the tray (ACTION_CLASSES)
    anchor: str
    severity: str = "normal"
    family: str = ""
    pattern: tuple[Pattern, ...] = ()   # machine-read signatures ([[row.pattern]] in the TOML)
    # The evidence a PASS needs (docs/catalogue.md): what the suite must have read, never "nothing wrong".
    passes_on: str = ""
    # Run order and dependencies (see the header of srv.toml): `order` sorts the session's items
    # (lower first, stable); `needs` names rows whose FAILED or ERROR makes this row's items ERROR
    # at once with rackgate.errors.NotRun instead of spending minutes.
    order: int = DEFAULT_ORDER
    needs: tuple[str, ...] = ()
    # Rows whose session read this row reads too (ACC-QUICK's run: rackgate/gsm8k/session.py QuickGate, made
    # once, by whichever asks first): they run before it, and their verdict does not stop it (a quick
    # gate that FAILED still measured an accuracy).
    reads: tuple[str, ...] = ()
    # The MLPerf Inference compliance test the row follows (mlcommons/inference compliance/), and
    # where rackgate differs from it; docs/catalogue.md lists them.
    mlperf: str = ""
    # The stage of the run its items belong to (FAMILY_STAGE by default), and the stages whose
    # hardware error counter rises this row judges (its items then belong to no stage themselves).
    stage: str = ""
    brackets: tuple[str, ...] = ()
    # How long its verdict stands (FAMILY_VALIDITY above): `<n>s|m|h|d` or `image`.
    validity: str = ""

    @field_validator("validity")
    @classmethod
    def _validity(cls, v: str) -> str:
        if not VALIDITY.fullmatch(v):
            raise ValueError(f"validity {v!r}: a duration such as 10m, 1h, 1d, or 'image'")
        return v

    @property
    def area(self) -> str:
        """The epic: platform / fabric / serving / accuracy."""
        return AREAS[self.family]

    @property
    def runbook_link(self) -> str:
        return f"{RUNBOOK_URL}#{self.anchor}"

    @property
    def patterns(self) -> tuple[Pattern, ...]:
        return self.pattern


class Moved(_Data):
    """A fact a REG case's fault must move beyond its tolerance (REGRESSED), and which way: the
    evidence's shape, never its figures (a measured figure moves with load and sampling)."""
    fact: str                                        # the fact's name, e.g. accuracy.gsm8k.full
    direction: Literal["down", "up", "changed"]      # changed: not numbers (a commit, a dtype)
    where: str = ""                                  # the node/pair/rank named, when it matters


class MatrixCase(_Data):
    """One fault-matrix case (matrix/<area>.toml; see the header of those files)."""
    fault: str
    row: str
    select: str = ""                # the pytest marker expression for the run
    paths: list[str] = Field(default_factory=list)     # test files that narrow the run
    fail: list[str] = Field(default_factory=list)      # test ids that must fail (only those)
    also_fail: list[str] = Field(default_factory=list)
    baseline: list[str] = Field(default_factory=list)  # a recording run's pytest arguments
    output: list[str] = Field(default_factory=list)    # text the run's output must contain
    moved: list[Moved] = Field(default_factory=list)   # facts the run's old -> new table shows moved
    id: str | None = None
    source: str = ""


def _one_line(e: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, err['loc'])) or 'row'}: {err['msg']}" for err in e.errors())


def case_problems(case: dict[str, Any]) -> list[str]:
    """What is wrong with a matrix case's shape (unknown keys, wrong types), one line each."""
    try:
        MatrixCase(**case)
    except ValidationError as e:
        return [f"{case.get('source')}: case {case.get('fault')!r}: {_one_line(e)}"]
    return []


def matrix() -> list[dict[str, Any]]:
    """The fault matrix: every case of matrix/<area>.toml (see the header of those files)."""
    cases = []
    for path in sorted((HERE / "matrix").glob("*.toml")):
        for case in tomllib.loads(path.read_text()).get("case", []):
            cases.append({**case, "source": path.name})
    return cases


class Tier(_Data):
    """A named selection of rows with a time budget (tiers.toml; rackgate --tier NAME)."""
    name: str
    budget_s: float = Field(gt=0)
    when: str
    rows: tuple[str, ...] = Field(min_length=1)   # row ids or fnmatch patterns

    def selects(self, row_id: str) -> bool:
        return any(fnmatch.fnmatchcase(row_id, p) for p in self.rows)


@functools.cache
def tiers() -> dict[str, Tier]:
    """tiers.toml's tiers by name; ValueError (one line) for a malformed one or a pattern that
    matches no row."""
    out: dict[str, Tier] = {}
    for raw in tomllib.loads((HERE / "tiers.toml").read_text())["tier"]:
        try:
            t = Tier(**raw)
        except ValidationError as e:
            raise ValueError(f"tiers.toml: tier {raw.get('name')}: {_one_line(e)}") from None
        dead = [p for p in t.rows if not any(fnmatch.fnmatchcase(r, p) for r in rows())]
        if dead:
            raise ValueError(f"tiers.toml: tier {t.name}: {dead} match no catalogue row")
        out[t.name] = t
    return out


class UnknownRow(KeyError):
    def __str__(self) -> str:  # KeyError's repr-quoting makes one-line messages ugly
        return str(self.args[0])


@functools.cache
def rows() -> dict[str, Row]:
    out: dict[str, Row] = {}
    for path in (HERE / f"{name}.toml" for name in ROW_FILES):
        for raw in tomllib.loads(path.read_text())["row"]:
            family = raw.get("id", "").split("-", 1)[0]
            raw.setdefault("order", FAMILY_ORDER.get(family, DEFAULT_ORDER))
            raw.setdefault("validity", FAMILY_VALIDITY.get(family, "1h"))
            if not raw.get("brackets"):
                raw.setdefault("stage", FAMILY_STAGE.get(family, ""))
            try:
                r = Row(**raw, family=family)
            except ValidationError as e:
                raise ValueError(f"{path.name}: row {raw.get('id')}: {_one_line(e)}") from None
            if r.id in out:
                raise ValueError(f"{path.name}: duplicate catalogue id {r.id}")
            out[r.id] = r
    for r in out.values():
        for kind, ids in (("needs", r.needs), ("reads", r.reads)):
            unknown = [n for n in ids if n not in out]
            if unknown:
                raise ValueError(f"row {r.id}: {kind} unknown row(s) {unknown}")
            late = [n for n in ids if out[n].order >= r.order]
            if late:
                raise ValueError(f"row {r.id} (order {r.order}): {kind} {late}, which do not run before it")
    return out


def row(row_id: str) -> Row:
    try:
        return rows()[row_id]
    except KeyError:
        raise UnknownRow(f"unknown catalogue id {row_id!r}; known: {', '.join(sorted(rows()))}") from None
