"""A private docker daemon for the self-tests (issue 24): Debian's docker.io dockerd started as
root with settings that work in a VM with no registry and no iptables (vfs storage, no bridge),
its own socket, data root and exec root under a temporary directory; images come from `docker
import` of a small root filesystem made from this machine's own binaries (no pulls); containers
run with `--network none`. stop() ends the daemon by its PID and removes its directories."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

# timeout: ContainerRunner bounds each exec; stat, grep, git: what the platform items run inside
PROGRAMS = ("sh", "sleep", "cat", "true", "false", "env", "ls", "timeout", "stat", "grep", "wc", "git")


def usable() -> str:
    """'' when this machine can run a private dockerd, else why not (tests skip with it)."""
    if os.geteuid() != 0:
        return "needs root to run dockerd"
    for tool in ("dockerd", "docker", "containerd", "runc"):
        if not shutil.which(tool):
            return f"no {tool} on PATH (scripts/system_tools.sh installs docker.io)"
    return ""


def local_node(docker_host: str, name: str = "dk1") -> str:
    """A rack file's one local-transport node whose docker client talks to the private daemon."""
    return (f'[[nodes]]\nname = "{name}"\ntransport = "local"\ndata_ip = "127.0.0.1"\ntray = 1\n'
            f'env = {{ DOCKER_HOST = "{docker_host}" }}\n')


def _libs(binary: str) -> list[str]:
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    return [w for line in out.splitlines() for w in line.split() if w.startswith("/")]


def rootfs_tar(path: Path, trees: dict[str, Path] | None = None) -> Path:
    """A root filesystem of a few of this machine's programs and the libraries they load, and
    `trees` ({path in the image: a local directory}) copied in."""
    with tarfile.open(path, "w") as tar:
        for at, local in (trees or {}).items():
            tar.add(local, arcname=at.lstrip("/"))
        files = set()
        for prog in PROGRAMS:
            real = shutil.which(prog)
            files.add((real, f"bin/{prog}"))
            files.update((lib, lib.lstrip("/")) for lib in _libs(real))
        for src, arc in sorted(files):
            tar.add(os.path.realpath(src), arcname=arc)
    return path


class Dockerd:
    def __init__(self):
        # short paths: the unix socket path must stay under 108 bytes
        self.dir = Path(tempfile.mkdtemp(prefix="rg-dockerd-"))
        self.sock = self.dir / "d.sock"
        self.host = f"unix://{self.sock}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> "Dockerd":
        log = open(self.dir / "dockerd.log", "w")
        self.proc = subprocess.Popen(
            ["dockerd", "--storage-driver", "vfs", "--iptables=false", "--ip6tables=false", "--bridge=none",
             "-H", self.host, "--data-root", str(self.dir / "data"), "--exec-root", str(self.dir / "exec"),
             "--pidfile", str(self.dir / "dockerd.pid"),
             "--containerd-namespace", f"rg{os.getpid()}", "--containerd-plugins-namespace", f"rgp{os.getpid()}"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while self.docker("version", "--format", "{{.Server.Version}}", check=False).returncode != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"dockerd did not start: {(self.dir / 'dockerd.log').read_text()[-600:]}")
            time.sleep(0.3)
        return self

    def env(self) -> dict[str, str]:
        return {"DOCKER_HOST": self.host}

    def docker(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        res = subprocess.run(["docker", "-H", self.host, *args], capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise RuntimeError(f"docker {' '.join(args)}: rc={res.returncode} {res.stderr.strip()}")
        return res

    def import_image(self, tag: str, trees: dict[str, Path] | None = None) -> str:
        tar = rootfs_tar(self.dir / "rootfs.tar", trees)
        return self.docker("import", str(tar), tag).stdout.strip()

    def next_second(self) -> None:
        """`docker events --until 0s` ends at the current whole second: an event of this very
        second may not be listed yet. Returns once the clock is in the next second."""
        start = int(time.time())
        while int(time.time()) <= start:
            time.sleep(0.05)

    def run(self, name: str, image: str, *cmd: str, env: dict[str, str] | None = None) -> None:
        envs = [a for k, v in (env or {}).items() for a in ("-e", f"{k}={v}")]
        self.docker("run", "-d", "--network", "none", "--name", name, *envs, image, *(cmd or ("sleep", "3600")))

    def run_with_host_python(self, name: str, image: str, network: str = "none", rw: tuple[str, ...] = (),
                             ro: tuple[str, ...] = ()) -> str:
        """A container whose python is this machine's (its /usr and the interpreter's prefix
        bound read-only, and the venv's when it runs in one: CPU torch for the collective probe),
        `ro`/`rw` directories bound at their own paths; returns that python's path."""
        # the interpreter's own prefix, and in a venv (README: a fresh venv) the venv too: its
        # python is a link into the base prefix, its site-packages hold CPU torch
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))
        trees = dict.fromkeys(("/usr", "/etc/ld.so.cache", prefix, sys.base_prefix, sys.prefix, *ro))
        binds = [a for d in trees for a in ("-v", f"{d}:{d}:ro")]
        binds += [a for d in rw for a in ("-v", f"{d}:{d}")]
        # --init: a PID 1 that reaps (exec'd processes whose parent exits are reparented to it)
        self.docker("run", "-d", "--init", "--network", network, "--name", name, *binds, image, "sleep", "3600")
        return sys.executable

    def create(self, name: str, image: str) -> None:
        """A container created and not started (it will hold the GPUs once it starts)."""
        self.docker("create", "--network", "none", "--name", name, image, "sleep", "3600")

    def kill_daemon(self) -> None:
        """The daemon gone mid-run (SIGKILL by PID): the client stays, the socket answers no more."""
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            running = self.docker("ps", "-aq", check=False, timeout=30).stdout.split()
            if running:
                self.docker("rm", "-f", *running, check=False, timeout=60)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):
            if self.proc:
                os.killpg(self.proc.pid, signal.SIGKILL)  # containerd and shims it started
        # containerd's shims (their own sessions) and the containers' processes, by PID
        for pid in self._shims():
            for p in [*_children(pid), pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)
        with open("/proc/mounts") as f:
            mounts = [line.split()[1] for line in f if f" {self.dir}/" in line]
        for m in sorted(mounts, reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    def _shims(self) -> list[int]:
        out = []
        for d in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if d.name.isdigit() and str(self.dir).encode() in (d / "cmdline").read_bytes():
                    out.append(int(d.name))
        return out


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        with contextlib.suppress(OSError, IndexError, ValueError):
            if d.name.isdigit() and int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out
