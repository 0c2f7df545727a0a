"""A foreign rack: real sshd hosts, each in its own network namespace, each sshd in a private
mount namespace that shows a gfx1250 node's surfaces at the real paths. Built from the runbook
and the driver/amd-smi sources, independently of rackgate/sim (nothing here imports it).

Per host: `ip netns add`, a veth pair (host side in this namespace, peer inside), and
`ip netns exec NS unshare -m --propagation private -p -f --mount-proc sh start.sh` (its own
mount and PID namespaces: `ps` on the node sees only the node's processes) where start.sh mounts a tmpfs
over /sys, /dev and /usr/local/bin, fills them, then execs sshd:
  /sys/class/drm/cardN/device/{vendor,uevent,ualink/*}  amdgpu's ualink attributes (newer layout);
      cardN -> ../../devices/pci0000:00/BDF/drm/cardN, its device -> ../../../BDF, the
      device's driver -> ../../../bus/pci/drivers/amdgpu (the kernel's shape); a node with
      bmc_card0 has an ASPEED BMC video card (driver ast) as card0, its GPUs card1..4
  /sys/module/amdgpu/parameters/*, /sys/module/ifoe
  /dev/kfd (and null, zero, urandom, random, tty bound from the real /dev)
  /usr/local/bin/{amd-smi,lsmod,dmesg}                  first on sshd's default PATH
Deliberately absent: ubench07, the perf_setup report, and (Node.docker = "absent", the default)
docker: /usr/bin is shown as links to this machine's /usr/bin without docker. Node.docker = "down"
keeps this machine's docker client with no daemon behind it (each node has a private, empty /run:
no docker.sock). Node.user = OPERATOR logs in as a user that exists only in the node's /etc/passwd
(bind-mounted over the real one), with no sudo rights: `sudo -n` is refused as it is on a node
whose login is not root.
Everything is removed in stop(): processes by PID, links and namespaces by the names made here.
"""
from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
GPUS = 4
PPOD = "0x5a1c0de000000001"  # amd-smi's ualink notes: "ppod_id: physical pod id: 64-bit hexadecimal 0x..."
PARAMS = {"gpu_recovery": "0", "halt_if_hws_hang": "1", "mtype_local": "0", "noretry": "1"}
UNSET = "4294967295"
OPERATOR = "rgop"  # the non-root login of a Node(user=OPERATOR): uid 4242, not in sudoers


def usable() -> str:
    """'' when this machine can build the rack, else why not (the test skips with it)."""
    if os.geteuid() != 0:
        return "needs root (network and mount namespaces)"
    for tool in ("ip", "unshare", "ssh", "ssh-keygen"):
        if not shutil.which(tool):
            return f"no {tool} on PATH"
    if not os.path.exists(SSHD):
        return "no sshd (apt-get install openssh-server)"
    probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"`ip netns` is not usable here: {probe.stderr.strip()[:120]}"
    return ""


@dataclass
class Node:
    """What one foreign node shows; a fault is a change to these values before start()."""
    name: str
    tray: int
    ip: str = ""
    ns: str = ""
    veth: str = ""
    cards: list[dict[str, str]] = field(default_factory=list)
    params: dict[str, str] = field(default_factory=lambda: dict(PARAMS))
    bmc_card0: bool = False  # card0 is the BMC's video card, not a GPU
    docker: str = "absent"   # "absent": no docker on PATH; "down": the client, no daemon
    user: str = "root"       # the ssh login; OPERATOR: a non-root user whose `sudo -n` is refused

    def __post_init__(self):
        base = GPUS * (self.tray - 1)
        local = " ".join(str(base + g) for g in reversed(range(GPUS)))
        self.cards = [{"accel_state": "active", "accel_id": str(base + g), "link_type": "ualoe", "ppod_id": PPOD,
                       "vpod_id": "1", "local_accels": local, "station_lane_en_bitmap": "0x000000ff",
                       "bandwidth": "0", "latency": "0"} for g in range(GPUS)]


