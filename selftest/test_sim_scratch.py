"""Where the sim lays out its directory (rackgate/sim/rack.py scratch_dir): the user's TMPDIR where
set, else /dev/shm where it is writable and executable, else the system's temp dir."""
import os
from types import SimpleNamespace

import pytest

from rackgate.sim import rack as sim_rack

pytestmark = pytest.mark.unit


def _statvfs(flag: int, free: int = 8 << 30):
    def fake(path):
        assert path == "/dev/shm", path
        return SimpleNamespace(f_flag=flag, f_bavail=free // 4096, f_frsize=4096)
    return fake


def test_a_writable_exec_able_dev_shm_is_chosen(monkeypatch):
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(sim_rack.os, "statvfs", _statvfs(0))
    monkeypatch.setattr(sim_rack.os, "access", lambda path, mode: path == "/dev/shm")
    assert sim_rack.scratch_dir() == "/dev/shm"


def test_a_small_dev_shm_is_left_alone(monkeypatch):
    """A container's /dev/shm (docker's default: 64 MiB) is for its own programs: the sim's files
    and server logs stay on disk."""
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(sim_rack.os, "access", lambda path, mode: True)
    monkeypatch.setattr(sim_rack.os, "statvfs", _statvfs(0, free=64 << 20))
    assert sim_rack.scratch_dir() is None
    monkeypatch.setattr(sim_rack.os, "statvfs", _statvfs(0, free=sim_rack.SCRATCH_FREE))
    assert sim_rack.scratch_dir() == "/dev/shm"


def test_the_users_tmpdir_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(sim_rack.os, "statvfs", _statvfs(0))
    monkeypatch.setattr(sim_rack.os, "access", lambda path, mode: True)
    assert sim_rack.scratch_dir() is None  # tempfile's own choice: TMPDIR


@pytest.mark.parametrize("flag", [os.ST_NOEXEC, os.ST_RDONLY], ids=["noexec", "read-only"])
def test_a_dev_shm_the_nodes_tools_could_not_run_from_is_not(monkeypatch, flag):
    """The nodes' bin/ holds their executables: a noexec /dev/shm (hardened hosts mount it so)
    would make every tool call fail."""
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(sim_rack.os, "statvfs", _statvfs(flag))
    monkeypatch.setattr(sim_rack.os, "access", lambda path, mode: True)
    assert sim_rack.scratch_dir() is None


def test_no_dev_shm_or_no_access_falls_back_to_the_temp_dir(monkeypatch):
    monkeypatch.delenv("TMPDIR", raising=False)

    def missing(path):
        raise FileNotFoundError(path)
    monkeypatch.setattr(sim_rack.os, "statvfs", missing)
    assert sim_rack.scratch_dir() is None
    monkeypatch.setattr(sim_rack.os, "statvfs", _statvfs(0))
    monkeypatch.setattr(sim_rack.os, "access", lambda path, mode: False)
    assert sim_rack.scratch_dir() is None
