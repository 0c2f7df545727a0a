"""rackgate fleet --remediate --results DIR: the closed loop over a fleet's findings (docs/fleet.md).

For each tray with a FAILED item: drain its Slurm node (the reason, MARK first, is rackgate's mark),
run the remedies its rack file names for those findings (or wait, bounded, for an operator's
--mark-fixed), re-run only the items that failed there, and resume the node only when they PASS.
Guardrails: never more than a share of the fleet's Slurm nodes out of service (the breaker), a
rate cap on drains and on remedies, never a node rackgate did not drain, a finding past its
validity re-checked before any action. Every action goes to the audit log (audit.py) first and
last; a loop started again reads it and runs no finished action twice."""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from .. import ids
from ..catalogue import ACTION_CLASSES, UnknownRow, row
from ..config import RackFileError, load
from ..config.remediate import Remedy
from ..report import verdict_file
from ..secrets import redact, register_rack
from . import gather, slurm_nodes, validity
from .audit import AuditLog
from .slurm import SlurmError

PASS, FAIL = verdict_file.PASS.file, verdict_file.FAIL.file   # the verdict file's words
EXIT_GUARDRAIL = 4      # a guardrail stopped the loop (docs/fleet.md)
WAIT_POLL_S = 1.0


@dataclass
class Guard:
    max_share: float = 0.5          # of the fleet's Slurm nodes out of service at once, at most
    max_actions: int = 10           # drains, and remedies, each at most this many per `per_s`
    per_s: float = 3600.0
    validity_s: float = validity.DEFAULT_VALIDITY_S
    timeout_s: float = 3600.0       # one re-test run
    drain_wait_s: float = 900.0     # for the jobs on a draining node to end before anything is done to it


@dataclass
class Target:
    """One tray with findings: what the loop drains, remedies, re-tests and resumes."""
    rack: str
    node: str                       # the rack's node name
    host: str
    slurm: str                      # its Slurm node name
    tests: list[str]                # the items that FAILED there
    findings: list[gather.FleetFinding]
    remedies: list[Remedy]
    needs_operator: bool            # a finding no remedy names
    wait_fixed_s: float
    expires: float                  # epoch seconds: past it the finding is re-checked before acting
    fingerprint: str = ""

    def key(self, step: str) -> str:
        return f"{self.rack}/{self.node}/{self.fingerprint}/{step}"

    @property
    def reason(self) -> str:
        f = self.findings[0]
        return slurm_nodes.reason(f["row"], f["where"] or self.node, f["seen"])

    def evidence(self) -> dict[str, Any]:
        return {"rack": self.rack, "rack_node": self.node,
                "node": self.slurm, "findings": [{k: f[k] for k in ("row", "where", "seen", "test")} for f in self.findings]}


class SlurmLike(Protocol):
    def states(self) -> dict[str, slurm_nodes.NodeState]: ...
    def drain(self, node: str, reason: str) -> None: ...
    def resume(self, node: str) -> None: ...


Retest = Callable[[Target, str], tuple[str, list[dict[str, str]]]]   # (verdict, each item's outcome)
RunCommand = Callable[[Target, Remedy], dict[str, Any]]              # the remedy's exit and output


# --- the plan: which trays, their Slurm names and remedies ------------------------------------
def targets(fleet: gather.Fleet, guard: Guard) -> tuple[list[Target], list[str]]:
    """(the trays with findings, every Slurm node name of the fleet's racks). ValueError (one line)
    for a rack file that cannot be read or a remedy naming a row or action class that does not exist."""
    out: list[Target] = []
    names: list[str] = []
    for r in fleet["racks"]:
        try:
            rack = load(r["rack_file"])
        except RackFileError as e:
            raise ValueError(str(e)) from None
        register_rack(rack)   # a remedy's output names no secret of the rack file
        cfg = rack.remediate
        _check_remedies(r["rack_file"], cfg.remedies)
        items = {}
        vpath = Path(r["results"]) / "verdict.json"
        try:
            items = {i["test"]: i for i in verdict_file.read(vpath).get("items", [])}
        except ValueError:
            pass
        stray = sorted(set(cfg.slurm_nodes) - {n["node"] for n in r["nodes"]})
        if stray and r["nodes"]:
            raise ValueError(f"rack file {r['rack_file']}: remediate.slurm_nodes names no node of rack {r['rack']}: "
                             f"{', '.join(stray)} (its nodes: {', '.join(n['node'] for n in r['nodes'])})")
        for n in r["nodes"]:
            slurm = cfg.slurm_nodes.get(n["node"]) or n["host"]
            names.append(slurm)
            found = [f for f in r["findings"] if f["node"] == n["node"]]
            if n["verdict"] != FAIL or not found or not slurm:
                continue
            remedies: list[Remedy] = []
            unmatched = False
            for f in found:
                rem = next((m for m in cfg.remedies if f["row"] in m.rows or f["action_class"] in m.action_classes), None)
                if rem is None:
                    unmatched = True
                elif rem not in remedies:
                    remedies.append(rem)
            tests = sorted({f["test"] for f in found})
            expires = min(validity.expires_at(items.get(x, {}), vpath, guard.validity_s) for x in tests)
            t = Target(r["rack"], n["node"], n["host"], slurm, tests, found, remedies, unmatched, cfg.wait_fixed_s, expires)
            t.fingerprint = hashlib.sha1("\n".join(f"{f['test']}\t{f['seen']}" for f in found).encode()).hexdigest()[:12]
            out.append(t)
    return out, list(dict.fromkeys(names))


