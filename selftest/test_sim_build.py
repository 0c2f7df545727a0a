"""The sim's built nodes: their executables import no typed state, a failed build leaves nothing
(starts processes; the sim's data alone: test_sim_data.py)."""
import os
import tempfile

import pytest

pytestmark = pytest.mark.suite


def test_node_executables_import_no_typed_state():
    """Every probe of the sim starts one of these executables (thousands per self-test run): they
    read state.json through rackgate.sim.nodeview, never the typed build side (dataclasses)."""
    import subprocess
    import sys

    from rackgate.sim.render import PKG_ROOT, tools

    mods = [f"rackgate.sim.tools.{m}" for m in tools().values()]
    code = ("import importlib, sys\n"
            f"for m in {mods!r}: importlib.import_module(m)\n"
            "print(sorted(m for m in sys.modules if m in ('dataclasses', 'rackgate.sim.state', 'pydantic')))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": PKG_ROOT, "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", f"the node executables import {out.stdout.strip()}"


def test_a_failed_build_leaves_no_directory(monkeypatch):
    """An unknown fault (or no free ports) stops a build after its directory was made: the
    directory goes too (self-test runs left hundreds of empty rackgate-sim-* in /tmp). Only the
    directory this build made is watched: what else the system temp dir holds (the sim's GSM8K
    set, made on first use; other runs' directories) is not this build's, whether there or not."""
    import threading

    from rackgate.config import load
    from rackgate.sim import rack as sim_rack
    made, me, real = [], threading.get_ident(), tempfile.mkdtemp

    def mkdtemp(*args, **kwargs):
        d = real(*args, **kwargs)
        if threading.get_ident() == me:
            made.append(d)
        return d

    monkeypatch.setattr(sim_rack.tempfile, "mkdtemp", mkdtemp)
    with pytest.raises(Exception, match="no-such-fault"):
        sim_rack.build(load(sim_rack.SHIPPED_RACK), ["no-such-fault"])
    assert made and all("rackgate-sim-" in d for d in made), made
    assert [d for d in made if os.path.exists(d)] == []
