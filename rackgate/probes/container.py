"""Facts from inside the ATOM container (through `docker exec`): file sizes, a grep count, what
Python imports, which tools exist. Every function takes the container's NodeAccess (node.container()),
so paths are container paths and the probe never knows whether the node is simulated.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from ..access import NodeAccess, Result
from ..errors import CouldNotObserve, ToolMissing, UnrecognisedOutput
from . import docker
from .target import On

_MISSING = "__rackgate_missing__"
# The last line of a Python traceback: "AttributeError: module 'x' has no attribute 'y'"
_EXC = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): ?(.*)$")


def parse_sizes(text: str) -> dict[str, int | None]:
    """Lines of `stat -c '%s %n'` and '<missing marker> <path>' -> {path: size or None}."""
    out: dict[str, int | None] = {}
    for line in text.splitlines():
        head, _, path = line.strip().partition(" ")
        if head == _MISSING and path:
            out[path] = None
        elif head.isdecimal() and path:
            out[path] = int(head)
    return out


# Each path "$@" after the missing marker "$1": `SIZE PATH`, or `MARKER PATH` when it is absent.
_STAT_SCRIPT = 'm="$1"; shift; for p; do if [ -e "$p" ]; then stat -c "%s %n" -- "$p"; else echo "$m $p"; fi; done'


def _sizes_from(host: NodeAccess, paths: list[str], text: str, stderr: str) -> tuple[dict[str, int | None], str]:
    got = {host.node_path(k): v for k, v in parse_sizes(text).items()}
    missing = [p for p in paths if p not in got]
    if missing:
        raise CouldNotObserve(f"{host.name}: stat printed nothing for {', '.join(missing)}: {stderr.strip()[:200]}")
    return got, host.node_text(text)


def sizes(host: NodeAccess, paths: list[str]) -> tuple[dict[str, int | None], str]:
    """Byte sizes of files (None: missing), keyed by container path; plus the raw output."""
    res = host.shell(_STAT_SCRIPT, _MISSING, *map(host.path, paths), timeout=60)
    return _sizes_from(host, paths, res.stdout, res.stderr)


def count_entries(host: NodeAccess, directory: str) -> int | None:
    """Entries in a directory (`ls -A | wc -l`), None when it does not exist."""
    res = host.shell('if [ -d "$1" ]; then ls -A -- "$1" | wc -l; else echo "$2"; fi', host.path(directory), _MISSING,
                     timeout=60)
    out = res.stdout.strip()
    if out == _MISSING:
        return None
    if res.ok and out.isdecimal():
        return int(out)
    raise CouldNotObserve(f"{host.name}: cannot list {directory}: {res.stderr.strip()[:200]}")


@dataclass(frozen=True)
class PyResult:
    """What a `python3 -c` printed: its last stdout line, or the exception it died of."""
    rc: int
    value: str | None
    error: str | None   # "AttributeError: module 'atom.utils.envs' has no attribute ..."

    def summary(self) -> str:
        return self.error if self.error else repr(self.value)


def parse_python(rc: int, stdout: str, stderr: str) -> PyResult:
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    error = None
    if rc != 0:
        for ln in reversed(stderr.splitlines()):
            if m := _EXC.match(ln.strip()):
                error = f"{m.group(1)}: {m.group(2)}".rstrip(": ")
                break
        else:
            tail = (stderr.strip().splitlines() or [f"exit status {rc}"])[-1]
            error = tail
    return PyResult(rc, lines[-1].strip() if lines else None, error)


def _python_cmd(code: str, python_exe: str, env: dict[str, str] | None, unset: tuple[str, ...]) -> list[str]:
    """argv: `python3 -c CODE`, through env(1) when variables are set (literally) or unset for it."""
    if not env and not unset:
        return [python_exe, "-c", code]
    return ["env", *[w for v in unset for w in ("-u", v)], *[f"{k}={v}" for k, v in (env or {}).items()],
            python_exe, "-c", code]


def _no_docker(host: NodeAccess, res: Result) -> None:
    """The command never reached the container because docker itself is missing on the node."""
    if res.rc == 127 and "docker" in res.stderr and not res.stdout.strip():
        raise ToolMissing(host.name.partition("/")[0], "docker", None, res.came_back())


def python(host: NodeAccess, code: str, python_exe: str = "python3", env: dict[str, str] | None = None,
           unset: tuple[str, ...] = ()) -> tuple[PyResult, str]:
    """Run `python3 -c CODE` in the container, with some variables set or unset for it only."""
    cmd = _python_cmd(code, python_exe, env, unset)
    res = host.run(cmd, timeout=120)
    if res.rc == 127 and not res.stdout:
        _no_docker(host, res)
        raise ToolMissing(host.name, python_exe, "platform.container_python", res.came_back())
    got = parse_python(res.rc, res.stdout, res.stderr)
    if got.rc != 0 and not any(_EXC.match(ln.strip()) for ln in res.stderr.splitlines()):
        # no Python exception in what came back: python did not say why, so nothing was learnt
        raise CouldNotObserve(f"node {host.name}: `{python_exe} -c ...` exited {res.rc} without a Python "
                              f"exception: {res.came_back()}")
    if got.rc == 0 and got.value is None:
        raise UnrecognisedOutput(f"{host.name}: `{python_exe} -c ...` exited 0 but printed nothing")
    return got, res.evidence()


_RUN = "__rackgate_run__"


def split_runs(text: str) -> list[tuple[int, str]]:
    """Output of several commands, each followed by '<marker> <rc>' (stdout and stderr merged
    per command) -> [(rc, output)]."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    for line in text.splitlines(keepends=True):
        head, _, rc = line.strip().partition(" ")
        if head == _RUN and rc.lstrip("-").isdecimal():
            out.append((int(rc), "".join(buf)))
            buf = []
        else:
            buf.append(line)
    return out


