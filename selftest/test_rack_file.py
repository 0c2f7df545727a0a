"""A bad rack file or option is one line naming the problem, never a traceback."""
import subprocess
import sys

import pytest

from rackgate import config

from .harness import REPO, user_env

pytestmark = pytest.mark.suite


def run_pytest(*args):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env=user_env())


@pytest.mark.parametrize("text, expect", [
    ('name = "r"\n[sim]\n[launch]\ncomand = "x"\n', "unknown key 'launch.comand' (did you mean 'command'?)"),
    ('name = "r"\n[sim]\nnodez = 3\n', "unknown key 'sim.nodez' (did you mean 'nodes'?)"),
    ('name = "r"\n[[nodes]]\nname = "a"\ndata_ip = "10.0.0.1"\ntray = 1\nsssh = "x"\n', "unknown key 'nodes[0].sssh'"),
    ('name = "r"\n[sim]\n[fabric]\nstate_wait_s = -1\n', "'fabric.state_wait_s': Input should be greater than 0"),
    ('name = "r"\n', "no [[nodes]]"),
    ('name = "r"\n[sim\n', "not valid TOML"),
])
def test_bad_rack_file_is_one_line(tmp_path, text, expect):
    f = tmp_path / "rack.toml"
    f.write_text(text)
    with pytest.raises(config.RackFileError) as e:
        config.load(f)
    assert expect in str(e.value) and str(f) in str(e.value)
    assert "\n" not in str(e.value)
    run = run_pytest("--rack", str(f), "-m", "fabric")
    out = run.stdout + run.stderr
    assert run.returncode == 4, out
    assert expect in out and "Traceback" not in out, out
    assert len([line for line in out.splitlines() if line.strip()]) <= 2, out


def test_missing_rack_file(tmp_path):
    run = run_pytest("--rack", str(tmp_path / "nope.toml"))
    assert run.returncode == 4 and "cannot read it" in run.stderr and "Traceback" not in run.stderr


def test_unknown_sim_fault_suggests():
    run = run_pytest("--sim-fault", "stuck-lnk")
    assert run.returncode == 4 and "unknown sim fault 'stuck-lnk' (did you mean 'stuck-link'?)" in run.stderr


def test_fault_list_names_every_fault():
    run = run_pytest("--sim-faults-list")
    assert run.returncode == 0
    for name in ("stuck-link", "bang-tokens", "driver-not-loaded"):
        assert name in run.stdout


def test_shipped_racks_load():
    assert config.load(REPO / "rackgate" / "sim" / "racks" / "sim.toml").sim is not None
    real = config.load(REPO / "racks" / "example-gfx1250.toml")
    assert real.gpu_count == 16 and real.launch.env["ATOM_USE_TRITON_MLA"] == "1"
