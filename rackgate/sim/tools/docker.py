"""docker: the subcommands the suite uses, with the real CLI's output formats and errors.

    docker exec [-i] [-e K=V]... NAME cmd...      runs cmd here, in the container's environment
    docker ps -a [--no-trunc] [--size=false] [--format TEMPLATE]
    docker events --since 30m --until 0s [--filter event=create] [--format TEMPLATE]
    docker inspect [--type container] NAME...
    docker version [--format TEMPLATE]

The node's containers are ours (state["container"], node["plat"]["own"]) and the foreign ones
in node["plat"]["foreign"]. Inside our container, paths live under the node's container root:
`exec` puts its usr/local/bin first on PATH and the container's Python path entries (mapped
under that root) first on PYTHONPATH, so `python3 -c "import atom"` imports the container's
ATOM tree.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import sys
import time
from pathlib import Path

from ..nodeview import load, node_dir, this_node

EXE = "docker"
_VALUE_OPTS = {"-e", "--env", "-u", "--user", "-w", "--workdir", "--env-file", "--format", "-f", "--filter",
               "--since", "--until", "--type", "--detach-keys"}


def _die(msg: str, rc: int = 1) -> None:
    print(msg, file=sys.stderr)
    sys.exit(rc)


def _containers(node_name: str, node: dict, st: dict) -> dict[str, dict]:
    """name -> a uniform record for every container on the node."""
    plat = node.get("plat") or {}
    out = {}
    own = plat.get("own")
    if own is not None and st.get("container"):
        out[st["container"]] = {**own, "name": st["container"], "image": own.get("image") or st.get("image") or "",
                                "own": True}
    for c in plat.get("foreign", []):
        out[c["name"]] = {"network_mode": "host", "devices": ["/dev/kfd", "/dev/dri"], "exit_code": 0,
                          "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                          **c, "own": False}
    return out


def _human(seconds: float) -> str:
    """go-units HumanDuration, as docker prints 'Up 5 minutes' / '2 hours ago'."""
    s = int(seconds)
    if s < 1:
        return "Less than a second"
    if s == 1:
        return "1 second"
    if s < 60:
        return f"{s} seconds"
    m = s // 60
    if m == 1:
        return "About a minute"
    if m < 60:
        return f"{m} minutes"
    h = int(seconds / 3600 + 0.5)
    if h == 1:
        return "About an hour"
    if h < 48:
        return f"{h} hours"
    if h < 24 * 7 * 2:
        return f"{h // 24} days"
    return f"{h // (24 * 7)} weeks"


def _status(c: dict, now: float) -> str:
    state = c.get("status", "running")
    if state == "running":
        return f"Up {_human(now - c.get('started', c['created']))}"
    if state == "exited":
        return f"Exited ({c.get('exit_code', 0)}) {_human(now - c.get('finished', c['created']))} ago"
    if state == "created":
        return "Created"
    return state.capitalize()


def _go_time(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %z %Z", time.localtime(epoch))


def _rfc3339(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + f".{int((epoch % 1) * 1e9):09d}Z"


def _render(fmt: str | None, obj: dict) -> str:
    """The subset of Go templates the suite and the runbook use: {{json .}} and {{.Field}}."""
    if fmt is None or fmt.strip() == "{{json .}}":
        return json.dumps(obj, separators=(",", ":"))

    def field(m):
        val = obj
        for part in m.group(1).split("."):
            val = val.get(part, "") if isinstance(val, dict) else ""
        return str(val)
    return re.sub(r"\{\{\s*\.([A-Za-z.]+)\s*\}\}", field, fmt.replace("\\t", "\t"))


def _opts(args: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    opts: dict[str, list[str]] = {}
    rest = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and "=" in a:
            k, _, v = a.partition("=")
            opts.setdefault(k, []).append(v)
        elif a in _VALUE_OPTS and i + 1 < len(args):
            opts.setdefault(a, []).append(args[i + 1])
            i += 1
        elif a.startswith("-") and len(rest) == 0:
            opts.setdefault(a, []).append("")
        else:
            rest.append(a)
        i += 1
    return opts, rest


def ps(args: list[str]) -> None:
    name, node, st = this_node()
    opts, _ = _opts(args)
    show_all = "-a" in opts or "--all" in opts
    trunc = "--no-trunc" not in opts
    now = time.time()
    fmt = (opts.get("--format") or [None])[-1]
    rows = []
    for c in _containers(name, node, st).values():
        if not show_all and c.get("status", "running") != "running":
            continue
        cid = c["id"][:12] if trunc else c["id"]
        rows.append((c["created"], {
            "Command": json.dumps("sleep infinity" if c.get("own") else c.get("command", "python3 serve.py")),
            "CreatedAt": _go_time(c["created"]), "ID": cid, "Image": c["image"], "Labels": "",
            "LocalVolumes": "0", "Mounts": "", "Names": c["name"],
            "Networks": c.get("network_mode") or "bridge", "Ports": "",  # the network's name: host, none, ...
            "RunningFor": f"{_human(now - c['created'])} ago", "Size": "0B",
            "State": c.get("status", "running"), "Status": _status(c, now)}))
    if fmt is None:
        print(f"{'CONTAINER ID':<15}{'IMAGE':<48}{'CREATED':<18}{'STATUS':<24}NAMES")
        for _, r in sorted(rows, key=lambda x: -x[0]):
            print(f"{r['ID'][:12]:<15}{r['Image']:<48}{r['RunningFor']:<18}{r['Status']:<24}{r['Names']}")
        return
    for _, r in sorted(rows, key=lambda x: -x[0]):
        print(_render(fmt, r))


def _since(value: str, now: float) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(s|m|h)", value)
    if m:
        return now - float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)]
    try:
        return float(value)
    except ValueError:
        _die(f'invalid value for "since": failed to parse value as time or duration: "{value}"')


def events(args: list[str]) -> None:
    name, node, st = this_node()
    opts, _ = _opts(args)
    now = time.time()
    if "--until" not in opts:
        _die("docker events: the simulated rack only answers bounded queries (give --until)", 2)
    since = _since((opts.get("--since") or ["0"])[-1], now)
    until = _since(opts["--until"][-1], now)
    wanted = {f.partition("=")[2] for f in opts.get("--filter", []) + opts.get("-f", []) if f.startswith("event=")}
    fmt = (opts.get("--format") or [None])[-1]
    evs = []
    for c in [*_containers(name, node, st).values(), *(node.get("plat") or {}).get("removed_creates", [])]:
        t = c["created"]
        if since <= t <= until and (not wanted or "create" in wanted):
            evs.append({"status": "create", "id": c["id"], "from": c["image"], "Type": "container",
                        "Action": "create",
                        "Actor": {"ID": c["id"], "Attributes": {"image": c["image"], "name": c["name"]}},
                        "scope": "local", "time": int(t), "timeNano": int(t * 1e9)})
    for e in sorted(evs, key=lambda e: e["timeNano"]):
        if fmt is None:
            ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(e["time"]))
            print(f"{ts}.000000000{time.strftime('%z')} container create {e['id']} "
                  f"(image={e['from']}, name={e['Actor']['Attributes']['name']})")
        else:
            print(_render(fmt, e))


def image_id(c: dict) -> str:
    """The image's content id: one per image, the same on every node that runs it (a container
    record may carry its own, "image_id", when a fault puts a different build under the tag)."""
    return c.get("image_id") or "sha256:" + hashlib.sha256(f"rackgate-sim-image:{c['image']}".encode()).hexdigest()


def _inspect_obj(c: dict) -> dict:
    running = c.get("status", "running") == "running"
    return {
        "Id": c["id"],
        "Created": _rfc3339(c["created"]),
        "Path": "sleep" if c.get("own") else "python3",
        "Args": ["infinity"] if c.get("own") else ["serve.py"],
        "State": {"Status": c.get("status", "running"), "Running": running, "Paused": False,
                  "Restarting": False, "OOMKilled": False, "Dead": False, "Pid": c.get("pid", 0) if running else 0,
                  "ExitCode": c.get("exit_code", 0), "Error": "",
                  "StartedAt": _rfc3339(c.get("started", c["created"] + 1)),
                  "FinishedAt": _rfc3339(c["finished"]) if "finished" in c else "0001-01-01T00:00:00Z"},
        "Image": image_id(c),
        "Name": "/" + c["name"],
        "RestartCount": 0,
        "Driver": "overlay2",
        "HostConfig": {
            "NetworkMode": c.get("network_mode", "host"),
            "IpcMode": "host", "PidMode": "host", "Privileged": False, "ShmSize": 137438953472,
            "CapAdd": ["SYS_PTRACE", "SYS_ADMIN"], "GroupAdd": ["39", "105"],
            "SecurityOpt": ["seccomp=unconfined"],
            "Devices": [{"PathOnHost": d, "PathInContainer": d, "CgroupPermissions": "rwm"}
                        for d in c.get("devices", [])],
        },
        "Config": {"Hostname": "sim", "Image": c["image"], "Env": c.get("env", []),
                   "Cmd": ["infinity"] if c.get("own") else ["serve.py"],
                   "Entrypoint": ["sleep"] if c.get("own") else ["python3"], "WorkingDir": "/app"},
        "NetworkSettings": {"Networks": {c.get("network_mode", "host"): {}}},
    }


def inspect(args: list[str]) -> None:
    name, node, st = this_node()
    opts, names = _opts(args)
    kind = (opts.get("--type") or ["object"])[-1]
    cs = _containers(name, node, st)
    found, missing = [], []
    for n in names:
        c = cs.get(n) or next((x for x in cs.values() if x["id"].startswith(n)), None)
        (found.append(_inspect_obj(c)) if c else missing.append(n))
    print(json.dumps(found, indent=4))
    for n in missing:
        print(f"Error: No such {kind}: {n}", file=sys.stderr)
    sys.exit(1 if missing else 0)


# `docker exec` is a shell script, not this module: a suite run makes a hundred of them, and an
# interpreter's start-up is most of each. The node's launcher runs the script in front of this
# module (`front`, written by rackgate/sim/render.py) and `exec_` hands it to sh, so both ways in
# run the one script. Its own variables are __rg_*, unset before the command runs.
#
# The options: -e/--env values are moved behind the arguments (exported last, over the
# container's own environment, as docker applies them; `-e VAR` passes this side's value, or
# nothing when it is unset); the other options are read and ignored.
_EXEC_OPTS = r'''__rg_n=$#; __rg_e=0
while [ "$__rg_n" -gt 0 ]; do
  case $1 in
    -e|--env) [ "$__rg_n" -gt 1 ] || break; __rg_a=$2; shift 2; __rg_n=$((__rg_n - 2))
      case $__rg_a in
        *=*) ;;
        [A-Za-z_]*) eval "__rg_s=\${$__rg_a+x}"; [ "$__rg_s" = x ] || continue; eval "__rg_a=\"\$__rg_a=\$$__rg_a\"";;
        *) continue;;
      esac
      set -- "$@" "$__rg_a"; __rg_e=$((__rg_e + 1));;
    --env=*) set -- "$@" "${1#--env=}"; shift; __rg_n=$((__rg_n - 1)); __rg_e=$((__rg_e + 1));;
    -u|--user|-w|--workdir|--env-file|--detach-keys) [ "$__rg_n" -gt 1 ] || break; shift 2; __rg_n=$((__rg_n - 2));;
    -?*) shift; __rg_n=$((__rg_n - 1));;
    *) break;;
  esac
done
if [ "$__rg_n" -lt 1 ]; then echo '"docker exec" requires at least 2 arguments.' >&2; exit 1; fi
[ -n "$1" ] || { echo "invalid container name or ID: value is empty" >&2; exit 1; }
'''
_EXEC_RUN = r'''__rg_i=$((__rg_n - 1)); shift
while [ "$__rg_i" -gt 0 ]; do set -- "$@" "$1"; shift; __rg_i=$((__rg_i - 1)); done
while [ "$__rg_e" -gt 0 ]; do case $1 in [A-Za-z_]*=*) export "$1";; esac; shift; __rg_e=$((__rg_e - 1)); done
if [ $# -lt 1 ]; then echo '"docker exec" requires at least 2 arguments.' >&2; exit 1; fi
__rg_f=; set -f
case $1 in
  */*) [ -f "$1" ] && [ -x "$1" ] && __rg_f=1;;
  *) IFS=:; for __rg_d in $PATH; do [ -f "${__rg_d:-.}/$1" ] && [ -x "${__rg_d:-.}/$1" ] && { __rg_f=1; break; }; done
     unset IFS;;
esac
set +f
if [ -z "$__rg_f" ]; then
  # as real docker answers it: rc 126, the runtime's words on stdout (stderr stays empty)
  printf 'OCI runtime exec failed: exec failed: unable to start container process: exec: "%s": %s\n' "$1" \
    'executable file not found in $PATH: unknown'
  exit 126
fi
unset __rg_n __rg_e __rg_a __rg_s __rg_i __rg_f __rg_d
exec "$@"
'''
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def exec_script(croot: str, name: str, node: dict, st: dict) -> str:
    """`docker exec [OPTIONS] CONTAINER CMD...` as a sh script over "$@" (exec's own arguments),
    with the node's containers (`_containers`) written in as a `case` on the name: a stopped one
    refuses, ours gets its environment and the container root's PATH and PYTHONPATH."""
    q = shlex.quote
    arms = []
    for cname, c in _containers(name, node, st).items():
        if c.get("status", "running") != "running":
            body = f"echo {q('Error response from daemon: container ' + c['id'] + ' is not running')} >&2; exit 1"
        elif c.get("own"):
            lines = [f"export {q(kv)}" for kv in c.get("env", [])
                     if kv.partition("=")[0] not in ("PATH", "PYTHONPATH") and _NAME.fullmatch(kv.partition("=")[0])]
            lines.append(f'export PATH={q(croot + "/usr/local/bin")}:"$PATH"')
            pp = os.pathsep.join(f"{croot}{p}" for p in c.get("pythonpath", []))
            lines.append(f'export PYTHONPATH={q(pp)}"${{PYTHONPATH:+:$PYTHONPATH}}"' if pp
                         else 'export PYTHONPATH="${PYTHONPATH-}"')
            body = "; ".join(lines)
        else:
            body = ":"
        arms.append(f"  {q(cname)}) {body};;\n")
    if st.get("container"):
        arms.append('  *) echo "Error response from daemon: No such container: $1" >&2; exit 1;;\n')
    table = "case $1 in\n" + "".join(arms) + "esac\n" if arms else ""
    return _EXEC_OPTS + table + _EXEC_RUN


def exec_(args: list[str]) -> None:
    name, node, st = this_node()
    os.execvp("sh", ["sh", "-c", exec_script(str(node_dir() / "container"), name, node, st), "docker", *args])


def front(node: Path) -> str:
    """What the node's `docker` launcher runs before it starts this module: `exec`, whole."""
    st = load(node.parent)
    script = exec_script(str(node / "container"), node.name, st["nodes"][node.name], st)
    return f'if [ "$1" = exec ]; then\nshift\n{script}fi\n'


SERVER_VERSION = "20.10.24+dfsg1"  # Debian 12's docker.io


def version(args: list[str]) -> None:
    """`docker version [--format TEMPLATE]`: the client and the (simulated) daemon."""
    opts, _ = _opts(args)
    fmt = (opts.get("--format") or opts.get("-f") or [None])[-1]
    obj = {"Client": {"Version": SERVER_VERSION, "ApiVersion": "1.41", "Os": "linux", "Arch": "amd64"},
           "Server": {"Version": SERVER_VERSION, "ApiVersion": "1.41", "MinAPIVersion": "1.12", "Os": "linux",
                      "Arch": "amd64", "Components": [{"Name": "Engine", "Version": SERVER_VERSION}]}}
    if fmt is not None:
        print(_render(fmt, obj))
        return
    print(f"Client:\n Version:           {SERVER_VERSION}\n API version:       1.41\n\n"
          f"Server:\n Engine:\n  Version:          {SERVER_VERSION}\n  API version:      1.41 (minimum version 1.12)")


SUBCOMMANDS = {"exec": exec_, "ps": ps, "events": events, "inspect": inspect, "version": version}


def main() -> None:
    args = sys.argv[1:]
    sub = args[0] if args else ""
    if sub == "container" and len(args) > 1:  # `docker container inspect ...`
        args, sub = args[1:], args[1]
    handler = SUBCOMMANDS.get(sub)
    if handler is None:
        _die(f"docker: '{sub}' is not simulated (the sim answers: {', '.join(SUBCOMMANDS)})", 2)
    handler(args[1:])


if __name__ == "__main__":
    main()