def _check_remedies(where: str, remedies: list[Remedy]) -> None:
    for m in remedies:
        for c in m.action_classes:
            if c not in ACTION_CLASSES:
                raise ValueError(f"rack file {where}: remediate.remedies: no action class {c!r} ({', '.join(ACTION_CLASSES)})")
        for rid in m.rows:
            try:
                row(rid)
            except UnknownRow:
                raise ValueError(f"rack file {where}: remediate.remedies: no catalogue row {rid!r}") from None


# --- the loop ---------------------------------------------------------------------------------
@dataclass
class Outcome:
    guardrail: list[str] = field(default_factory=list)   # refusals by a guardrail
    problems: list[str] = field(default_factory=list)    # what could not be done or observed
    drained: list[str] = field(default_factory=list)     # nodes left drained with their finding
    left_alone: list[str] = field(default_factory=list)  # nodes with findings someone else has (drained, resumed)
    resumed: list[str] = field(default_factory=list)

    def exit_code(self) -> int:
        return EXIT_GUARDRAIL if self.guardrail else 3 if self.problems else 1 if self.drained or self.left_alone else 0


class Loop:
    def __init__(self, slurm: SlurmLike, log: AuditLog, guard: Guard, retest: Retest, run_command: RunCommand,
                 dry_run: bool = False, say: Callable[[str], object] = print):
        self.slurm, self.log, self.guard, self.retest, self.run_command = slurm, log, guard, retest, run_command
        self.dry, self.say = dry_run, say
        self.out = Outcome()
        self.stop = ""   # the guardrail that stopped the loop's actions, once one has

    def refuse(self, t: Target, guardrail: str, why: str) -> None:
        self.log.add("refuse", "done", guardrail=guardrail, why=why, **t.evidence())
        self.say(f"rackgate remediate: {t.slurm}: refused ({guardrail}): {why}")
        (self.out.guardrail if guardrail in ("breaker", "rate-cap") else self.out.left_alone).append(t.slurm)

    def run(self, ts: list[Target], fleet_nodes: list[str]) -> Outcome:
        states = self.slurm.states()
        known = [n for n in fleet_nodes if n in states]
        out = {n for n in known if states[n].out_of_service}
        drained = [t for t in ts if self._drain(t, states, known, out)]
        for t in drained:
            self._heal(t)
        return self.out

    def _ours(self, node: str) -> dict[str, Any] | None:
        """rackgate's last drain of `node` when no resume by rackgate came after it."""
        for r in reversed(self.log.records):
            if r.get("node") == node and r["status"] == "done" and r["action"] in ("drain", "resume"):
                return r if r["action"] == "drain" else None
        return None

    def _drain(self, t: Target, states: dict[str, slurm_nodes.NodeState], known: list[str], out: set[str]) -> bool:
        finished = self.log.done(t.key("resume"))
        if finished is not None:
            self.say(f"rackgate remediate: {t.slurm}: remedied for these findings, resumed at {finished['ts']} (the log)")
            self.out.resumed.append(t.slurm)
            return False
        st = states.get(t.slurm)
        if st is None:
            self.log.add("refuse", "done", guardrail="not-a-slurm-node", why="sinfo does not list it", **t.evidence())
            self.out.problems.append(f"{t.rack} {t.node}: {t.slurm} is not a Slurm node")
            self.say(f"rackgate remediate: {t.rack} {t.node}: {t.slurm} is not a Slurm node (sinfo): not drained")
            return False
        mine = self._ours(t.slurm)
        if mine is not None:
            if st.drained and st.ours:
                self.say(f"rackgate remediate: {t.slurm}: drained by rackgate at {mine['ts']} (the log): not drained again")
                return True
            self.refuse(t, "not-ours", f"rackgate drained it at {mine['ts']}, but now it is {st.state} "
                                       f"(reason {st.reason!r}): someone else has it; left alone")
            return False
        if st.out_of_service:
            self.refuse(t, "not-ours", f"already {st.state} by someone else (reason {st.reason!r}); rackgate never "
                                       "drains over nor resumes a node it did not drain: left alone")
            return False
        if self.stop:
            self.refuse(t, self.stop, "the loop was stopped by a guardrail before this node (see above)")
            return False
        if time.time() > t.expires:
            if self.dry:
                self.say(f"would re-check first (the finding is past its validity): {t.tests}")
            else:
                verdict, items = self.retest(t, "recheck")
                self.log.add("recheck", "done", key=t.key("recheck"), verdict=verdict, items=items,
                             why="the finding is past its validity", **t.evidence())
                if verdict == PASS:
                    self.say(f"rackgate remediate: {t.slurm}: the stale finding re-checked: PASS; no action")
                    return False
                if verdict != FAIL:
                    self.out.problems.append(f"{t.slurm}: a stale finding could not be re-checked ({verdict})")
                    self.say(f"rackgate remediate: {t.slurm}: the stale finding could not be re-checked ({verdict}): no action")
                    return False
        would = len(out | {t.slurm})
        if would > self.guard.max_share * len(known):
            self.stop = "breaker"
            self.refuse(t, "breaker", f"draining it would take {would} of the fleet's {len(known)} Slurm nodes out of "
                                      f"service, past the {self.guard.max_share:.0%} limit (--max-drain-share): the loop "
                                      "drains nothing more")
            return False
        if self.log.count("drain", time.time() - self.guard.per_s) >= self.guard.max_actions:
            self.stop = "rate-cap"
            self.refuse(t, "rate-cap", f"{self.guard.max_actions} drains in the last {self.guard.per_s:.0f} s already "
                                       "(--max-actions / --per): the loop drains nothing more")
            return False
        reason = t.reason
        self.say(f"scontrol update nodename={t.slurm} state=drain reason=\"{reason}\"")
        if self.dry:
            out.add(t.slurm)
            self.log.add("drain", "done", key=t.key("drain"), reason=reason, **t.evidence())   # in memory only
            return True
        self.log.add("drain", "start", key=t.key("drain"), reason=reason, **t.evidence())
        try:
            self.slurm.drain(t.slurm, reason)
            back = self.slurm.states().get(t.slurm)
        except SlurmError as e:
            self.log.add("drain", "failed", key=t.key("drain"), error=str(e), **t.evidence())
            self.out.problems.append(f"{t.slurm}: drain failed: {e}")
            self.say(f"rackgate remediate: {t.slurm}: drain failed: {e}")
            return False
        if back is None or not back.drained or not back.ours:
            self.log.add("drain", "failed", key=t.key("drain"), read_back=back and [back.state, back.reason], **t.evidence())
            self.out.problems.append(f"{t.slurm}: drained, but sinfo shows {back}")
            return False
        self.log.add("drain", "done", key=t.key("drain"), reason=reason, state=back.state, read_back=back.reason, **t.evidence())
        out.add(t.slurm)
        return True

    def _heal(self, t: Target) -> None:
        """Remedy, re-test, resume: each step once (the log), the node left drained at any doubt."""
        if self.dry:
            for m in t.remedies:
                self.say(f"  then run (rack file remedy for {', '.join(m.rows + m.action_classes)}): {redact(m.command)}")
            if t.needs_operator or not t.remedies:
                self.say(f"  then wait up to {t.wait_fixed_s:.0f} s for an operator's --mark-fixed {t.slurm}")
            self.say(f"  then re-run: {' '.join(t.tests)}")
            self.say(f"  then, only if they all PASS: scontrol update nodename={t.slurm} state=resume")
            return
        since = self._ours(t.slurm)
        start = since["t"] if since else 0.0
        rnd = self.log.marks(t.slurm, start)
        rk = t.key(f"retest{rnd}")
        res = self.log.done(rk)
        if res is None:
            if not self._idle(t):
                return
            if rnd == 0:
                if not self._remedies(t):
                    return
                if t.needs_operator or not t.remedies:
                    rnd = self._wait_mark(t, start)
                    if rnd == 0:
                        return
                    rk = t.key(f"retest{rnd}")
            if self.log.started(rk):
                self.say(f"rackgate remediate: {t.slurm}: a re-test was cut short before: running it again")
            self.log.add("retest", "start", key=rk, items=t.tests, **t.evidence())
            verdict, items = self.retest(t, f"retest{rnd}")
            res = self.log.add("retest", "done", key=rk, verdict=verdict, items=items, **t.evidence())
            self.say(f"rackgate remediate: {t.slurm}: re-test {verdict}: " +
                     ", ".join(f"{ids.short(i['test'])} {i['outcome']}" for i in items))
        if res["verdict"] != PASS:
            self.out.drained.append(t.slurm)
            if res["verdict"] != FAIL:
                self.out.problems.append(f"{t.slurm}: re-test {res['verdict']}")
            self.say(f"rackgate remediate: {t.slurm}: stays drained ({t.reason})")
            return
        self._resume(t)

    def _idle(self, t: Target) -> bool:
        """Until the drained node runs no job (`drained`, not `draining`), bounded: nothing is done to
        a node while a job still runs there (a driver reload would kill it)."""
        end = time.monotonic() + self.guard.drain_wait_s
        while True:
            try:
                st = self.slurm.states().get(t.slurm)
            except SlurmError as e:
                self.out.problems.append(f"{t.slurm}: {e}")
                return False
            if st is None or not st.drained or not st.ours:
                self.refuse(t, "not-ours", f"while it drained it became {st and st.state} (reason {st and st.reason!r}): "
                                           "left alone")
                return False
            if st.state == "drained":
                return True
            if time.monotonic() >= end:
                self.log.add("wait-jobs", "done", state=st.state, waited_s=self.guard.drain_wait_s, **t.evidence())
                self.out.drained.append(t.slurm)
                self.say(f"rackgate remediate: {t.slurm}: still {st.state} (jobs running) after {self.guard.drain_wait_s:.0f} s: "
                         "nothing done to it yet; a later loop carries on")
                return False
            time.sleep(WAIT_POLL_S)

    def _remedies(self, t: Target) -> bool:
        for i, m in enumerate(t.remedies):
            k = t.key(f"remedy{i}")
            done = self.log.done(k)
            if done is not None:
                if done["exit"] != 0:
                    self.out.drained.append(t.slurm)
                    return False
                continue
            if self.log.count("remediate", time.time() - self.guard.per_s) >= self.guard.max_actions:
                self.refuse(t, "rate-cap", f"{self.guard.max_actions} remedies in the last {self.guard.per_s:.0f} s "
                                           "already (--max-actions / --per): left drained for a later loop")
                return False
            if self.log.started(k):
                self.say(f"rackgate remediate: {t.slurm}: remedy {i} was cut short before (no exit logged): running it again")
            command = redact(m.command)
            self.log.add("remediate", "start", key=k, command=command, **t.evidence())
            self.say(f"rackgate remediate: {t.slurm}: running {command}")
            ev = self.run_command(t, m)
            self.log.add("remediate", "done", key=k, command=command, **ev, **t.evidence())
            if ev["exit"] != 0:
                self.say(f"rackgate remediate: {t.slurm}: remedy exited {ev['exit']}: stays drained")
                self.out.drained.append(t.slurm)
                return False
        return True

    def _wait_mark(self, t: Target, since: float) -> int:
        end = time.monotonic() + t.wait_fixed_s
        self.say(f"rackgate remediate: {t.slurm}: waiting up to {t.wait_fixed_s:.0f} s for an operator's "
                 f"`rackgate fleet --remediate --results ... --mark-fixed {t.slurm}`")
        while True:
            self.log.reload()
            n = self.log.marks(t.slurm, since)
            if n:
                return n
            if time.monotonic() >= end:
                self.log.add("await-operator", "done", waited_s=t.wait_fixed_s, **t.evidence())
                self.out.drained.append(t.slurm)
                self.say(f"rackgate remediate: {t.slurm}: no operator mark: stays drained until one (--mark-fixed)")
                return 0
            time.sleep(WAIT_POLL_S)

    def _resume(self, t: Target) -> None:
        try:
            st = self.slurm.states().get(t.slurm)
        except SlurmError as e:
            self.out.problems.append(f"{t.slurm}: {e}")
            return
        if st is None or not st.drained or not st.ours:
            self.refuse(t, "not-ours", f"re-test passed, but it is now {st and st.state} (reason {st and st.reason!r}), "
                                       "not rackgate's drain: left as it is")
            return
        self.log.add("resume", "start", key=t.key("resume"), **t.evidence())
        try:
            self.slurm.resume(t.slurm)
            back = self.slurm.states().get(t.slurm)
        except SlurmError as e:
            self.log.add("resume", "failed", key=t.key("resume"), error=str(e), **t.evidence())
            self.out.problems.append(f"{t.slurm}: resume failed: {e}")
            return
        self.log.add("resume", "done", key=t.key("resume"), state=back and back.state, **t.evidence())
        self.out.resumed.append(t.slurm)
        self.say(f"rackgate remediate: {t.slurm}: resumed ({back and back.state})")
