"""Fixtures for the real-engine self-tests: the venv, the model folders, and servers we own.

Every test module here sets `pytestmark = pytest.mark.realengine`, so `-m realengine` runs them and
`-m "not realengine"` leaves them out. Without the venv they are skipped with the install command,
unless RACKGATE_REALENGINE=require (CI) makes that a failure.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from rackgate.transport.procs import install_signal_handlers

from . import env
from .model_store import ModelStore, ensure_models
from .server import TransformersServer


@pytest.fixture(scope="session")
def engine_bin() -> Path:
    why = env.missing()
    if why:
        if env.required():
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return env.venv_bin()


@pytest.fixture(scope="session")
def models(engine_bin) -> ModelStore:
    # cheap when install.sh already built them (it does, in CI): a stamp check in a subprocess
    return ensure_models(engine_bin / "python")


@pytest.fixture(scope="session")
def serve(engine_bin, models, tmp_path_factory):
    """serve(variant) -> a context manager that owns one server of that model variant."""
    logs = tmp_path_factory.mktemp("serve-logs")

    @contextlib.contextmanager
    def _serve(variant: str):
        srv = TransformersServer(engine_bin, models.cache, models.name(variant), logs / f"{variant}.log")
        with srv:
            yield srv

    return _serve


@pytest.fixture(scope="session")
def healthy(serve):
    """One healthy server for the whole session (start-up costs 10-40 s on 2 cores)."""
    with serve("healthy") as srv:
        yield srv


def pytest_configure(config):
    """SIGTERM/Ctrl-C end the engine servers these self-tests started (by PID), as in a suite run."""
    install_signal_handlers()
