"""What the user overrides (--atom-url, --served-model, the launch environment) is written into
the Rack once, and the report, the client and SRV-LAUNCH-LINT read it there."""
import pytest

from rackgate import config as rackfile

from .harness import run_suite
from .simserver import sim_server

pytestmark = pytest.mark.suite

MODELS = "SRV-MODELS::server"
LINT = "SRV-LAUNCH-LINT::server"


def test_attach_served_model_overrides_the_rack_file_everywhere(tmp_path):
    rack = tmp_path / "rack.toml"
    rack.write_text('name = "attached-rack"\n[server]\nserved_model = "rack-file-model"\n'
                    '[[nodes]]\nname = "here"\ntransport = "local"\ndata_ip = "127.0.0.1"\ntray = 1\n')
    with sim_server(served_model="cli-model") as (_proc, url):
        run = run_suite(tmp_path, "--rack", str(rack), "-k", "SRV-MODELS",
                        "--atom-url", url, "--served-model", "cli-model", allure=True)
    # the client asks for --served-model's name (the sim serves only that one)
    assert run.outcomes[MODELS].status == "passed", (run.outcomes.get(MODELS), run.stdout[-2000:])
    assert f"attached to {url} serving 'cli-model'" in run.stdout, run.stdout[:2000]
    props = (tmp_path / "allure" / "environment.properties").read_text()
    assert "served_model=cli-model\n" in props and "rack-file-model" not in props, props
    assert "attached_to=" in props, props


def test_launch_lint_judges_the_environment_the_server_is_launched_with(tmp_path):
    """The sim rack sets launch.rank_labels (default): the server is launched with ATOM_LOG_MORE=1,
    and that is the environment SRV-LAUNCH-LINT shows and judges."""
    run = run_suite(tmp_path, "-k", "SRV-LAUNCH-LINT", allure=True)
    assert run.outcomes[LINT].status == "passed", (run.outcomes.get(LINT), run.stdout[-2000:])
    shown = [p.read_text() for p in (tmp_path / "allure").glob("*-attachment*")]
    lint_env = [t for t in shown if "--served-model-name" in t and "ATOM_USE_TRITON_MLA=" in t]
    assert lint_env and all("ATOM_LOG_MORE=1" in t.splitlines() for t in lint_env), shown


def test_the_rack_file_cannot_set_the_attach_url():
    with pytest.raises(rackfile.RackFileError, match="set by --atom-url"):
        rackfile.parse('[server]\nattach_url = "http://x:8000"\n', "r.toml")