def _amdsmi(node: Node) -> str:
    """amd-smi as a shell script: `static --json` (the plain-list JSON shape) and `fabric`
    printed as text with a `FABRIC:` section and 2-space indents (unlike the sim's layout)."""
    static = json.dumps([{"gpu": g, "bus": {"bdf": f"0000:{0x11 + g:02x}:00.0"},
                          "asic": {"market_name": "AMD Instinct MI455X"},
                          "vram": {"size": {"value": 442368, "unit": "MB"}}} for g in range(GPUS)])
    blocks = []
    for g, c in enumerate(node.cards):
        blocks.append("\n".join([
            f"GPU: {g}", f"  BDF: 0000:{0x11 + g:02x}:00.0", "  FABRIC:", f"    VERSION: {UNSET}",
            f"    ACCELERATOR_ID: {c['accel_id']}", "    FABRIC_TYPE: UALOE", f"    ACCEL_STATE: {c['accel_state']}",
            "    BANDWIDTH: 0 Mb/s", "    LATENCY: 0 ns", f"    PPOD_ID: {c['ppod_id']}", f"    VPOD_ID: {c['vpod_id']}",
            f"    LOCAL_ACCELERATORS: {c['local_accels']}"]))
    fabric = "\n\n".join(blocks)
    return ("#!/bin/sh\ncase \"$1\" in\n"
            f"  static) cat <<'RGEOF'\n{static}\nRGEOF\n;;\n"
            f"  fabric) cat <<'RGEOF'\n{fabric}\nRGEOF\n;;\n"
            "  *) echo \"amd-smi: unsupported: $1\" >&2; exit 2;;\nesac\n")


LSMOD = """#!/bin/sh
cat <<'RGEOF'
Module                  Size  Used by
amdgpu              19099648  0
ifoe                  331776  1 amdgpu
drm_exec               12288  1 amdgpu
RGEOF
"""
DMESG = """#!/bin/sh
cat <<'RGEOF'
[    0.000000] Linux version 6.8.0-60-generic (buildd@lcy02-amd64-098)
[   41.182830] [drm] amdgpu kernel modesetting enabled.
[   43.501117] amdgpu 0000:11:00.0: amdgpu: SMU is initialized successfully!
RGEOF
"""


def _card(n: int, bdf: str, driver: str) -> list[str]:
    """DRM card n of PCI device bdf, bound to driver, linked as the kernel links it."""
    dev = f"/sys/devices/pci0000:00/{bdf}"
    return [f"mkdir -p {dev}/drm/card{n}", f"ln -s ../../../bus/pci/drivers/{driver} {dev}/driver",
            f"ln -s ../../../{bdf} {dev}/drm/card{n}/device",
            f"ln -s ../../devices/pci0000:00/{bdf}/drm/card{n} /sys/class/drm/card{n}"]