def python_variants(host: NodeAccess, code: str, variants: list[tuple[dict[str, str], tuple[str, ...]]],
                    python_exe: str = "python3") -> tuple[list[PyResult], str]:
    """`python3 -c CODE` once per (env to set, vars to unset), in ONE docker exec."""
    cmds = [_python_cmd(code, python_exe, env, unset) for env, unset in variants]
    # One fixed function runs each argv; the script names only argument positions, never values.
    words: list[str] = []
    script, at = f'r() {{ "$@" 2>&1; echo {_RUN} $?; }}', 1
    for c in cmds:
        script += "; r " + " ".join(f'"${{{i}}}"' for i in range(at, at + len(c)))
        words, at = words + c, at + len(c)
    res = host.shell(script, *words, timeout=120)
    runs = split_runs(res.stdout)
    if not runs:
        _no_docker(host, res)
    if len(runs) != len(cmds):
        raise CouldNotObserve(f"{host.name}: {len(runs)} of {len(cmds)} python runs reported back: "
                              f"{(res.stderr or res.stdout).strip()[-200:]}")
    results = []
    for rc, out in runs:
        if rc == 127:  # sh: "python3: not found"; env: "'python3': No such file or directory"
            raise CouldNotObserve(f"{host.name}: {python_exe} not found in the container: {out.strip()[-160:]}")
        # merged output: on success the value is the last line; on failure the traceback's end
        results.append(parse_python(rc, out if rc == 0 else "", out))
        if rc == 0 and results[-1].value is None:
            raise UnrecognisedOutput(f"{host.name}: `{python_exe} -c ...` exited 0 but printed nothing")
    shown = "\n".join(f"$ {shlex.join(c)}\n{out}(rc={rc})" for c, (rc, out) in zip(cmds, runs))
    return results, shown


def sizes_and_count(host: NodeAccess, paths: list[str], pattern: str,
                    grep_path: str) -> tuple[dict[str, int | None], int | None, str]:
    """sizes(), and `grep -c PATTERN FILE` (None when the file is missing), in one docker exec."""
    res = host.shell('r="$1" pat="$2" g="$3"; shift 3; ' + _STAT_SCRIPT + '; echo "$r 0"; '
                     'if [ -e "$g" ]; then grep -c -- "$pat" "$g"; else echo "$m"; fi; echo "$r $?"',
                     _RUN, pattern, host.path(grep_path), _MISSING, *map(host.path, paths), timeout=60)
    runs = split_runs(res.stdout)
    if len(runs) != 2:
        raise CouldNotObserve(f"{host.name}: stat/grep in the container failed: {res.stderr.strip()[:200]}")
    got, shown = _sizes_from(host, paths, runs[0][1], res.stderr)
    rc, out = runs[1]
    out = out.strip()
    if out == _MISSING:
        count = None
    elif rc in (0, 1) and out.isdecimal():
        count = int(out)
    else:
        raise CouldNotObserve(f"{host.name}: grep -c on {grep_path} failed (rc={rc}): {out[:200]}")
    return got, count, shown


def environment(host: NodeAccess) -> dict[str, str]:
    """The environment a process started on the host gets (`env -0`)."""
    res = host.run(["env", "-0"], timeout=30)
    if not res.ok:
        raise CouldNotObserve(f"{host.name}: `env -0` failed (rc={res.rc}): {res.stderr.strip()[:200]}")
    return dict(kv.partition("=")[::2] for kv in res.stdout.split("\0") if "=" in kv)


