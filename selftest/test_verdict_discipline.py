"""Could-not-observe is never a verdict on the rack (issue 10): a missing tool, a reading tool that
exits non-zero, and a parse that recognised nothing each raise a CouldNotObserve, with real
processes on this machine (Host + LocalRunner), never a FAILED diagnosis or a vacuous PASS."""
import textwrap

import pytest

from rackgate import config
from rackgate.errors import CouldNotObserve, ToolMissing, UnrecognisedOutput, require_records
from rackgate.fabric import ubench07
from rackgate.gates import fabric as judge
from rackgate.probes import amdsmi, gpus
from rackgate.transport import Host, LocalRunner

pytestmark = pytest.mark.suite


def _host(tmp_path, name="n1", tools: dict[str, str] | None = None) -> Host:
    """A local node whose PATH starts with executables written from `tools` ({name: sh body})."""
    bindir = tmp_path / f"{name}-bin"
    bindir.mkdir(exist_ok=True)
    for tool, body in (tools or {}).items():
        exe = bindir / tool
        exe.write_text("#!/bin/sh\n" + body + "\n")
        exe.chmod(0o755)
    return Host(name, LocalRunner(name, {"PATH": f"{bindir}:$PATH"}))


def test_require_missing_tool_names_executable_node_and_key(tmp_path):
    res = _host(tmp_path).run(["/opt/nowhere/ualoe_p2p.exe", "export", "-port=1"])
    assert res.rc == 127
    with pytest.raises(ToolMissing) as e:
        res.require(tool="/opt/nowhere/ualoe_p2p.exe", key="fabric.ubench_dir")
    assert str(e.value).startswith("node n1: /opt/nowhere/ualoe_p2p.exe (rack-file key fabric.ubench_dir)")


def test_require_nonzero_exit_is_could_not_observe_with_what_came_back(tmp_path):
    res = _host(tmp_path, tools={"amd-smi": "echo 'unsupported: static' >&2; exit 2"}).run(["amd-smi", "static", "--json"])
    with pytest.raises(CouldNotObserve) as e:
        res.require(tool="amd-smi")
    assert not isinstance(e.value, ToolMissing)
    assert "node n1" in str(e.value) and "exited 2" in str(e.value) and "unsupported: static" in str(e.value)


def test_require_silent_success_is_unrecognised(tmp_path):
    with pytest.raises(UnrecognisedOutput, match="printed nothing"):
        _host(tmp_path, tools={"lsmod": "exit 0"}).run(["lsmod"]).require()


def test_require_records_refuses_empty():
    assert require_records([1], "x", "here") == [1]
    with pytest.raises(UnrecognisedOutput, match="node a: amd-smi fabric: no GPU blocks recognised"):
        require_records([], "GPU blocks", "node a: amd-smi fabric")


# --- PLAT-GPUS --------------------------------------------------------------------------------
def test_plat_gpus_amdsmi_exit_2_is_not_a_missing_gpu(tmp_path):
    host = _host(tmp_path, tools={"amd-smi": "echo 'unsupported: static --asic' >&2; exit 2"})
    with pytest.raises(CouldNotObserve, match="unsupported: static"):
        gpus.read(host)


def test_plat_gpus_amdsmi_saying_no_gpu_is_still_a_finding(tmp_path):
    host = _host(tmp_path, tools={"amd-smi": "echo 'ERROR:root:Unable to detect any GPU devices, check amdgpu "
                                             "version and module status' >&2; exit 1"})
    facts = gpus.read(host)
    assert facts.gpus == [] and "Unable to detect any GPU devices" in facts.error


# --- FAB-UNPOPULATED --------------------------------------------------------------------------
def test_unpopulated_refuses_nothing_classified():
    with pytest.raises(UnrecognisedOutput, match="no GPU blocks"):
        judge.unpopulated("n1", [], {})
    bare = amdsmi.FabricGpu(0, "0000:05:00.0", 4, "4", None, None, "active", {})
    with pytest.raises(UnrecognisedOutput, match="n1/gpu0"):
        judge.unpopulated("n1", [bare], {})


# --- ubench07 not built ----------------------------------------------------------------------
def _rack(tmp_path, ubench_dir: str):
    return config.parse(textwrap.dedent(f"""
        name = "two"
        gpus_per_node = 1
        [fabric]
        ubench_dir = "{ubench_dir}"
        [[nodes]]
        name = "a"
        transport = "local"
        data_ip = "127.0.0.1"
        tray = 1
        [[nodes]]
        name = "b"
        transport = "local"
        data_ip = "127.0.0.1"
        tray = 2
    """))


def test_ubench07_missing_is_tool_missing_not_a_fabric_fault(tmp_path):
    missing = tmp_path / "no-build"
    rack = _rack(tmp_path, str(missing))
    hosts = {"a": _host(tmp_path, "a"), "b": _host(tmp_path, "b")}
    for tool in ("p2p", "bw"):
        result = ubench07.run_tool(tool, rack, hosts, [("a", "b")])
        run = result.runs["a-b"]
        exe = f"{missing}/ualoe_{tool}.exe"
        assert f"node a: {exe} (rack-file key fabric.ubench_dir) is not installed" in run.error
        assert run.client is None
        # FAB-P2P / FAB-BW judge nothing (the test raises could-not-observe with run.error) ...
        assert judge.p2p(run) == [] and judge.bandwidth(run, result.runs, rack.fabric) == []
    # ... and FAB-DMESG refuses to pass on runs that never happened.
    with pytest.raises(UnrecognisedOutput, match="no ubench07 runs that started both sides"):
        judge.dmesg_pair([run], {})


# --- [ssh] options ---------------------------------------------------------------------------
SSH_RACK = """
name = "r"
[ssh]
{ssh}
[[nodes]]
name = "a"
ssh = "root@127.0.0.1"
data_ip = "127.0.0.1"
tray = 1
"""


@pytest.mark.parametrize("line,msg", [
    ('options = ["-f"]', "'-f' is a command-line flag"),
    ('options = ["-F /etc/ssh/ssh_config"]', "command-line flag"),
    ('options = ["Port 22"]', "is not Key=Value"),
    ('options = ["NoSuchOption=1"]', "is not an option ssh accepts: command-line: line 0: Bad configuration option"),
    ('config = "/nonexistent/ssh_config"', "ssh config file '/nonexistent/ssh_config' does not exist"),
])
def test_ssh_options_validated_at_load(line, msg):
    with pytest.raises(config.RackFileError) as e:
        config.parse(SSH_RACK.format(ssh=line), "r.toml")
    assert msg in str(e.value) and "\n" not in str(e.value)


def test_ssh_config_file_is_passed_as_F(tmp_path):
    from rackgate.transport import host_for
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host *\n  Port 1\n")
    rack = config.parse(SSH_RACK.format(ssh=f'options = ["ConnectTimeout=3"]\nconfig = "{cfg}"'), "r.toml")
    opts = host_for(rack.nodes[0], rack).runner.opts
    assert opts[:2] == ["-F", str(cfg)] and "ConnectTimeout=3" in opts


# --- docs/catalogue.md: what each check needs to pass ----------------------------------------
def test_every_row_says_what_evidence_it_passes_on():
    from rackgate.catalogue import rows
    from rackgate.report import catalogue_page
    missing = [r.id for r in rows().values() if len(r.passes_on.strip()) < 20]
    assert missing == []
    page = catalogue_page.render([], [], None)
    assert "| passes only on (evidence read) |" in page
    fab = rows()["FAB-UNPOPULATED"]
    assert f"| {fab.passes_on} |" in page
