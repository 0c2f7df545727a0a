"""SRV-LAUNCH-LINT, SRV-BOOT, SRV-RENDEZVOUS: the launch before it runs, and the boot as it runs."""
import pytest

from rackgate.atom.server import launch_command
from rackgate.errors import CouldNotObserve
from rackgate.gates import lint
from rackgate.probes import procs
from rackgate.report.verdict import check, fail


def _launch_command(rack) -> str:
    return launch_command(rack, rack.head, [n.name for n in rack.nodes].index(rack.head.name))


NOT_LAUNCHED = "the suite did not launch this server"


def _running_command(rack, request) -> tuple[str, dict[str, str], str]:
    """Attached: (command line, environment, where) of the process serving --atom-url, read from
    the head node's process table. SKIPPED only without a rack file (no nodes: nothing to read);
    could not observe when the head or ps cannot be read, or no process on the head serves the port."""
    from urllib.parse import urlparse

    url = rack.server.attach_url
    if not rack.nodes:
        pytest.skip(f"{NOT_LAUNCHED} (--atom-url without a rack file: no nodes to read its command line from)")
    hosts = request.getfixturevalue("hosts")
    head = hosts.get(rack.head.name)
    if head is None:
        raise CouldNotObserve(f"{NOT_LAUNCHED}, and its command line could not be read: "
                              f"{hosts.missing.get(rack.head.name, rack.head.name + ' is not reachable')}")
    port = urlparse(url).port or 80
    found = procs.serving(head, port)
    if found is None:
        raise CouldNotObserve(f"{NOT_LAUNCHED}, and no process on {rack.head.name} serves port {port} with "
                              "--model (ps -ww -eo pid=,args=): its command line could not be read; set [launch] "
                              "head to the node that runs it")
    pid, args = found
    env = procs.environ(head, int(pid))  # ps's pid: digits (procs.parse_serving)
    return args, env, f"{rack.head.name} pid {pid}"


@pytest.mark.row("SRV-LAUNCH-LINT")
def test_launch_lint(rack, evidence, request):
    cfg = rack.serving
    if rack.server.attach_url:
        cmd, env, where = _running_command(rack, request)
    else:
        cmd, env, where = _launch_command(rack), rack.launch.env, rack.head.name
    facts = lint.Facts(hbm_gib=rack.platform.hbm_gib, data_plane_nic=cfg.lint.data_plane_nic,
                       accuracy_run=cfg.lint.accuracy_run, unfused_gather_patch=cfg.lint.unfused_gather_patch,
                       profile_dir=cfg.profile_dir, batched_tokens_limit_small_hbm=cfg.lint.batched_tokens_limit_small_hbm,
                       small_hbm_gib=cfg.lint.small_hbm_gib)
    evidence.attach(f"launch command and environment ({where})",
                    cmd + "\n\n" + "\n".join(f"{k}={v}" for k, v in sorted(env.items())))
    findings = lint.lint(cmd, env, facts)
    check(not findings, "SRV-LAUNCH-LINT", where,
          f"{len(findings)} rule(s) broken:\n" + "\n".join(f"           - {f}" for f in findings))


def _boot(atom_server):
    if atom_server.attached:
        pytest.skip("attached (--atom-url): the suite did not launch this server, its boot was not watched")
    return atom_server.boot


@pytest.mark.row("SRV-BOOT")
def test_boot(atom_server, facts, evidence):
    """The reading is keyed by how the boot ended: a fatal line (its signature's meaning), the
    launch command's exit (code and last lines), a stall (SRV-RENDEZVOUS) or the budget."""
    b = _boot(atom_server)
    if b.excerpt:
        evidence.attach(f"log around the deciding line ({b.who or b.node})", b.excerpt)
    note = b.format_note
    if b.kind == "ready":
        facts.record("serving.cold_start_s", round(b.seconds, 1), where="rack", unit="s", row="SRV-BOOT")
        line = (f"ATOM's ready line at {b.ready_line_s:.1f}s" if b.ready_line_s is not None
                else "ATOM's ready line not seen")
        evidence.attach("boot", f"ready by the API (/v1/models lists a model, a completion for it returned) after "
                                f"{b.seconds:.1f}s; {line}" + (f"; {note}" if note else ""))
        if b.noted:  # signatures in records that went on (a WARNING "...; using unpinned."): evidence
            evidence.attach("fatal words in records that are not fatal", "\n".join(b.noted))
        return
    tail = f"\n           ({note})" if note else ""
    if b.kind == "fatal":
        fail("SRV-BOOT", b.who or b.node,
             f"line {b.lineno} of {atom_server.log_path(b.node)} after {b.seconds:.1f}s: {b.line}\n"
             + "\n".join("           " + x for x in b.excerpt.splitlines()[-14:]) + tail,
             means=f"a fatal line appeared while booting ({b.signature}, in {b.why or 'its record'}): {b.hint}")
    if b.kind == "stall":
        raise CouldNotObserve(f"the boot did not finish: {b.summary()}; see SRV-RENDEZVOUS")
    if b.kind == "died":
        code = f"code {b.exit_code}" if b.exit_code is not None else "no exit code written"
        fail("SRV-BOOT", b.who or b.node, _indent(b.detail) + tail,
             means=f"the launch command ended while booting ({code}): how it ended is read above (a signal, an "
                   f"error exit), with the record that explains it when the log has one and where to look next")
    if b.kind == "budget":
        fail("SRV-BOOT", b.who or b.node, _indent(b.detail) + tail,
             means="not ready within the budget; no fatal line seen: the last lines say how far it got "
                   "(a slow load, a hang, or a format the suite does not read)")
    raise CouldNotObserve(f"the boot could not be watched: {b.detail}")


def _indent(text: str) -> str:
    first, _, rest = text.partition("\n")
    return "\n".join([first] + ["           " + x for x in rest.splitlines()[-12:]])


@pytest.mark.row("SRV-RENDEZVOUS")
def test_rendezvous(atom_server, evidence):
    b = _boot(atom_server)
    if b.kind == "stall":
        evidence.attach(f"last lines on {b.node}", b.excerpt)
        fail("SRV-RENDEZVOUS", b.node, f"{b.node}: the log stopped at {b.line.strip()[:160]!r} "
             f"{b.detail} ago and nothing since")
    # ncclCommInitRank is collective: one node past it means every rank joined.
    if b.kind != "ready" and not b.past_rendezvous:
        raise CouldNotObserve(f"the boot ended before the NCCL rendezvous: {b.summary()}")