def which(host: NodeAccess, tool: str) -> str | None:
    """The tool's path on the container's PATH, or None."""
    res = host.shell('command -v "$1"; echo __rackgate_asked__', tool, timeout=30)
    if "__rackgate_asked__" not in res.stdout:
        # The shell in the container never ran (docker missing, exec refused): nothing was asked.
        _no_docker(host, res)
        raise CouldNotObserve(f"{host.name}: could not ask for {tool} in the container (rc={res.rc}): "
                              f"{res.came_back()}")
    found = [ln for ln in res.stdout.splitlines() if ln.strip() and ln.strip() != "__rackgate_asked__"]
    path = found[-1].strip() if found else None
    return host.node_path(path) if path else None


def node_path(host: NodeAccess, path: str) -> str:
    """A path a command printed, as a container path."""
    return host.node_path(path)


def tools(on: On) -> dict[str, str | None]:
    """PLAT-TOOLS' probe: `command -v` of each of platform.container_tools in the container (None: not found)."""
    ch = on.container()
    return {t: which(ch, t) for t in on.rack.platform.container_tools}


def atom_root(on: On) -> str:
    """The patched ATOM tree: the rack file's atom_path, else the tree python imports (as the
    runbook derives ATOM_ROOT)."""
    if on.rack.atom_path:
        return on.rack.atom_path.rstrip("/")
    ch = on.container()
    got, _ = python(ch, "import atom, os; print(os.path.dirname(os.path.dirname(atom.__file__)))",
                    on.rack.platform.container_python)
    if got.error or not got.value:
        raise CouldNotObserve(f"{on.node}: no atom_path in the rack file and `import atom` fails: {got.summary()}")
    return node_path(ch, got.value)


@dataclass(frozen=True)
class PatchFiles:
    """PLAT-PATCH-SIZE's facts: the sizes of the patched files (None: missing) and the grep count."""
    want: dict[str, int]        # container path -> the size the patch gives it
    got: dict[str, int | None]
    grep_path: str
    count: int | None           # None: the file is missing
    shown: str


def patch_files(on: On) -> PatchFiles:
    p = on.rack.platform
    root = atom_root(on)
    want = {f"{root}/{rel}": size for rel, size in p.patch_files.items()}
    grep_path = f"{root}/{p.patch_grep_file}"
    got, count, raw = sizes_and_count(on.container(), list(want), p.patch_grep_pattern, grep_path)
    return PatchFiles(want, got, grep_path, count, raw + f"grep -c {p.patch_grep_pattern} {grep_path}: {count}")


@dataclass(frozen=True)
class PatchVar:
    """PLAT-PATCH-ENVS' facts: `envs.<var>` printed without the variable and with it set to 1."""
    var: str
    off: PyResult
    on: PyResult
    shown: str


def patch_var(on: On) -> PatchVar:
    p = on.rack.platform
    var = p.patch_env_var
    (off, set_), shown = python_variants(on.container(), f"from atom.utils import envs; print(envs.{var})",
                                         [({}, (var,)), ({var: "1"}, ())], p.container_python)
    return PatchVar(var, off, set_, shown)


@dataclass(frozen=True)
class Imported:
    """PLAT-ATOM-PATH's facts: the file `import atom` loads (a container path; None: it fails)."""
    file: str | None
    got: PyResult
    shown: str


def imported_atom(on: On) -> Imported:
    if not on.rack.atom_path:
        raise CouldNotObserve(f"{on.node}: the rack file sets no atom_path: cannot tell which tree was patched")
    ch = on.container()
    got, shown = python(ch, "import atom; print(atom.__file__)", on.rack.platform.container_python)
    if got.value and not got.error and not got.value.startswith("/"):
        raise UnrecognisedOutput(f"node {on.node}: `import atom; print(atom.__file__)` printed no path: "
                                 f"{got.value[:120]!r}")
    return Imported(node_path(ch, got.value) if got.value and not got.error else None, got, shown)


@dataclass(frozen=True)
class PrefixFiles:
    """PLAT-PREFIX's facts: the hook's and translator's sizes, the translation store's entries
    (None: missing), and the environment a launch starts from (the container's Config.Env, or the
    node's own when container = "")."""
    root: str
    sizes: dict[str, int | None]
    store: int | None
    base_env: dict[str, str]
    shown: str


def prefix(on: On) -> PrefixFiles:
    cfg = on.rack.platform.prefix
    root = cfg.root()
    ch = on.container()
    got, raw = sizes(ch, [f"{root}/{cfg.hook}", f"{root}/{cfg.translator}"])
    store = count_entries(ch, f"{root}/{cfg.store}")
    if on.rack.container:
        info, _ = docker.inspect(on.host, on.rack.container)
        if info is None:
            raise CouldNotObserve(f"{on.node}: no container {on.rack.container} to read the environment of")
        base = info.env_dict()
    else:  # container = "": the engine starts from the node's own environment
        base = environment(ch)
    return PrefixFiles(root, got, store, base, raw + f"{root}/{cfg.store}: {store} entries\n")

