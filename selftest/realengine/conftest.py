"""Fixtures for the real-engine self-tests: the venv, the model folders, and servers we own.

Every test module here sets `pytestmark = pytest.mark.realengine`, so `-m realengine` runs them and
`-m "not realengine"` leaves them out. Under `pytest -n N --dist loadgroup` the modules that borrow
the session's servers run in the groups selftest/tiers.py SHARED names (three: each worker with its
own server per variant, made once there). Without
the venv they are skipped with the install command, unless RACKGATE_REALENGINE=require (CI)
makes that a failure.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from rackgate.transport import interrupt

from .. import gsm8k_data
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
    """serve(variant) -> a context manager lending the session's one server of that variant.

    Each variant's server is started the first time a test asks for it and stopped (by PID) at
    the end of the session, not after each test: the tests only send requests, and a start-up
    costs 10-40 s on 2 cores. One that died since is started again. At most one server per
    variant (four variants, about 1.2 GB RSS each) runs at a time."""
    logs = tmp_path_factory.mktemp("serve-logs")
    running: dict[str, TransformersServer] = {}

    @contextlib.contextmanager
    def _serve(variant: str):
        srv = running.get(variant)
        if srv is None or not srv.alive():
            if srv is not None:
                srv.stop()
            srv = TransformersServer(engine_bin, models.cache, models.name(variant), logs / f"{variant}.log")
            running[variant] = srv.start()
        yield srv

    try:
        yield _serve
    finally:
        for srv in running.values():
            srv.stop()


@pytest.fixture(scope="session")
def gsm8k_dir(gsm8k_dir, tmp_path_factory) -> Path:
    """The real-engine self-tests' GSM8K directory: the shortest rows of the shared one
    (gsm8k_data.shortest), written once per session under pytest's tmp. An engine here prefills
    every prompt on one CPU thread, and these tests prove the gate's verdicts on healthy and broken
    engines, not SmolLM2's accuracy: the 5 shots stay (at 1 shot SmolLM2 answered nothing), the rows
    are the shortest (the quick gate's 5-shot prompts: ~490 tokens instead of ~1,020)."""
    return gsm8k_data.shortest(gsm8k_dir, tmp_path_factory.mktemp("gsm8k-short"))


@pytest.fixture(scope="session")
def healthy(serve):
    """The healthy server, shared by the whole session."""
    with serve("healthy") as srv:
        yield srv


def pytest_configure(config):
    """SIGTERM/Ctrl-C end the engine servers these self-tests started (by PID), as in a suite run."""
    interrupt.install()
