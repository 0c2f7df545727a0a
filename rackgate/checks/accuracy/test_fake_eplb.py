"""ACC-FAKE-EPLB: the server under an accuracy run was not launched with --fake-eplb."""
import pytest

from rackgate.atom import logfacts
from rackgate.errors import CouldNotObserve
from rackgate.fixtures.server import read_logs
from rackgate.gates import void
from rackgate.report.verdict import check


def _engine_kwargs(request, evidence) -> dict[str, dict[object, object]]:
    """node -> its last `Engine kwargs:` dict; empty when the logs cannot be read (attached)."""
    try:
        logs = request.getfixturevalue("server_logs")
    except pytest.skip.Exception:
        return {}
    out = {}
    for node, log in logs.items():
        recs = read_logs(log.grep, logfacts.ENGINE_KWARGS)
        if not recs:
            continue
        evidence.attach(f"Engine kwargs ({node})", recs[-1].raw)
        try:
            out[node] = logfacts.engine_kwargs(recs[-1].text)
        except logfacts.KwargsError as e:
            raise CouldNotObserve(f"{node}: line {recs[-1].lineno}: {e}") from None
    return out


@pytest.mark.row("ACC-FAKE-EPLB")
def test_no_fake_eplb(server, rack, evidence, request):
    kwargs = _engine_kwargs(request, evidence)
    # The rack file's command is what runs when the suite launched the server; attached, it
    # speaks for the server only when the server's own Engine kwargs cannot be read.
    command = rack.launch.command if (not server.attached or not kwargs) else None
    if command:
        evidence.attach("launch command (rack file)", command)
    if not command and not kwargs and not rack.nodes:
        pytest.skip("the suite did not launch this server (--atom-url without a rack file): no launch command and "
                    "no nodes to read its log from; pass --rack FILE naming its nodes to check its launch flags")
    if not command and not kwargs:
        raise CouldNotObserve("attached (--atom-url) with no launch.command in the rack file and no server log "
                              "with `Engine kwargs:`: cannot see how the server was launched")
    findings = void.judge(command, kwargs)
    seen = "; ".join(findings) + ("" if kwargs else " (the rack file's launch command: the server's log was not readable)")
    check(not findings, "ACC-FAKE-EPLB", rack.head.name, seen)
