"""The rack's hooks: the rack file (or the sim, or the attach profile) loaded, validated and overridden
once at start-up into the stash (RACK_FILE), its profile in the run's header (pytest_sessionstart), --sim-faults-list,
every process the run started ended by PID at the session's end. The `rack` fixture and get_rack read it:
rackgate/fixtures/rack.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from rackgate import config as rackfile
from rackgate import secrets, simrack
from rackgate.fixtures.rack import BUILT, RACK_FILE, user_overrides
from rackgate.transport import REGISTRY, interrupt

PROFILE = pytest.StashKey[str]()


ATTACH_PROFILE = "attach without a rack file"


def beside(rack: rackfile.Rack, path: Path) -> rackfile.Rack:
    """A simulated rack's relative `baseline` naming a file beside its rack file is that file
    (the shipped sim rack's recording lives in the package, read from any directory)."""
    near = path.parent / rack.baseline
    if rack.sim is None or Path(rack.baseline).is_absolute() or not near.is_file():
        return rack
    return rack.model_copy(update={"baseline": str(near.resolve())})


def attach_profile() -> rackfile.Rack:
    """The rack-file defaults for a real rack, with no nodes: a server the suite did not launch
    and whose machines it was not told about."""
    rack = rackfile.Rack.model_validate({"name": "attached", "sim": {}})
    return rack.model_copy(update={"sim": None})


def is_attach_profile(config: pytest.Config) -> bool:
    return config.stash.get(PROFILE, "") == ATTACH_PROFILE


# A session that checks no rack -- a test session of its own that loads the plugin (rackgate's
# self-tests: selftest/conftest.py sets it): no rack header, no verdict file.
JUDGES_NO_RACK = pytest.StashKey[bool]()


def judges_no_rack(config) -> bool:
    return bool(config.stash.get(JUDGES_NO_RACK, False))


def header_lines(config) -> list[str] | None:
    """Which rack configuration, GSM8K data and thresholds are in force."""
    if PROFILE not in config.stash:
        return None
    rack = config.stash[RACK_FILE]
    acc = rack.accuracy
    if rack.sim is not None:
        data = "the sim's data (accuracy.gsm8k_dir is set by the sim)"
    else:
        data = acc.gsm8k_dir or "lm-eval's gsm8k dataset (openai/gsm8k from the Hugging Face hub)"
    lines = [f"rackgate: {config.stash[PROFILE]}"
             + (f", attached to {rack.server.attach_url} serving {rack.server.served_model!r}"
                if rack.server.attach_url else ""),
             f"rackgate: GSM8K data: {data}",
             f"rackgate: thresholds: ACC-QUICK pass at accuracy >= {acc.quick_pass:.4f}, fail at <= "
             f"{acc.quick_fail_accuracy:.4f}; ACC-GSM8K strict-match >= {acc.floor:.4f}; max_tokens {acc.max_tokens}; "
             f"{acc.num_concurrent} requests in flight at most"]
    if is_attach_profile(config):
        lines.append("rackgate: no rack file: no nodes, no launch (launch lint, boot and log checks do not apply); "
                     "Kimi-K3's thresholds (pass --rack FILE for your model's)")
    return lines


def pytest_configure(config: pytest.Config) -> None:
    opt = config.option
    if getattr(opt, "sim_faults_list", False):
        return
    path = Path(opt.rack) if opt.rack else simrack.shipped_rack()
    if opt.atom_url and not opt.rack:
        rack, profile = attach_profile(), ATTACH_PROFILE
        if opt.sim_fault:
            raise pytest.UsageError("--sim-fault applies to the simulated rack; --atom-url without --rack attaches "
                                    "to a real server")
    else:
        try:
            rack = beside(rackfile.load(path), path)
        except rackfile.RackFileError as e:
            raise pytest.UsageError(str(e)) from None
        profile = f"rack file {path}" if opt.rack else f"the simulated rack ({path})"
    rack = user_overrides(config, rack)
    if opt.gsm8k_dir:
        from rackgate.gsm8k.data import DataError, check_dir
        try:
            check_dir(opt.gsm8k_dir)
        except DataError as e:
            raise pytest.UsageError(f"--gsm8k-dir: {e}") from None
        rack = rack.model_copy(update={"accuracy": rack.accuracy.model_copy(
            update={"gsm8k_dir": str(Path(opt.gsm8k_dir).resolve())})})
    config.stash[PROFILE] = profile
    if opt.sim_fault and rack.sim is None:
        raise pytest.UsageError(f"--sim-fault applies to the simulated rack only; {path} is a real rack")
    try:
        simrack.check_faults(opt.sim_fault)
    except simrack.FaultError as e:
        raise pytest.UsageError(str(e)) from None
    secrets.register_rack(rack)
    config.stash[RACK_FILE] = rack
    config.stash[BUILT] = {}
    interrupt.install()


def pytest_sessionstart(session):
    """The header, also under -q: which rack configuration, GSM8K data and thresholds are in force."""
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if judges_no_rack(session.config):
        return  # a session that checks no rack: the header would be noise
    lines = header_lines(session.config)
    if tr is not None and lines:
        for line in lines:
            tr.write_line(line)


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if config.option.sim_faults_list:
        print("\n".join(simrack.fault_lines()))
        return 0
    return None


def pytest_unconfigure(config):
    built = config.stash.get(BUILT, {})
    REGISTRY.stop_all()
    if "sim" in built:
        built["sim"].stop()


def pytest_sessionfinish(session):
    # Also on Ctrl-C and failing tests: end every process we started, by PID.
    REGISTRY.stop_all()
