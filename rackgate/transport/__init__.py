"""How commands reach nodes: local, ssh (system OpenSSH), and docker exec layered on either."""
from __future__ import annotations

import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, Sequence, TypeVar

from .host import Host, Spawned
from .procs import REGISTRY
from .result import CommandTimeout, Result, SpawnUnknown, TransportError
from .runners import ContainerRunner, EnvRunner, LocalRunner, Runner, SshRunner, with_env

if TYPE_CHECKING:
    from ..config import Node, Rack

I = TypeVar("I")
T = TypeVar("T")
_CONTROL_DIR: str | None = None
# What a plugin wraps every node's runner in (host_for applies them in order): a test double's
# hook point, e.g. the self-tests' command-failure injection (selftest/inject.py). Empty in a user's run.
_RUNNER_WRAPPERS: list[Callable[[Runner], Runner]] = []


def wrap_runners(wrapper: Callable[[Runner], Runner]) -> Callable[[], None]:
    """Wrap every node runner host_for makes from now on; returns the function that undoes it."""
    _RUNNER_WRAPPERS.append(wrapper)
    return lambda: _RUNNER_WRAPPERS.remove(wrapper)


class _ControlDir:
    """The run's /tmp/rg-ssh-* directory, removed when the registry stops what the run started
    (registered before any master, so removed after every master has exited)."""

    def __init__(self, path: str):
        self.path = path

    def stop(self) -> None:
        global _CONTROL_DIR
        shutil.rmtree(self.path, ignore_errors=True)
        if _CONTROL_DIR == self.path:
            _CONTROL_DIR = None
        REGISTRY.drop_spawned(self)


def _control_dir() -> str:
    # Short path: ControlPath must fit in a unix socket name.
    global _CONTROL_DIR
    if _CONTROL_DIR is None:
        _CONTROL_DIR = tempfile.mkdtemp(prefix="rg-ssh-")
        REGISTRY.add_spawned(_ControlDir(_CONTROL_DIR))
    return _CONTROL_DIR


def host_for(node: Node, rack: Rack) -> Host:
    """The Host for a rack-file node."""
    runner: Runner
    if node.transport == "local":
        runner = LocalRunner(node.name, node.env)
    else:
        ssh = SshRunner(node.name, node.ssh, rack.ssh.connect_timeout_s, rack.ssh.options,
                        _control_dir(), rack.ssh.control_persist_s, node.env)
        if getattr(rack.ssh, "config", ""):  # [ssh] config = FILE -> ssh -F FILE
            ssh.opts = ["-F", rack.ssh.config, *ssh.opts]
        runner = ssh
    for wrapper in _RUNNER_WRAPPERS:
        runner = wrapper(runner)
    return Host(node.name, runner, node.sysroot, rack.ssh.command_timeout_s)


def container_for(host: Host, node: Node, rack: Rack, env: dict[str, str] | None = None) -> Host:
    """Where the engine runs on this node: its container, or the node itself (container = "")."""
    return host.container(rack.container, node.container_sysroot, env)


def fanout(items: Sequence[I], fn: Callable[[I], T], max_workers: int = 16) -> list[T | Exception]:
    """Run fn(item) for every item concurrently; returns, in item order, each result or the
    exception it raised (the caller decides per item)."""
    if not items:
        return []
    out: list[T | Exception] = []
    with ThreadPoolExecutor(max_workers=min(max_workers, len(items))) as pool:
        for fut in [pool.submit(fn, it) for it in items]:
            try:
                out.append(fut.result())
            except Exception as e:  # noqa: BLE001
                out.append(e)
    return out


__all__ = ["CommandTimeout", "ContainerRunner", "EnvRunner", "Host", "LocalRunner", "REGISTRY", "Result", "Runner",
           "SpawnUnknown", "Spawned", "SshRunner", "TransportError", "container_for", "fanout", "host_for", "with_env",
           "wrap_runners"]
