"""A real OpenSSH server on loopback for the transport self-tests (started and ended by PID).

It accepts one throwaway key for the current user; the client side is the system `ssh` with
the options a user would put in ~/.ssh/config (Port, IdentityFile, known_hosts).
"""
from __future__ import annotations

import contextlib
import getpass
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from rackgate.transport.ports import free_port

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


@dataclass
class Sshd:
    port: int
    user: str
    options: list[str]  # ssh -o options that reach it
    pid: int

    @property
    def target(self) -> str:
        return f"{self.user}@127.0.0.1"


def _free_port() -> int:
    return free_port()


def _own_dotfiles(tmp: Path, argv: list[str]) -> list[str]:
    """sshd in a private mount namespace where the user's .bashrc/.profile are empty files: the
    shell of every ssh command sources them, and this machine's (a pyenv init) forks ~30
    processes per command. Without root or unshare, sshd runs as is."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return argv
    empty = tmp / "empty-dotfile"
    empty.write_text("")
    home = Path.home()
    binds = "".join(f'[ -f {shlex.quote(str(home / f))} ] && mount --bind {shlex.quote(str(empty))} '
                    f'{shlex.quote(str(home / f))}; ' for f in (".bashrc", ".profile"))
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", binds + 'exec "$@"', "sh", *argv]


@contextlib.contextmanager
def sshd(tmp: Path):
    if not os.path.exists(SSHD):
        raise RuntimeError("sshd is not installed (apt-get install openssh-server; scripts/selftest.sh does it)")
    tmp.mkdir(parents=True, exist_ok=True)
    for name in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / name)], check=True)
    (tmp / "authorized_keys").write_text((tmp / "user_key.pub").read_text())
    os.chmod(tmp / "authorized_keys", 0o600)
    Path("/run/sshd").mkdir(exist_ok=True)  # privilege-separation directory
    port = _free_port()
    (tmp / "sshd_config").write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {tmp / 'host_key'}",
        f"AuthorizedKeysFile {tmp / 'authorized_keys'}", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", "PermitRootLogin prohibit-password",
        f"PidFile {tmp / 'sshd.pid'}", "MaxSessions 64", "MaxStartups 64:30:128", "LogLevel ERROR", ""]))
    proc = subprocess.Popen(_own_dotfiles(tmp, [SSHD, "-D", "-e", "-f", str(tmp / "sshd_config")]),
                            stdout=subprocess.DEVNULL, stderr=open(tmp / "sshd.log", "w"), start_new_session=True)
    options = [f"Port={port}", f"IdentityFile={tmp / 'user_key'}", "IdentitiesOnly=yes",
               f"UserKnownHostsFile={tmp / 'known_hosts'}", "StrictHostKeyChecking=accept-new"]
    try:
        deadline = time.monotonic() + 15
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"sshd did not start: {(tmp / 'sshd.log').read_text()[-500:]}")
            time.sleep(0.1)
        yield Sshd(port, getpass.getuser(), options, proc.pid)
    finally:
        # Per-connection sshd children run in sessions of their own: end them by PID first.
        for child in Path("/proc").iterdir():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if child.name.isdigit() and int((child / "stat").read_text().rsplit(")", 1)[1].split()[1]) == proc.pid:
                    os.kill(int(child.name), signal.SIGTERM)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
