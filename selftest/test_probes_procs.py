"""Attach mode reads the serving process from the node: its command line from `ps` and its
environment from /proc/PID/environ (rackgate.probes.procs), here against a real process."""
import sys

import pytest

from rackgate.errors import CouldNotObserve
from rackgate.probes import procs
from rackgate.transport import Host, LocalRunner
from rackgate.transport.deadline import wait_for

pytestmark = pytest.mark.suite


def test_parsers():
    ps = "  17 /usr/bin/python3 -m atom.entrypoints.openai_server --model /m --server-port=8000\n 18 sleep 9\n"
    assert procs.parse_serving(ps, 8000) == ("17", "/usr/bin/python3 -m atom.entrypoints.openai_server --model /m "
                                                   "--server-port=8000")
    assert procs.parse_serving(ps, 800) is None
    # the launch's shell wrapper lists the same flags first (a lower PID): the server is the process it started
    wrapped = ("  9 /bin/bash -c cd /w && python3 -m atom.entrypoints.openai_server --model /m --server-port 8000\n"
               "  10 sh -c export A=1; exec \"$@\" sh python3 -m atom.entrypoints.openai_server --model /m --port 8000\n"
               + ps)
    assert procs.parse_serving(wrapped, 8000)[0] == "17"
    assert procs.parse_serving(wrapped.split("\n  17")[0], 8000) is None  # not exec'd yet: nothing serves
    assert procs.parse_environ("A=1\0B=x=y\0junk\0") == {"A": "1", "B": "x=y"}


def test_serving_process_and_its_environ_on_a_real_process(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    host = Host("n1", LocalRunner("n1"))
    port = 40000 + hash(str(tmp_path)) % 20000
    proc = host.spawn([sys.executable, "-c", "import time; time.sleep(300)  # " + "x" * 80, "--model", "/m",
                       "--port", str(port)],
                      str(tmp_path / "p.log"), {"RG_MARK": "it's \"q\""})
    try:
        found = wait_for(lambda: procs.serving(host, port), 60)  # the spawn's `sh -c ... exec` is not it
        # the whole command line, however wide: ps truncates args to $COLUMNS without -ww
        assert found is not None and found[0] == str(proc.pid)
        assert procs.environ(host, int(found[0]))["RG_MARK"] == "it's \"q\""
    finally:
        proc.stop(grace_s=2)
    with pytest.raises(CouldNotObserve, match="environ"):
        procs.environ(host, 2 ** 22 + 1)