def _setup_script(node: Node, root: Path) -> str:
    """Shell run inside the private mount namespace before sshd: the node's surfaces."""
    r = shlex.quote(str(root))
    lines = ["set -e", f"mkdir -p {r}/olddev", f"mount --bind /dev {r}/olddev",
             "mount -t tmpfs rg-sys /sys", "mount -t tmpfs rg-dev /dev",
             f"for f in null zero urandom random tty; do touch /dev/$f; mount --bind {r}/olddev/$f /dev/$f; done",
             "ln -s /proc/self/fd /dev/fd", "touch /dev/kfd", "mkdir -p /dev/shm",
             "mkdir -p /sys/module/ifoe /sys/module/amdgpu/parameters /sys/class/kfd/kfd/proc",
             "mount -t tmpfs rg-bin /usr/local/bin", f"cp {r}/bin/* /usr/local/bin/",
             # the node's own (empty) dotfiles, not this machine's: a pyenv init there forks ~30
             # processes for every command the suite sends over ssh
             f": > {r}/empty-dotfile",
             f"for f in .bashrc .profile; do [ -f \"$HOME/$f\" ] && mount --bind {r}/empty-dotfile \"$HOME/$f\"; done; true",
             # a private /run: no daemon socket of this machine's shows through (sshd needs /run/sshd)
             "mount -t tmpfs rg-run /run", "mkdir -p /run/sshd"]
    if node.docker == "absent":
        # the real /usr/bin stays reachable at /run/rg-usrbin (a non-root login can traverse it)
        lines += ["mkdir -p /run/rg-usrbin", "mount --bind /usr/bin /run/rg-usrbin", "mount -t tmpfs rg-usrbin /usr/bin",
                  "/run/rg-usrbin/cp -as /run/rg-usrbin/. /usr/bin/", "rm -f /usr/bin/docker /usr/bin/dockerd"]
    if node.user != "root":
        lines += [f"cp /etc/passwd {r}/passwd",
                  f"echo '{node.user}:x:4242:65534:rackgate operator:/home/{node.user}:/bin/sh' >> {r}/passwd",
                  f"mount --bind {r}/passwd /etc/passwd", "mount -t tmpfs rg-home /home",
                  f"mkdir -p /home/{node.user}/.ssh", f"cp {r}/../authorized_keys /home/{node.user}/.ssh/",
                  f"chown -R 4242:65534 /home/{node.user}"]
    for k, v in node.params.items():
        lines.append(f"echo {shlex.quote(v)} > /sys/module/amdgpu/parameters/{k}")
    lines.append("mkdir -p /sys/class/drm /sys/bus/pci/drivers/amdgpu /sys/bus/pci/drivers/ast")
    first = 1 if node.bmc_card0 else 0
    if node.bmc_card0:
        lines += _card(0, "0000:02:00.0", "ast") + ["echo 0x1a03 > /sys/class/drm/card0/device/vendor"]
    for g, c in enumerate(node.cards):
        d = f"/sys/class/drm/card{first + g}/device"
        lines += _card(first + g, f"0000:{0x11 + g:02x}:00.0", "amdgpu")
        lines += [f"mkdir -p {d}/ualink", f"echo 0x1002 > {d}/vendor",
                  f"echo PCI_SLOT_NAME=0000:{0x11 + g:02x}:00.0 > {d}/uevent"]
        lines += [f"echo {shlex.quote(v)} > {d}/ualink/{k}" for k, v in c.items()]
    return "\n".join(lines)


