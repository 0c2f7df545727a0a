"""The simulated platform of each node: perf_setup reports, processes and the kfd list, /dev/shm,
docker containers, and the inside of our container (the ATOM tree, py-spy, the rocjitsu prefix).

State lives in node.plat (rackgate/sim/state.py Plat; faults in
rackgate/sim/faults/plat.py change it); render() writes it into the node's root and container root
with the real paths.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sys
import time
from pathlib import Path

from .. import drm
from .. import state as sim_state
from ..plat_content import PREFIX_IMAGE_COPY, PREFIX_REQUIRED, atom_tree, container_id, perf_report
from ..render import node_root
from ..state import Plat

# PCI buses of the four GPUs of a tray (illustrative, stable per card).
BUSES = (0x05, 0x15, 0x65, 0x75, 0x85, 0x95, 0xC5, 0xD5)
STOCK_ATOM_DIR = "/usr/local/lib/python3.12/dist-packages"  # a second, unpatched ATOM (pip wheel)
IMAGE_ENV = [
    "PATH=/opt/rocm/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ROCM_PATH=/opt/rocm",
    "LD_LIBRARY_PATH=/opt/rocm/lib:/usr/local/lib",
    "PYTORCH_ROCM_ARCH=gfx1250",
    "HSA_OVERRIDE_GFX_VERSION=12.5.0",
]


def _proc(pid: int, comm: str, state: str, ppid: int, cgroup: str) -> dict:
    return {"pid": pid, "comm": comm, "state": state, "ppid": ppid, "cgroup": cgroup}


def healthy(state, gpus: int) -> None:
    for name, n in state.nodes.items():
        boot = n.boot_time
        for g in n.gpus:
            if g.bdf is None:
                g.bdf = f"0000:{BUSES[g.card % len(BUSES)]:02x}:00.0"
        own_id = container_id(name, "own")
        n.plat = Plat(
            # perf_setup ran 7 minutes after boot, all steps passed (TBP read fine on this tray)
            perf_reports=[{"at": boot + 420, "mode": "D", "passed": 8, "failed": 0, "result": "PASS",
                           "tbp_ok": True}],
            # our container: created after perf_setup, 45 minutes before the run
            own={"id": own_id, "status": "running", "exit_code": 0, "image": None, "network_mode": "host",
                 "devices": ["/dev/kfd", "/dev/dri"], "created": boot + 900, "pid": 4242,
                 "pythonpath": ["/app/ATOM"], "env": list(IMAGE_ENV)},
            foreign=[],  # other people's containers: name, image, status, created, id
            removed_creates=[],  # create events of containers already removed
            procs=[
                _proc(1, "systemd", "S", 0, "0::/init.scope"),
                _proc(2, "kthreadd", "S", 0, "0::/"),
                _proc(812, "dockerd", "S", 1, "0::/system.slice/docker.service"),
                _proc(1377, "sshd", "S", 1, "0::/system.slice/ssh.service"),
                _proc(2045, "kworker/u1024:2-events_unbound", "I", 2, "0::/"),
                _proc(2046, "kworker/17:1H-kblockd", "I", 2, "0::/"),
                _proc(4219, "containerd-shim", "S", 1, "0::/system.slice/containerd.service"),
                _proc(4242, "sleep", "S", 4219, f"0::/system.slice/docker-{own_id}.scope"),
            ],
            kfd=[],
            shm=[],
            atom={"patched": True, "zero": [], "elsewhere": False},
            py_spy=True,
            # Appendix A copies the image's own rocjitsu to /app/rjprefix on B0 (inert there).
            prefix="image",
        )


def atom_commit(image: str) -> str:
    """The ATOM commit an image holds: one per image, the same on every node that runs it."""
    return hashlib.sha1(f"rackgate-sim-atom:{image}".encode()).hexdigest()


def _sync(root: Path, files: dict[str, tuple], managed: list[str], keep: tuple[Path, ...] = ()) -> None:
    """Make root's managed subtrees hold exactly `files` (rel -> (bytes|None for a dir |
    int size for a sparse file, mtime or None)) and the paths in `keep`. Unchanged files are not
    rewritten, so a re-render (the link-training agent) never shows a reader a half-written file.
    Every suite run builds a sim (about 1,000 files), so this works on strings, makes each
    directory once and writes a file that is not there yet in place."""
    base = str(root)
    want = {str(p) for k in keep for p in (k, *k.parents)}
    made: set[str] = set()

    def mkdirs(d: str) -> None:
        if d not in made:
            os.makedirs(d, exist_ok=True)
            while d not in made and d.startswith(base):
                made.add(d)
                want.add(d)
                d = os.path.dirname(d)

    for rel, (content, mtime) in files.items():
        p = f"{base}/{rel}"
        want.add(p)
        if content is None:
            mkdirs(p)
        else:
            mkdirs(os.path.dirname(p))
            try:
                st = os.stat(p)
            except FileNotFoundError:
                st = None
            if isinstance(content, int):
                if st is None or st.st_size != content:
                    with open(p, "wb") as f:
                        f.truncate(content)
            elif st is None:
                with open(p, "xb") as f:  # new: nothing could have read it half-written before
                    f.write(content)
            elif st.st_size != len(content) or Path(p).read_bytes() != content:
                tmp = p + ".rg-tmp"
                with open(tmp, "wb") as f:
                    f.write(content)
                os.replace(tmp, p)
        if mtime is not None:
            os.utime(p, (mtime, mtime))
    for m in managed:
        top = f"{base}/{m}"
        if not os.path.exists(top):
            continue
        # deepest first (a directory's entries before it), on strings: the tree's ~1,700 paths as
        # Path objects, sorted by depth, were a third of a build's CPU
        for d, dirs, names in os.walk(top, topdown=False):
            for n in (*names, *dirs):
                p = f"{d}/{n}"
                if p not in want:
                    if os.path.isdir(p) and not os.path.islink(p):
                        shutil.rmtree(p, ignore_errors=True)
                    else:
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(p)


def _stat_line(p: dict, start: int) -> str:
    # /proc/<pid>/stat: 52 fields; those after ppid are plausible constants.
    return (f"{p['pid']} ({p['comm']}) {p['state']} {p['ppid']} {p['pid']} {p['pid']} 0 -1 4194560 "
            f"1542 0 0 0 12 9 0 0 20 0 1 0 {start} 9035776 512 18446744073709551615 1 1 0 0 0 0 0 4096 "
            "0 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0\n")


def _prefix_files(kind: str | None) -> dict[str, tuple]:
    if kind is None:
        return {}
    sizes = PREFIX_REQUIRED if kind == "required" else PREFIX_IMAGE_COPY
    files: dict[str, tuple] = {
        "app/rjprefix/lib/libhsa_hotswap_rocjitsu.so": (sizes["hook"], None),
        "app/rjprefix/lib/librocjitsu_gfx1250_b0_to_a0.so.0.3.0": (sizes["translator"], None),
    }
    store = "app/rjprefix/share/rocjitsu/translations/gfx1250-b0-a0/v1"
    files[store] = (None, None)
    for i in range(sizes["store"]):
        files[f"{store}/{i:016x}.co"] = (b"", None)
    return files


def render(rack_dir: Path, name: str, node) -> None:
    plat = node.plat
    if plat is None:
        return
    st = sim_state.load(rack_dir)
    root = node_root(rack_dir, name)
    loaded = "amdgpu" in node.modules

    host: dict[str, tuple] = {}
    for r in plat.perf_reports:
        fname = time.strftime("perf_setup_BPC21_report_%Y%m%d_%H%M%S.log", time.localtime(r["at"]))
        body = perf_report(name, r["at"], r["mode"], r["passed"], r["failed"], r["result"], r["tbp_ok"])
        host[f"opt/amd-apps/{fname}"] = (body.encode(), r["at"])
    start = 100
    for p in plat.procs:
        host[f"proc/{p['pid']}/stat"] = (_stat_line(p, start).encode(), None)
        host[f"proc/{p['pid']}/cgroup"] = (f"{p['cgroup']}\n".encode(), None)
        start += 37
    if loaded:
        host["sys/class/kfd/kfd/proc"] = (None, None)
        for pid in plat.kfd:
            host[f"sys/class/kfd/kfd/proc/{pid}/pasid"] = (f"{32768 + pid % 4096}\n".encode(), None)
        for g in node.gpus:
            dev = f"{drm.card_dir(node, g.card)}/device"
            host[f"{dev}/vendor"] = (b"0x1002\n", None)
            host[f"{dev}/mem_info_vram_total"] = (f"{int(g.hbm_gib * 2**30)}\n".encode(), None)
            host[f"{dev}/uevent"] = (f"DRIVER=amdgpu\nPCI_SLOT_NAME={g.bdf}\n".encode(), None)
    host["dev/shm"] = (None, None)
    for seg in plat.shm:
        host[f"dev/shm/{seg['name']}"] = (seg["size"], seg.get("mtime"))
    # the node files faults declare (rackgate/sim/areas/files.py) are not this area's: kept
    _sync(root, host, ["opt/amd-apps", "proc", "sys/class/kfd", "dev/shm"],
          keep=tuple(root / p.lstrip("/") for p in node.files))

    cont: dict[str, tuple] = {}
    atom_root = (st.get("atom_path") or "/app/ATOM").strip("/")
    a = plat.atom
    for rel, body in atom_tree(a["patched"], tuple(a["zero"]), a.get("stock_envs", False)).items():
        cont[f"{atom_root}/{rel}"] = (body, None)
    # ATOM as its Dockerfile installs it: a git checkout of one commit, HEAD detached at it
    # (`git -C <atom_path> rev-parse HEAD` answers with the machine's own git).
    cont[f"{atom_root}/.git/HEAD"] = (((a.get("commit") or atom_commit(st.get("image") or "")) + "\n").encode(), None)
    cont[f"{atom_root}/.git/objects"] = (None, None)
    cont[f"{atom_root}/.git/refs"] = (None, None)
    if a["elsewhere"]:
        for rel, body in atom_tree(False).items():
            cont[f"{STOCK_ATOM_DIR.strip('/')}/{rel}"] = (body, None)
    if plat.py_spy:
        cont["usr/local/bin/py-spy"] = (b'#!/bin/sh\n[ "$1" = "--version" ] && echo "py-spy 0.4.0" && exit 0\n'
                                        b'echo "py-spy: simulated: only --version" >&2; exit 2\n', None)
    cont.update(_prefix_files(plat.prefix))
    croot = rack_dir / name / "container"
    # The container's own python3 (a real image has one on its PATH): this machine's interpreter,
    # reached directly, not through whatever launcher (a pyenv shim) this machine's PATH holds.
    # Its own prefix too, as an image's python has: a pyvenv.cfg beside bin/ gives it the standard
    # library and none of this machine's site-packages (an editable rackgate, whatever .pth files
    # the machine holds: 35 ms of every start-up here). What the container imports comes from its
    # PYTHONPATH (the ATOM tree, rackgate/sim/nccl); RACKGATE_SIM_TORCH=installed adds the
    # machine's site-packages back for its torch (rackgate/sim/nccl/sitecustomize.py).
    # home: where the interpreter really lives (this machine's python may itself be a venv's link)
    home = Path(os.path.realpath(sys.executable)).parent
    cont["usr/local/pyvenv.cfg"] = (f"home = {home}\ninclude-system-site-packages = false\n"
                                    f"version = {'.'.join(map(str, sys.version_info[:3]))}\n".encode(), None)
    py = croot / "usr/local/bin/python3"
    if not py.is_symlink():
        py.parent.mkdir(parents=True, exist_ok=True)
        py.symlink_to(sys.executable)
    _sync(croot, cont, ["app", "usr", atom_root.split("/")[0]], keep=(py,))
    if plat.py_spy:
        (croot / "usr/local/bin/py-spy").chmod(0o755)
