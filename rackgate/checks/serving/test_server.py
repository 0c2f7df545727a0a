"""SRV-PROFILE: profiling writes traces. (SRV-MODELS, SRV-ALIVE, SRV-SANITY and SRV-CONSISTENCY are
declared: rackgate/gates/srv.py.)"""

import pytest

from rackgate.atom.client import refusal
from rackgate.atom.logs import rank_table
from rackgate.errors import CouldNotObserve
from rackgate.fixtures.server import settle_errors
from rackgate.probes import traces
from rackgate.report.verdict import check


@pytest.mark.row("SRV-PROFILE")
def test_profile_writes_traces(server, per_rank, rack, evidence):
    cfg = rack.serving
    if not cfg.profile_dir:
        pytest.skip("serving.profile_dir is not set in the rack file: profiling is not asked for")
    c = server.client
    started = c.post("/start_profile")
    evidence.attach("POST /start_profile", started.evidence(), "json")
    # the load while profiling: every rank asked (per_rank), at least profile_requests requests
    spread = per_rank.ask(["The capital of France is"], 8, attached=cfg.profile_requests,
                          at_least=cfg.profile_requests, stream=False)
    evidence.attach("completions while profiling, all ranks", spread.evidence())
    settle_errors(spread, "SRV-PROFILE", server, evidence, "POST /v1/completions while profiling")
    stopped = c.post("/stop_profile", timeout=cfg.profile_wait_s + 60)
    evidence.attach("POST /stop_profile", stopped.evidence(), "json")
    if started.status != 200 or stopped.status != 200:
        raise CouldNotObserve(f"/start_profile {refusal(started)}, /stop_profile {refusal(stopped)}")
    table = rank_table(rack)
    logs = server.node_logs()
    want = {r: f"{cfg.profile_dir.rstrip('/')}/dp{r}_tp0" for r in table}
    missing = traces.missing_traces({r: (logs[table[r]].host, d) for r, d in want.items()}, cfg.profile_wait_s)
    evidence.attach("ranks without a trace", "\n".join(f"dp{r}: {d}" for r, d in missing.items()) or "(none)")
    check(not missing, "SRV-PROFILE", ", ".join(sorted({table[r] for r in missing})) or rack.name,
          f"/start_profile answered {started.status} {started.body.get('message')!r}, yet {len(missing)} of "
          f"{len(want)} ranks have no non-empty *.pt.trace.json.gz after {cfg.profile_wait_s:g}s: "
          + ", ".join(f"dp{r}" for r in list(missing)[:8]) + ("…" if len(missing) > 8 else ""))
