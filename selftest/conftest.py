"""The self-tests under `pytest -n 2 --dist loadgroup` (the README's self-test command): every
module runs whole on one worker (its module-scoped fixtures — one foreign rack, one recorded
baseline, one fault-matrix pool — are made once), unless it names a group of its own (the
real-engine modules share one, so their model servers are started once per run)."""
import pytest


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the groups into node-id suffixes
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
