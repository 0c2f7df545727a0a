"""Options as pytest users type them (issue 12.5): `--rack FILE`, `--atom-url URL`, `--served-model
NAME`, `--baseline FILE`, `--alluredir DIR`, each in the space and the `=` form, from a directory
outside the project: the same checks as from the project, collected from the package
(rackgate/checks) with the plugin's markers selecting the gate, never a test path taken from an
option's value. From outside, ids are relative to the package's checks folder (the plugin's
docstring says why), so they are compared as such."""
import subprocess
import sys

import pytest

from rackgate.ids import is_row_id

from .harness import REPO, SUITE_PLUGINS, user_env

pytestmark = pytest.mark.suite

CHECKS = "rackgate/checks/"


def checks_relative(ids: list[str]) -> list[str]:
    return [i.removeprefix(CHECKS) for i in ids]


def collect(cwd, *args):
    env = {**user_env(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": str(REPO)}
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *SUITE_PLUGINS, "--co", "-q",
                        "-m", "gate", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    ids = [x for x in p.stdout.splitlines() if "::" in x]
    return p, ids


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """A directory outside the project, shared by the module's cases (they only read it)."""
    d = tmp_path_factory.mktemp("outside")
    (d / "models" / "SmolLM2").mkdir(parents=True)   # a served name that is also a directory here
    (d / "allure").mkdir()
    return d


@pytest.fixture(scope="module")
def references():
    """{option: the ids collected with its `=` form from the project directory}: the reference
    is the same for both forms of an option, so it is collected once per option."""
    return {}


def values(tmp_path):
    model = tmp_path / "models" / "SmolLM2"
    return {"--rack": str(REPO / "rackgate/sim/racks/sim.toml"), "--atom-url": "http://127.0.0.1:9",
            "--served-model": str(model), "--baseline": str(REPO / "rackgate/sim/racks/sim-baseline.json"),
            "--alluredir": "allure"}


@pytest.mark.parametrize("form", ["space", "equals"])
@pytest.mark.parametrize("option", ["--rack", "--atom-url", "--served-model", "--baseline", "--alluredir"])
def test_option_forms_from_another_directory(option, form, outside, references):
    v = values(outside)
    extra = [] if option in ("--atom-url", "--rack") else [f"--atom-url={v['--atom-url']}"]
    value = v[option] if option != "--alluredir" else str(outside / v[option])
    # the reference: the `=` form, run from the project directory
    if option not in references:
        ref, reference = collect(REPO, *extra, f"{option}={value}")
        assert ref.returncode == 0 and reference, ref.stdout[-2000:] + ref.stderr[-2000:]
        references[option] = reference
    reference = references[option]
    args = [option, v[option]] if form == "space" else [f"{option}={v[option]}"]
    p, ids = collect(outside, *extra, *args)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert all(i.startswith(CHECKS) or is_row_id(i) for i in reference)   # from the project: its testpaths
    assert any(is_row_id(i) for i in reference), reference[:5]             # the declared checks among them
    assert checks_relative(ids) == checks_relative(reference), (ids[:5], p.stderr[-1000:])
    # every id a check of the package's (a declared row's item, or a module of rackgate/checks),
    # never a value taken for a path
    assert all(is_row_id(i) or (REPO / CHECKS / i.split("::")[0]).is_file() for i in checks_relative(ids)), ids[:5]
