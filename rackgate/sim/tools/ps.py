"""ps: the processes of this simulated node, as `ps -eo FIELDS [--no-headers]` prints them.

All sim nodes share this machine, so a node's processes are the real ones started with its
environment (RACKGATE_SIM_NODE), e.g. the ubench07 tools with their real PIDs. Fields: pid,
ppid, pgid, stat, comm, args (others print '-').
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
