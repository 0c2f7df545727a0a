"""Docker on a node, read-only: every container (`ps -a`), recent creates (`events`), one
container's configuration (`inspect`).

Formats (docker CLI):
- `docker ps -a --no-trunc --size=false --format '{{json .}}'`: one JSON object per line with
  ID, Names, Image, Command, CreatedAt ("2006-01-02 15:04:05 -0700 MST"), RunningFor, State
  (created/running/paused/restarting/exited/dead), Status ("Up 5 minutes", "Exited (255) 2 hours
  ago"), Ports, Labels, Mounts, Networks, LocalVolumes, Size. `--size=false` stops `{{json .}}`
  from making the daemon compute every container's disk usage.
- `docker events --since 30m --until 0s --filter event=create --format '{{json .}}'`: one JSON
  message per line: Type, Action, Actor {ID, Attributes {name, image, ...}}, time, timeNano
  (older daemons also status/id/from). `--until 0s` makes it return instead of streaming.
- `docker inspect --type container NAME`: a JSON array of one object (State, Config,
  HostConfig, ...); for an unknown name it prints `[]` and "Error: No such container: NAME".
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from .. import jsonl
from ..access import NodeAccess, Result
from ..errors import CouldNotObserve, ToolMissing, UnrecognisedOutput
from . import procs, tcp
from .target import On

PS = ["docker", "ps", "-a", "--no-trunc", "--size=false", "--format", "{{json .}}"]
ACTIVE_STATES = ("created", "running", "paused", "restarting")


class DockerOutputError(UnrecognisedOutput, ValueError):
    pass


def _json_lines(text: str, what: str) -> list[dict[str, Any]]:
    try:
        return [obj for _, obj in jsonl.objects(text)]
    except jsonl.BadLine as e:
        raise DockerOutputError(f"{what}: {e}") from None


@dataclass(frozen=True)
class PsRow:
    id: str
    names: tuple[str, ...]
    image: str
    state: str       # lower-case docker state
    status: str      # human text as docker prints it
    created_at: str

    @property
    def name(self) -> str:
        return self.names[0] if self.names else self.id[:12]

    @property
    def active(self) -> bool:
        """Created (about to load), running, paused or restarting: it holds or will hold the GPUs."""
        return self.state in ACTIVE_STATES

    def summary(self) -> str:
        return f"{self.name} ({self.image}, {self.status or self.state})"


def _state_from_status(status: str) -> str:
    # Docker < 1.13 has no State field: derive it from the human status.
    s = status.lower()
    for prefix, state in (("up", "running"), ("exited", "exited"), ("created", "created"),
                          ("restarting", "restarting"), ("dead", "dead"), ("removal", "removing")):
        if s.startswith(prefix):
            return "paused" if state == "running" and "(paused)" in s else state
    return s or "unknown"


def parse_ps(text: str) -> list[PsRow]:
    rows = []
    for obj in _json_lines(text, "docker ps"):
        names = tuple(n.strip().lstrip("/") for n in str(obj.get("Names", "")).split(",") if n.strip())
        status = str(obj.get("Status", ""))
        state = str(obj.get("State") or _state_from_status(status)).lower()
        rows.append(PsRow(str(obj.get("ID", "")), names, str(obj.get("Image", "")), state, status,
                          str(obj.get("CreatedAt", ""))))
    return rows


@dataclass(frozen=True)
class Event:
    action: str
    type: str
    id: str
    name: str
    image: str
    time: int  # seconds since the epoch

    def summary(self, now: float | None = None) -> str:
        ago = f", {int(now - self.time) // 60} min ago" if now else ""
        return f"{self.action} {self.name or self.id[:12]} ({self.image}{ago})"


def parse_events(text: str) -> list[Event]:
    out = []
    for obj in _json_lines(text, "docker events"):
        actor = a if isinstance(a := obj.get("Actor"), dict) else {}
        attrs = at if isinstance(at := actor.get("Attributes"), dict) else {}
        t = obj.get("time")
        if not isinstance(t, int):
            nano = obj.get("timeNano")
            t = int(nano) // 10**9 if isinstance(nano, int) else 0
        out.append(Event(str(obj.get("Action") or obj.get("status") or ""), str(obj.get("Type") or "container"),
                         str(actor.get("ID") or obj.get("id") or ""), str(attrs.get("name", "")),
                         str(attrs.get("image") or obj.get("from") or ""), t))
    return out


@dataclass(frozen=True)
class Inspect:
    id: str
    name: str
    status: str            # State.Status
    running: bool          # State.Running
    exit_code: int | None
    image: str             # Config.Image: the tag it was created from
    image_id: str          # Image: the sha256 it runs
    network_mode: str      # HostConfig.NetworkMode
    devices: tuple[str, ...] = field(default=())  # HostConfig.Devices[].PathOnHost
    env: tuple[str, ...] = field(default=())      # Config.Env, "K=V"
    started_at: str = ""

    def env_dict(self) -> dict[str, str]:
        out = {}
        for kv in self.env:
            k, sep, v = kv.partition("=")
            if sep:
                out[k] = v
        return out


def parse_inspect(text: str) -> Inspect | None:
    """`docker inspect` JSON -> the container, or None for `[]` (no such container)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise DockerOutputError(f"docker inspect printed no JSON ({e.msg}): {text.strip()[:120]!r}") from None
    if isinstance(data, list):
        if not data:
            return None
        data = data[0]
    if not isinstance(data, dict):
        raise DockerOutputError(f"docker inspect: expected an object, got {type(data).__name__}")
    state = st if isinstance(st := data.get("State"), dict) else {}
    cfg = c if isinstance(c := data.get("Config"), dict) else {}
    hc = h if isinstance(h := data.get("HostConfig"), dict) else {}
    devices = tuple(str(d.get("PathOnHost", "")) for d in (hc.get("Devices") or []) if isinstance(d, dict))
    return Inspect(str(data.get("Id", "")), str(data.get("Name", "")).lstrip("/"), str(state.get("Status", "")),
                   bool(state.get("Running")), state.get("ExitCode"), str(cfg.get("Image", "")),
                   str(data.get("Image", "")), str(hc.get("NetworkMode", "")), devices,
                   tuple(str(e) for e in (cfg.get("Env") or [])), str(state.get("StartedAt", "")))