class ForeignRack:
    def __init__(self, workdir: Path, prefix: str, nodes: int = 3):
        self.dir, self.prefix = workdir, prefix
        self.nodes = [Node(f"fn{i}", tray=i, bmc_card0=i == 3) for i in range(1, nodes + 1)]
        self.net = 10 + (os.getpid() * 7 + int(time.time())) % 200  # this run's own 10.250.x.0/24s
        self._ns: list[str] = []
        self._links: list[str] = []
        self._procs: list[subprocess.Popen] = []

    def add(self, node: Node) -> Node:
        """One more node (before start()), e.g. Node("fn4", tray=4, docker="down")."""
        self.nodes.append(node)
        return node

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def _ip(self, *args: str) -> None:
        res = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
        if res.returncode != 0:
            raise RuntimeError(f"ip {' '.join(args)}: {res.stderr.strip()}")

    def start(self) -> "ForeignRack":
        self.dir.mkdir(parents=True, exist_ok=True)
        for name in ("host_key", "user_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.dir / name)], check=True)
        (self.dir / "authorized_keys").write_text((self.dir / "user_key.pub").read_text())
        os.chmod(self.dir / "authorized_keys", 0o600)
        Path("/run/sshd").mkdir(exist_ok=True)
        pub = (self.dir / "host_key.pub").read_text().split()[:2]
        known, cfg = [], []
        for i, node in enumerate(self.nodes, 1):
            node.ns, node.veth = f"{self.prefix}-{node.name}", f"{self.prefix}{i}"
            node.ip = f"10.250.{self.net + i}.2"
            self._ip("netns", "add", node.ns)
            self._ns.append(node.ns)
            self._ip("link", "add", node.veth, "type", "veth", "peer", "name", "eth0", "netns", node.ns)
            self._links.append(node.veth)
            self._ip("addr", "add", f"10.250.{self.net + i}.1/24", "dev", node.veth)
            self._ip("link", "set", node.veth, "up")
            self._ip("-n", node.ns, "addr", "add", f"{node.ip}/24", "dev", "eth0")
            self._ip("-n", node.ns, "link", "set", "eth0", "up")
            self._ip("-n", node.ns, "link", "set", "lo", "up")
            known.append(f"{node.ip} {pub[0]} {pub[1]}")  # pinned: StrictHostKeyChecking yes
            cfg += [f"Host {node.name}", f"  HostName {node.ip}", f"  User {node.user}",
                    f"  IdentityFile {self.dir / 'user_key'}", "  IdentitiesOnly yes",
                    f"  UserKnownHostsFile {self.dir / 'known_hosts'}", "  StrictHostKeyChecking yes", ""]
        (self.dir / "known_hosts").write_text("\n".join(known) + "\n")
        (self.dir / "ssh_config").write_text("\n".join(cfg))
        for node in self.nodes:
            self._start_sshd(node)
        for node, proc in zip(self.nodes, self._procs):
            self._wait(node, proc)
        return self

    def _start_sshd(self, node: Node) -> None:
        root = self.dir / node.name
        (root / "bin").mkdir(parents=True, exist_ok=True)
        for name, text in (("amd-smi", _amdsmi(node)), ("lsmod", LSMOD), ("dmesg", DMESG)):
            (root / "bin" / name).write_text(text)
            (root / "bin" / name).chmod(0o755)
        (root / "sshd_config").write_text("\n".join([
            "Port 22", f"ListenAddress {node.ip}", f"HostKey {self.dir / 'host_key'}",
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'} .ssh/authorized_keys", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", "PermitRootLogin prohibit-password",
            f"PidFile {root / 'sshd.pid'}", "MaxSessions 64", "MaxStartups 64:30:128", "LogLevel ERROR", ""]))
        script = _setup_script(node, root) + f"\nexec {SSHD} -D -e -f {shlex.quote(str(root / 'sshd_config'))}\n"
        (root / "start.sh").write_text(script)
        self._procs.append(subprocess.Popen(
            ["ip", "netns", "exec", node.ns, "unshare", "-m", "--propagation", "private", "-p", "-f",
             "--mount-proc", "sh", str(root / "start.sh")],
            stdout=subprocess.DEVNULL, stderr=open(root / "sshd.log", "w"), start_new_session=True))

    def _wait(self, node: Node, proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection((node.ip, 22), timeout=1):
                return
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"sshd for {node.name} did not start: "
                                   f"{(self.dir / node.name / 'sshd.log').read_text()[-400:]}")
            time.sleep(0.2)

    def link_down(self, name: str) -> None:
        self._ip("link", "set", self.node(name).veth, "down")

    def rack_file(self, path: Path) -> Path:
        lines = ['name = "foreign"', f"gpus_per_node = {GPUS}", "[ssh]", "connect_timeout_s = 5",
                 f'config = "{self.dir / "ssh_config"}"', "[fabric]", "state_wait_s = 1",
                 'ubench_dir = "/root/ubench-20260712/07_ualoe/build"']
        for n in self.nodes:
            lines += ["[[nodes]]", f'name = "{n.name}"', f'ssh = "{n.name}"', f'data_ip = "{n.ip}"', f"tray = {n.tray}"]
        path.write_text("\n".join(lines) + "\n")
        return path

    def stop(self) -> None:
        for proc in self._procs:
            # sshd's per-connection children live in sessions of their own: end them by PID first.
            for child in _descendants(proc.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGTERM)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        for link in self._links:
            subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=30)
        for ns in self._ns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


def _descendants(pid: int) -> list[int]:
    """Every descendant of pid, read from /proc."""
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        with contextlib.suppress(OSError, IndexError, ValueError):
            if d.name.isdigit():
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out
