"""ps: the processes of this simulated node, as `ps -eo FIELDS [--no-headers]` prints them.

All sim nodes share this machine, so a node's processes are the real ones started with its
environment (RACKGATE_SIM_NODE), e.g. the ubench07 tools with their real PIDs. Fields: pid,
ppid, pgid, stat, comm, args (others print '-').

The product's forms (`ps [-ww] -eo FIELDS [--no-headers]`, ~40 a fabric run: FAB-LEFTOVER's scan
and ubench07's own tools around every round) are answered by the node's launcher without starting
Python (`front`): the system's grep finds the node's processes by their environment, the system's
procps `ps` prints them (`-o FIELDS -p PIDS`), in the real tool's own layout.
"""
import os
import sys

WIDTH = {"pid": 7, "ppid": 7, "pgid": 7}
HEAD = {"pid": "PID", "ppid": "PPID", "pgid": "PGID", "stat": "STAT", "comm": "COMMAND", "args": "COMMAND"}


def sim_pids(rack_dir: str) -> list[int]:
    """Every live process started on a node of the sim laid out in rack_dir (its environment names
    one of that sim's nodes): what the sim's stop() ends, as powering its nodes off would."""
    prefix = b"RACKGATE_SIM_NODE=" + rack_dir.rstrip("/").encode() + b"/"
    out = []
    for pid in _pids():
        try:
            if any(v.startswith(prefix) for v in _read(pid, "environ").split(b"\0")):
                out.append(int(pid))
        except OSError:
            continue
    return out


def _pids() -> list[str]:
    return [d for d in os.listdir("/proc") if d.isdigit()]


def _read(pid: str, what: str) -> bytes:
    with open(f"/proc/{pid}/{what}", "rb") as f:
        return f.read()


def _procs(me: str):
    for pid in _pids():
        try:
            env = _read(pid, "environ").split(b"\0")
            if f"RACKGATE_SIM_NODE={me}".encode() not in env:
                continue
            cmd = _read(pid, "cmdline").rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
            stat = _read(pid, "stat").decode(errors="replace")
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2:].split()
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        yield {"pid": pid, "stat": rest[0], "ppid": rest[1], "pgid": rest[2], "comm": comm, "args": cmd or f"[{comm}]"}


def front(node) -> str:
    """What the node's `ps` launcher runs before it starts this module: `-eo FIELDS` (joined or not),
    with -ww and --no-headers or without, as the system's ps of this node's processes; any other
    form goes on to the module, and so does a field with a header of its own (`pid=`: this module
    prints '-' for it, which attach mode's self-tests read as no serving process; the real ps would
    name it). Nothing when this machine has no ps or grep."""
    import shlex
    import shutil
    ps, grep = shutil.which("ps"), shutil.which("grep")
    if not ps or not grep:
        return ""
    ps, grep = shlex.quote(ps), shlex.quote(grep)
    return (
        'fast=; for a do case $a in *=*) fast=; break;; -eo) fast=1;; -eo?*) fast=1;; -ww|--no-headers) ;;'
        ' -*) fast=; break;; esac; done\n'
        'if [ -n "$fast" ]; then\n'
        '  for a do shift; case $a in -eo) set -- "$@" -o;; -eo?*) set -- "$@" "-o${a#-eo}";; *) set -- "$@" "$a";; esac; done\n'
        f'  pids=; for f in $({grep} -lzxF "RACKGATE_SIM_NODE=$RACKGATE_SIM_NODE" /proc/[0-9]*/environ 2>/dev/null); do '
        'p=${f#/proc/}; pids="$pids,${p%/environ}"; done\n'
        f'  exec {ps} "$@" -p "${{pids#,}}"\n'
        "fi\n")


def main() -> None:
    args = sys.argv[1:]
    fields = ["pid", "args"]
    if "-o" in args:
        fields = args[args.index("-o") + 1].split(",")
    elif any(a.startswith("-eo") and len(a) > 3 for a in args):
        fields = next(a for a in args if a.startswith("-eo"))[3:].split(",")
    elif "-eo" in args:
        fields = args[args.index("-eo") + 1].split(",")
    rows = sorted(_procs(os.environ["RACKGATE_SIM_NODE"]), key=lambda p: int(p["pid"]))
    def fmt(vals):
        return " ".join(str(v).rjust(WIDTH[f]) if f in WIDTH else str(v) for f, v in zip(fields, vals))
    if "--no-headers" not in args and "h" not in args:
        print(fmt([HEAD.get(f, f.upper()) for f in fields]))
    for r in rows:
        print(fmt([r.get(f, "-") for f in fields]))


if __name__ == "__main__":
    main()