def _docker(host: NodeAccess, args: list[str], timeout: float = 60) -> str:
    """Run a docker CLI command; a daemon or permission problem is 'could not observe'."""
    res = host.run(["docker", *args], timeout=timeout)
    if res.rc == 127:
        raise ToolMissing(host.name, "docker", None, res.came_back())
    if not res.ok:
        raise CouldNotObserve(f"{host.name}: `docker {args[0]}` failed: {_docker_words(res)}")
    return res.stdout


def _docker_words(res: Result) -> str:
    """What docker itself said about the failure (stderr, else stdout), with its exit status."""
    said = " / ".join(ln.strip() for ln in (res.stderr.strip() or res.stdout.strip()).splitlines() if ln.strip())
    return f"rc={res.rc}: {said[:400]}" if said else f"rc={res.rc}, nothing printed"


def ps_all(host: NodeAccess) -> tuple[list[PsRow], str]:
    out = _docker_whole(host, PS[1:])
    if not out.strip():
        # No container at all is only evidence when the daemon is known to have answered: docker
        # answered whole (its exit 0, then the end marker) and names its server.
        version = _docker(host, ["version", "--format", "{{.Server.Version}}"]).strip()
        if not re.fullmatch(r"\d+\.\d+[\w.+~-]*", version):
            raise UnrecognisedOutput(f"node {host.name}: `docker ps -a` printed nothing and `docker version` "
                                     "names no server: the daemon's answer was not seen")
        return [], f"(no containers; docker server {version})"
    try:
        return parse_ps(out), out
    except DockerOutputError as e:
        raise CouldNotObserve(f"{host.name}: {e}") from None


_END = "__rackgate_end__"


def _docker_whole(host: NodeAccess, args: list[str], timeout: float = 60) -> str:
    """A docker command whose empty output is an answer (no container, no event): a marker echoed
    after docker's own output tells "nothing to list" from a reply that never came whole."""
    res = host.shell('e="$1"; shift; docker "$@"; rc=$?; echo "$e"; exit $rc', _END, *args, timeout=timeout)
    if res.rc == 127:
        raise ToolMissing(host.name, "docker", None, res.came_back())
    if not res.ok:
        raise CouldNotObserve(f"{host.name}: `docker {args[0]}` failed: {_docker_words(res)}")
    if not res.stdout.endswith(_END + "\n"):
        raise UnrecognisedOutput(f"{host.name}: `docker {args[0]}` did not answer whole: {res.came_back()}")
    return res.stdout.removesuffix(_END + "\n")


def recent_creates(host: NodeAccess, since: str) -> tuple[list[Event], str]:
    out = _docker_whole(host, ["events", "--since", since, "--until", "0s", "--filter", "event=create",
                               "--format", "{{json .}}"])
    try:
        return [e for e in parse_events(out) if e.type == "container"], out
    except DockerOutputError as e:
        raise CouldNotObserve(f"{host.name}: {e}") from None


def inspect(host: NodeAccess, name: str) -> tuple[Inspect | None, str]:
    """The container's configuration, or None when no container has that name."""
    res = host.run(["docker", "inspect", "--type", "container", name], timeout=60)
    if res.rc == 127:
        raise ToolMissing(host.name, "docker", None, res.came_back())
    if not res.ok and "No such" in res.stderr:
        return None, res.evidence()
    if not res.ok:
        raise CouldNotObserve(f"{host.name}: `docker inspect` failed: {_docker_words(res)}")
    try:
        return parse_inspect(res.stdout), res.stdout
    except DockerOutputError as e:
        raise CouldNotObserve(f"{host.name}: {e}") from None


def ours(on: On) -> tuple[Inspect | None, str]:
    """PLAT-CONTAINER's probe: `docker inspect` of the rack file's container (None: no such container)."""
    return inspect(on.host, on.rack.container)


@dataclass(frozen=True)
class Occupancy:
    """PLAT-FREE's facts: every container, the recent create events, and who holds /dev/kfd
    (pid -> (its process, its container id)), read at `now` (this machine's clock)."""
    rows: list[PsRow]
    ps_raw: str
    events: list[Event]
    events_raw: str
    kfd_users: dict[int, tuple[procs.Proc | None, str | None]]
    now: float
    listening: list[tcp.Listener] = field(default_factory=list)  # the node's listening TCP sockets


def occupancy(on: On) -> Occupancy:
    host, since = on.host, on.rack.platform.free_events_since
    rows, ps_raw = ps_all(host)
    events, ev_raw = recent_creates(host, since)
    kfd = procs.kfd_pids(host)
    table = procs.processes(host) if kfd else {}
    cids = procs.containers_of(host, kfd) if kfd else {}
    return Occupancy(rows, ps_raw, events, ev_raw, {pid: (table.get(pid), cids.get(pid)) for pid in kfd}, time.time(),
                     tcp.listeners(host))

