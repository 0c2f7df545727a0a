"""The self-tests under `pytest -n 3 --dist loadgroup` (the README's self-test command): every
module runs whole on one worker (its module-scoped fixtures — one foreign rack, one recorded
baseline, one fault-matrix pool — are made once), unless it names a group of its own (the
real-engine modules share one, so their model servers are started once per run). The longest
groups are handed out first (the fault matrix, the real engine, the tool-failure runs), so the
other workers work through the rest beside them. Three workers on two cores: the workers mostly wait on the suite
runs and servers they start."""
import pytest

from rackgate.fixtures.rack import JUDGES_NO_RACK

from . import gsm8k_data


def pytest_configure(config):
    """The self-tests' own session checks no rack: no rack header, no verdict file (the suite runs
    they start are sessions of their own)."""
    config.stash[JUDGES_NO_RACK] = True
    # issue 36's cost tiers (it registers them for the whole tree; registering twice is harmless)
    for tier in ("unit", "suite", "matrix", "realengine", "system"):
        config.addinivalue_line("markers", f"{tier}: self-test tier (issue 36)")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the groups into node-id suffixes
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    items.sort(key=_longest_first)  # stable: the order within a module is kept


FIRST = ("selftest.test_fault_matrix", "selftest.realengine.", "selftest.test_tool_failures")


def _longest_first(item) -> int:
    name = item.module.__name__
    return next((i for i, p in enumerate(FIRST) if name == p or name.startswith(p)), len(FIRST))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist, on the controller: tell each worker how tests are handed out. A worker's own config
    says `--dist no`, so without this a module could not know it runs whole on one worker (the
    fault matrix then started its runs one test at a time instead of all at once)."""
    node.workerinput["rackgate_dist"] = node.config.getvalue("dist")


@pytest.fixture(scope="session")
def gsm8k_dir():
    """Real GSM8K rows (selftest/gsm8k_data.py): skipped naming the directory and
    RACKGATE_GSM8K_DIR where they are absent; a failure with RACKGATE_GSM8K=require."""
    d = gsm8k_data.location()
    why = gsm8k_data.missing(d)
    if why:
        if gsm8k_data.required():
            pytest.fail(f"{why}; RACKGATE_GSM8K=require", pytrace=False)
        pytest.skip(why)
    return d
