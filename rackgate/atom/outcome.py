"""How the launched process ended, read as what it means.

The launch wrapper (rackgate.atom.server.WRAPPER) writes the command's exit status into the log. A
POSIX shell reports a child killed by signal N as 128+N (POSIX `sh`, "Exit Status"; bash and dash
alike), so 137 is SIGKILL, 139 SIGSEGV, 134 SIGABRT; `exit 137` written by a launch script (as
`docker run` reports a killed container) means the same and reads the same. A status the wrapper
never wrote means the wrapper went too: its process group was killed (the kernel's OOM killer, a
container stop, a `kill 0` in the command).
"""
from __future__ import annotations

import signal

# What a signal means for a server process, and where to look next when the log cannot say.
MEANS: dict[int, str] = {
    signal.SIGKILL: "killed (SIGKILL: the kernel's OOM killer, a container limit, or someone's kill -9); "
                    "the log cannot say which: read the kernel log on {node} (`dmesg -T | grep -i -E "
                    "'killed process|out of memory|oom'`, PLAT-DMESG) and the container's OOMKilled state",
    signal.SIGSEGV: "crashed (SIGSEGV, a segmentation fault in native code: a HIP/RCCL/Triton library or a "
                    "kernel launch); the lines before it name the library, a core dump or dmesg on {node} "
                    "the address",
    signal.SIGABRT: "aborted (SIGABRT: a C++ `terminate called after throwing`, a failed assertion, or "
                    "PyTorch's NCCL watchdog tearing the process down); the record before it says why",
    signal.SIGBUS: "crashed (SIGBUS: a bad memory mapping, often /dev/shm too small in the container); "
                   "check the container's --shm-size on {node}",
    signal.SIGTERM: "terminated (SIGTERM: someone or something stopped it -- a scheduler, a container stop)",
    signal.SIGINT: "interrupted (SIGINT)",
    signal.SIGHUP: "hung up (SIGHUP: its terminal or session went away)",
    signal.SIGILL: "crashed (SIGILL: an instruction this CPU or GPU code object does not have)",
    signal.SIGFPE: "crashed (SIGFPE: an arithmetic fault in native code)",
}


def explain(code: int | None, node: str) -> str:
    """'exited with code 137 (128+9: killed ...)', or what a missing status means."""
    if code is None:
        return ("ended without the launch wrapper writing its exit status: the wrapper was ended with it (its "
                f"process group killed: the kernel's OOM killer, a container stop, a `kill 0`); read the kernel "
                f"log on {node} (`dmesg -T | grep -i -E 'killed process|out of memory'`, PLAT-DMESG)")
    if code == 0:
        return "exited with code 0 (a clean exit: the server stopped on its own before it was ready)"
    sig = code - 128 if 128 < code < 128 + 65 else (-code if code < 0 else 0)
    if sig:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        means = MEANS.get(sig, f"ended by {name}").format(node=node)
        return f"exited with code {code} (128+{sig}, {name}: {means})"
    if code in (126, 127):
        return (f"exited with code {code} ({'command not found' if code == 127 else 'command not executable'}: "
                "the launch command's program is not there in the container)")
    return f"exited with code {code} (a plain error exit: the program gave up; its last records say why)"
