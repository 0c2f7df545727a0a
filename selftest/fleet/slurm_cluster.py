"""A private one-node Slurm on this machine for the fleet self-test: munged (as user munge),
slurmctld and slurmd in the foreground as our own child processes, all state, sockets, logs and
the config in one temp directory, free ports; stopped by PID and the directory removed after.
Nothing of the machine's own Slurm or munge (/etc/slurm, /etc/munge, /run) is read or touched."""
from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

READY_S = 60      # bound on each daemon coming up (polled, not slept)


class SlurmMissing(RuntimeError):
    pass


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def conf(d: Path, host: str, cpus: int, nodes: tuple[str, ...] = ()) -> str:
    """One node named for this host; or, with `nodes`, those Slurm nodes, each its own slurmd on this
    host (`slurmd -N NAME`, its own port, and spool, pid and log files by %n)."""
    by = "-%n" if nodes else ""
    slurmd = [f"SlurmdSpoolDir={d / f'spool{by}'}", f"SlurmdPidFile={d / f'slurmd{by}.pid'}",
              f"SlurmdLogFile={d / f'slurmd{by}.log'}",
              *([f"NodeName={n} NodeHostname={n} NodeAddr=127.0.0.1 Port={_port()} CPUs={cpus} State=UNKNOWN" for n in nodes]
                or [f"NodeName={host} CPUs={cpus} State=UNKNOWN"]),
              f"PartitionName=selftest Nodes={','.join(nodes) or host} Default=YES MaxTime=INFINITE State=UP"]
    return "\n".join([
        "ClusterName=rackgate-selftest", f"SlurmctldHost={host}", "SlurmUser=root", "SlurmdUser=root",
        f"SlurmctldPort={_port()}", f"SlurmdPort={_port()}",
        "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={d / 'munge.sock'}",
        f"StateSaveLocation={d / 'ctld'}", f"SlurmctldPidFile={d / 'slurmctld.pid'}", f"SlurmctldLogFile={d / 'slurmctld.log'}",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core", "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none", "MpiDefault=none", "ReturnToService=2",
        "SlurmctldTimeout=30", "SlurmdTimeout=30", "InactiveLimit=0", "MinJobAge=300", *slurmd, ""])


def _wait(what: str, ok, procs: list[subprocess.Popen], log: Path) -> None:
    end = time.monotonic() + READY_S
    while not ok():
        dead = [p for p in procs if p.poll() is not None]
        if dead or time.monotonic() > end:
            tail = log.read_text(errors="replace")[-1500:] if log.exists() else "(no log)"
            raise RuntimeError(f"{what} did not come up ({'exited' if dead else f'{READY_S} s'}): {tail}")
        time.sleep(0.3)


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)


@contextlib.contextmanager
def cluster(nodes: tuple[str, ...] = ()):
    """Yields the environment (SLURM_CONF) under which sbatch/squeue/sinfo talk to it, this host's
    name and the state directory. `nodes`: Slurm node names, one slurmd each (default: one node,
    this host)."""
    for tool in ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo"):
        if shutil.which(tool) is None:
            raise SlurmMissing(f"{tool} is not installed: run `bash scripts/slurm_tools.sh`")
    munge = pwd.getpwnam("munge")
    d = Path(tempfile.mkdtemp(prefix="rackgate-slurm-"))
    procs: list[subprocess.Popen] = []
    try:
        os.chmod(d, 0o755)
        for sub in ("ctld", "spool", "munge"):
            (d / sub).mkdir()
        m = d / "munge"
        subprocess.run(["mungekey", "--create", f"--keyfile={m / 'munge.key'}"], check=True, capture_output=True, timeout=30)
        for p in (m, m / "munge.key"):
            os.chown(p, munge.pw_uid, munge.pw_gid)
        os.chmod(m, 0o700)
        host = socket.gethostname()
        (d / "slurm.conf").write_text(conf(d, host, os.cpu_count() or 1, nodes).replace(
            f"socket={d / 'munge.sock'}", f"socket={m / 'munge.sock'}"))
        os.chmod(m, 0o711)   # the socket reachable by root's clients, the key still private (0600)
        env = {**os.environ, "SLURM_CONF": str(d / "slurm.conf")}
        procs.append(subprocess.Popen(
            ["munged", "--foreground", f"--socket={m / 'munge.sock'}", f"--key-file={m / 'munge.key'}",
             f"--pid-file={m / 'munged.pid'}", f"--log-file={m / 'munged.log'}", f"--seed-file={m / 'munged.seed'}"],
            user=munge.pw_uid, group=munge.pw_gid, extra_groups=[], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
            start_new_session=True))
        _wait("munged", lambda: (m / "munge.sock").exists(), procs, m / "munged.log")
        daemons = [("slurmctld", [])] + ([("slurmd", ["-N", n]) for n in nodes] or [("slurmd", [])])
        for daemon, extra in daemons:
            tag = "-".join([daemon, *extra[1:]])
            procs.append(subprocess.Popen([daemon, "-D", "-f", str(d / "slurm.conf"), *extra], env=env,
                                          stdout=open(d / f"{tag}.out", "w"), stderr=subprocess.STDOUT,
                                          start_new_session=True))
            if daemon == "slurmctld":
                _wait("slurmctld", lambda: subprocess.run(["scontrol", "ping"], env=env, capture_output=True,
                                                          timeout=20).returncode == 0, procs, d / "slurmctld.log")
        want = len(nodes) or 1
        _wait("slurmd (nodes idle)", lambda: subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], env=env, capture_output=True,
                                                           text=True, timeout=20).stdout.split().count("idle") >= want,
              procs, d / ("slurmd.log" if not nodes else f"slurmd-{nodes[0]}.log"))
        yield env, host, d
    finally:
        _stop(procs)
        shutil.rmtree(d, ignore_errors=True)
