"""`pytest -n 2` on the sim: the session server is launched once for the whole run (not once per
worker), and the verdicts are the serial run's."""
import os
import subprocess
import sys

import pytest

from .harness import REPO, run_suite, user_env

pytestmark = pytest.mark.suite

# Counts every launch of the session server, in whichever process makes it.
COUNT_PLUGIN = """
import os

from rackgate.atom import server

_launch = server.launch


def launch(*args, **kwargs):
    with open(os.environ["RG_LAUNCH_LOG"], "a") as f:
        f.write(f"{os.getpid()} {os.environ.get('PYTEST_XDIST_WORKER', 'main')}\\n")
    return _launch(*args, **kwargs)


server.launch = launch
"""

# tests that use the server, and tests that do not (they spread over both workers)
SELECTION = ("PLAT-DRIVER", "SRV-LAUNCH-LINT::server", "SRV-BOOT::server", "SRV-RENDEZVOUS::server", "SRV-SANITY::server")


def _run(tmp_path, name, *args):
    (tmp_path / "rg_count_launch.py").write_text(COUNT_PLUGIN)
    log = tmp_path / f"{name}-launches"
    log.touch()
    env = {"RG_LAUNCH_LOG": str(log),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH", "")]))}
    (tmp_path / name).mkdir()
    run = run_suite(tmp_path / name, *SELECTION, "-p", "rg_count_launch", *args, env=env, timeout=600)
    return run, log.read_text().splitlines()


def test_two_workers_launch_one_server_and_agree_with_a_serial_run(tmp_path):
    par, par_launches = _run(tmp_path, "par", "-n", "2")
    assert par.outcomes, par.stdout[-2000:] + par.stderr[-2000:]
    assert len(par_launches) == 1, f"the server was launched {len(par_launches)} times: {par_launches}"
    assert par_launches[0].split()[1].startswith("gw"), par_launches  # by a worker: the run was distributed
    ser, ser_launches = _run(tmp_path, "ser")
    assert len(ser_launches) == 1
    assert {k: o.status for k, o in par.outcomes.items()} == {k: o.status for k, o in ser.outcomes.items()}


def test_workers_know_how_the_self_tests_are_handed_out(tmp_path):
    """A worker's own config says `--dist no`; selftest/conftest.py passes the controller's mode,
    which the fault matrix reads to start all its runs at once when it runs whole on one worker."""
    (tmp_path / "test_mode.py").write_text(
        "from selftest.harness import dist_mode\n\n\n"
        "def test_mode(request):\n    assert dist_mode(request.config) == 'loadgroup'\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "selftest.conftest", "-q",
                          "-n", "2", "--dist", "loadgroup", "--rootdir", str(tmp_path), str(tmp_path / "test_mode.py")],
                         cwd=REPO, capture_output=True, text=True, timeout=300, env=user_env())
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-1000:]


def test_a_schedule_that_splits_the_server_tests_still_launches_once(tmp_path):
    """`--dist load`, given by the user, spreads the server's tests over both workers: the launch
    is claimed (rackgate.atom.life.Claim), so one worker launches and the other's server tests
    ERROR saying which worker did -- never a second server on the same nodes."""
    run, launches = _run(tmp_path, "load", "-n", "2", "--dist", "load")
    assert run.outcomes, run.stdout[-2000:] + run.stderr[-2000:]
    assert len(launches) == 1, f"the server was launched {len(launches)} times: {launches}"
    for tid in run.ids("error"):
        msg = run.outcomes[tid].message
        assert "this run's one server is launched by another worker" in msg or "not run:" in msg, (tid, msg[:500])


GROUPED = """
import os

import pytest


@pytest.mark.xdist_group("one")
@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    with open(os.environ["RG_WORKERS_LOG"], "a") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")


@pytest.mark.parametrize("i", range(6))
def test_free(i):
    pass
"""


def test_xdist_keeps_a_group_on_one_worker_with_this_pytest(tmp_path):
    """The installed pytest and pytest-xdist honour xdist_group under --dist loadgroup, which the
    one-launch mechanism and the self-tests' module groups rest on (pytest 9.2 with xdist 3.8 does
    not: no error, the group's tests simply spread; pyproject.toml pins pytest below it)."""
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    log = tmp_path / "workers"
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2", "--dist", "loadgroup",
                          "--rootdir", str(tmp_path), str(tmp_path / "test_grouped.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, env={**user_env(), "RG_WORKERS_LOG": str(log)})
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-1000:]
    workers = log.read_text().split()
    assert len(workers) == 6 and len(set(workers)) == 1, f"one group ran on {sorted(set(workers))}: {workers}"
