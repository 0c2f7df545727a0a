"""The self-tests under `pytest -n 5 --dist loadgroup` (the README's self-test command).

Every self-test module carries exactly one tier mark (selftest/tiers.py: unit, suite, matrix,
realengine, system); a module with none or more than one stops the run at collection, naming it.
From the tiers follows the rest:
- the grouping: every module runs whole on one worker (its module-scoped fixtures -- one foreign
  rack, one recorded baseline, one fault-matrix pool -- are made once), unless selftest/tiers.py
  SHARED puts it in a group with others (the real-engine modules that borrow the session's model
  servers: two groups) or its tests name a group of their own (the tool-failure selections);
- the hand-out order (selftest/tiers.py `order`): the longest groups of LONG first, longest first,
  then the groups that mostly wait on a clock (WAITS: their waits overlap the CPU-bound groups instead
  of idling the run's end), then the other long groups, then the rest by tier (TIERS: matrix,
  realengine, system, suite, unit), so the longest chains start first, the unit tier fills the gaps at
  the end; xdist's own reordering by number of tests is off (it handed the one-test modules, the
  longest of all, out last);
- the guard: a `unit` test that starts a process, builds the sim or listens on a socket fails,
  naming itself (tiers.unit_guard), so the quick tier stays quick.
Five workers on two cores: the workers often wait on the suite runs and servers they start (the real
engines' one thread a request, hang floors, settle windows); with three the run's last minutes had a
core idle, with five the CPU stays busy to the end (docs/performance.md, wave 10)."""
from pathlib import Path

import pytest

from .bytecode import keep_bytecode

keep_bytecode()  # first: the modules imported below and the self-test modules collected after

from rackgate.hooks.rack import JUDGES_NO_RACK  # noqa: E402

from . import gsm8k_data, tiers  # noqa: E402

HERE = Path(__file__).resolve().parent


def pytest_configure(config):
    # The self-tests' own session checks no rack: no rack header, no verdict file (the suite runs
    # they start are sessions of their own).
    config.stash[JUDGES_NO_RACK] = True
    for name, (what, _) in tiers.TIERS.items():
        config.addinivalue_line("markers", f"{name}: self-test tier: {what} (selftest/tiers.py)")
    if hasattr(config.option, "loadscopereorder"):
        # xdist (3.x) hands groups out by number of tests, most first, unless told not to: the
        # order below would be lost (the one-test typed forms and tool failures went out last)
        config.option.loadscopereorder = False


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    """A self-test module without exactly one tier is a collection error, one line naming it (the
    run stops there, under xdist too)."""
    rep = yield
    if isinstance(collector, pytest.Module) and rep.passed and HERE in collector.path.parents:
        why = tiers.problem(collector.module.__name__, tiers.tiers_of(collector))
        if why:
            rep.outcome, rep.longrepr, rep.result = "failed", why, []
    return rep


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the groups into node-id suffixes
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(tiers.group_of(item.module.__name__)))
    items.sort(key=tiers.order)  # stable: the order within a group and a tier is kept


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A `unit` test runs (fixtures, call, teardown) with processes, sim builds and servers refused."""
    if item.get_closest_marker("unit") is None:
        return (yield)
    with tiers.unit_guard(item.nodeid):
        return (yield)


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


@pytest.fixture(scope="session")
def wheel_install(tmp_path_factory):
    """The wheel built from a copy of this tree, installed into a fresh venv (selftest/wheel_venv.py),
    made once for the modules that run it (test_wheel.py, test_typed_forms.py: one xdist group,
    selftest/tiers.py SHARED). Neither changes the venv: each run writes into its own directory."""
    from . import wheel_venv  # here: the conftest's own imports stay light (test_tier_marks.py copies it)
    return wheel_venv.build(tmp_path_factory.mktemp("wheel"))
