"""The suite's own launch path against a real engine: a one-node local rack (`container = ""`)
whose `[launch] command` starts `transformers serve` (SmolLM2), run as a user runs it
(`pytest --rack FILE ...` in a subprocess). The engine logs nothing ATOM writes: no ready line,
no `Engine kwargs:` line.

- healthy (one run: the request checks, SRV-ALIVE and the log checks) and `!` (bang): launched
  once per session (the launch command counts itself), ready by the API's evidence (never the
  budget), the checks run, the log checks could-not-observe (never FAILED for a line the engine
  does not write, its own log or an empty one), the engine stopped at the end;
- a bad flag: the command exits at once; SRV-BOOT fails naming the exit code and the last lines;
- a command that never listens: SRV-BOOT fails at the budget with "not ready within the budget".
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rackgate.ids import check_of

from ..harness import run_suite
from ..test_cleanup import processes_mentioning
from .server import free_loopback_port

pytestmark = [pytest.mark.realengine, pytest.mark.timeout(900)]

BOOT = "SRV-BOOT::server"
RENDEZVOUS = "SRV-RENDEZVOUS::server"
MODELS = "SRV-MODELS::server"
SANITY = "SRV-SANITY::server"
ENGINE_ARGS = "SRV-ENGINE-ARGS::cpu"  # the one node's
# every check that reads the server log (docs/serving.md, "what a missing line means")
LOG_CHECKS = ("SRV-KV", ENGINE_ARGS, "SRV-TRANSLATION",
              RENDEZVOUS, "SRV-DEADLOCK")
SUITE_TIMEOUT = 600


def _rack(tmp_path: Path, engine_bin: Path, cache: Path, model: str, *, extra: str = "", budget: float = 300,
          command: str | None = None, serving: str = "", max_tokens: int = 16) -> Path:
    port = free_loopback_port()
    counter = tmp_path / "launches"
    serve = (f"{engine_bin / 'transformers'} serve {model} --device cpu --host 127.0.0.1 --port {{port}} "
             f"--log-level info {extra}")
    command = command if command is not None else f"echo launched >> {counter}; cd {cache} && exec {serve}"
    # RG_LAUNCH_DIR: the engine's environment names this test's directory, so that
    # processes_mentioning(tmp_path) finds the engine itself (its command line, once exec'd, does not);
    # torch's compile cache goes there too, not into the run's TMPDIR (the engine's, not the suite's)
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1",
           "RG_LAUNCH_DIR": str(tmp_path), "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "torchinductor")}
    text = "\n".join([
        'name = "realengine-launch"', 'container = ""', "",
        "[[nodes]]", 'name = "cpu"', 'transport = "local"', 'data_ip = "127.0.0.1"', "tray = 1", "",
        "[server]", f"served_model = {json.dumps(model)}", "",
        "[serving]", "request_timeout_s = 300", serving, "",
        "[launch]", f"command = {json.dumps(command)}", f"port = {port}",
        f"log_path = {json.dumps(str(tmp_path / 'engine-{node}.log'))}",
        f"boot_budget_s = {budget}", "ready_poll_s = 0.5", "liveness_poll_s = 1", "stop_grace_s = 10",
        "env = {" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + "}", "",
        "[accuracy]", f"max_tokens = {max_tokens}",
    ])
    path = tmp_path / "rack.toml"
    path.write_text(text + "\n")
    return path


def _run(tmp_path: Path, rack: Path, *ids: str, timeout: float = SUITE_TIMEOUT):
    run = run_suite(tmp_path, *ids, "--rack", str(rack), timeout=timeout)
    assert processes_mentioning(str(tmp_path)) == [], "the engine outlived the run"
    return run


def _launches(tmp_path: Path) -> int:
    counter = tmp_path / "launches"
    return len(counter.read_text().splitlines()) if counter.exists() else 0


# the request checks the launched engine is asked, the rack's four DP ranks each asked without the
# refused hint: SRV-SANITY (the API's evidence of health) and SRV-LONGCTX (PASSED only here: after
# its long prompts it reads the server's log for the PHINode assertion, and only a launched
# server's log is read: in the three-healthy gate it could not observe, no docker). SRV-CONSISTENCY,
# SRV-STREAM-CONSISTENCY and ACC-BUDGET (at max_tokens 256) were asked here too until wave 11: their
# verdicts on a healthy real engine are test_suite_on_engine.py's healthy test (STREAM, BUDGET) and
# test_partly_broken.py's three-healthy gate (CONSISTENCY and every other request check), and the
# refusal is decided once for the server (rackgate.atom.fanout.takes_rank_hint), so every check
# after it asks the same way, without the hint (selftest/serving/test_rank_hint.py on a strict server).
# SRV-LONGCTX's prompts are 3 x ATOM's --max-num-batched-tokens by default, 49152 tokens, beyond
# SmolLM2's 8192 positions: the rack file sets serving.longctx_words to fit; what the test proves is
# the refused hint, not the length, so 300 words (2000 made four 2,008-token prefills, 33 engine CPU
# s against 6; docs/performance.md)
LONGCTX_WORDS = 300
LONGCTX = "SRV-LONGCTX::server"
REQUEST_CHECKS = (SANITY, LONGCTX)
ALIVE = "SRV-ALIVE"


def _log_checks_could_not_observe(run) -> None:
    """Every log-reading check could-not-observe (none FAILED, none PASSED on the log), but
    SRV-RENDEZVOUS, PASSED: ready by the API, every rank joined."""
    st = {k: o.status for k, o in run.outcomes.items() if check_of(k) in {check_of(c) for c in LOG_CHECKS}}
    rendezvous = st.pop(RENDEZVOUS)
    assert rendezvous == "passed", run.stdout[-3000:]
    assert st and set(st.values()) == {"error"}, st
    assert "rackgate: server log: " in run.stdout and "the log-reading checks could not observe" in run.stdout
    for k in st:
        assert "could not observe" in run.outcomes[k].message or "nothing to judge" in run.outcomes[k].message, \
            run.outcomes[k].message


@pytest.mark.timeout(1500)
def test_healthy_engine_launched_once_ready_by_the_api_refusing_the_rank_hint(engine_bin, models, tmp_path):
    """One launch of the healthy engine (each launch is an engine start and a suite run; these were
    three tests, wave 8), run with SRV-SANITY, SRV-LONGCTX, SRV-ALIVE and every log-reading check
    (REQUEST_CHECKS says where the other request checks' verdicts are proven, wave 11):

    - launched once, ready by the API (SRV-BOOT, SRV-MODELS, SRV-SANITY PASSED), the engine's own log
      written (`Uvicorn running on`);
    - transformers serve refuses unknown request fields (HTTP 422 naming data_parallel_rank): the
      one-node rack's four DP ranks are asked without the hint, decided once, and said; no check
      blames the server for the refusal (SRV-SANITY and SRV-LONGCTX PASSED). SRV-ALIVE alone cannot
      see a rank without it;
    - its log holds no line ATOM writes: every check that reads the log is could-not-observe (no
      `Engine kwargs:` line for SRV-ENGINE-ARGS), none FAILED, none PASSED on it."""
    rack = _rack(tmp_path, engine_bin, models.cache, models.name("healthy"), serving=f"longctx_words = {LONGCTX_WORDS}")
    # the three runs' bound together, less the two boots (a bound on a hang, not a speed)
    run = _run(tmp_path, rack, BOOT, MODELS, *REQUEST_CHECKS, ALIVE, *LOG_CHECKS, timeout=3 * SUITE_TIMEOUT - 400)
    st = {k: o.status for k, o in run.outcomes.items()}
    for tid in (BOOT, MODELS, *REQUEST_CHECKS):
        assert st.get(tid) == "passed", (tid, st, run.outcomes[tid].message[:1500] if tid in run.outcomes else "")
    assert st[ENGINE_ARGS] == "error", run.stdout[-3000:]  # no `Engine kwargs:` line: could not observe
    assert "no `Engine kwargs:` line" in run.outcomes[ENGINE_ARGS].message
    assert _launches(tmp_path) == 1
    assert "Uvicorn running on" in (tmp_path / "engine-cpu.log").read_text()
    alive = {k: o for k, o in run.outcomes.items() if k.startswith(ALIVE)}
    assert alive and {o.status for o in alive.values()} == {"error"}, st
    assert all("data_parallel_rank" in o.message and "spread over the server without it" in o.message
               for o in alive.values()), [o.message[:300] for o in alive.values()]
    _log_checks_could_not_observe(run)
    # nothing FAILED: the refusal is not the rack's fault (the run is unknown for SRV-ALIVE alone),
    # and a line the engine does not write is not a fault either
    assert not [i for i in run.verdict["items"] if i["outcome"] == "FAIL"], run.verdict["items"]


def test_no_log_reading_check_fails_on_a_log_it_cannot_read(engine_bin, models, tmp_path):
    """The engine boots (ready by the API) but its log is empty: every check that reads the log is
    could-not-observe, none FAILED, none PASSED on it (transformers serve's own log, which holds no
    line ATOM writes: the launched healthy engine's test above)."""
    rack = _rack(tmp_path, engine_bin, models.cache, models.name("healthy"), extra="> /dev/null 2>&1")
    run = _run(tmp_path, rack, BOOT, *LOG_CHECKS)
    assert run.outcomes[BOOT].status == "passed", run.stdout[-3000:]
    _log_checks_could_not_observe(run)


def test_bang_engine_boots_and_sanity_fails(engine_bin, models, tmp_path):
    rack = _rack(tmp_path, engine_bin, models.cache, models.name("bang"))
    run = _run(tmp_path, rack, BOOT, MODELS, SANITY)
    assert run.outcomes[BOOT].status == run.outcomes[MODELS].status == "passed", run.stdout[-3000:]
    assert run.outcomes[SANITY].status == "failed", run.stdout[-3000:]
    assert "!!" in run.outcomes[SANITY].message, run.outcomes[SANITY].message
    assert _launches(tmp_path) == 1


def test_a_bad_flag_fails_the_boot_with_the_exit_code_and_last_lines(engine_bin, models, tmp_path):
    rack = _rack(tmp_path, engine_bin, models.cache, models.name("healthy"), extra="--no-such-flag")
    run = _run(tmp_path, rack, BOOT, SANITY)
    assert run.outcomes[BOOT].status == "failed", run.stdout[-3000:]
    msg = run.outcomes[BOOT].message
    assert "exited with code 2" in msg and "transformers serve --help" in msg, msg  # typer's usage text
    assert "not ready within the budget" not in msg, msg


def test_a_launch_that_never_listens_ends_at_the_budget(tmp_path):
    rack = _rack(tmp_path, Path("/nonexistent"), tmp_path, "m", budget=4,
                 command=f"echo 'loading {tmp_path}'; exec sleep 600")
    run = _run(tmp_path, rack, BOOT)
    assert run.outcomes[BOOT].status == "failed", run.stdout[-3000:]
    msg = run.outcomes[BOOT].message
    assert "not ready within the budget" in msg and "no fatal line seen" in msg and "loading" in msg, msg
