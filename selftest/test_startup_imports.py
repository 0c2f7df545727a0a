"""What a suite run's start-up imports (docs/performance.md, wave 5): the HTTP client's requests
(urllib3, chardet, charset_normalizer: ~0.19 CPU s a process) is loaded where a request is made,
so a run that asks no server -- `-m platform`, `-m fabric` -- does not pay for it. A suite run as
the self-tests start it (harness.SUITE_PLUGINS), collection only, its sys.modules read when pytest.main
returns (not `python -X importtime`: that times only the `import` statement's machinery, and pytest 9.1
imports `-p` plugins and the modules they name through importlib, so a fresh venv's newer pytest printed
no line for the plugin's fixture modules). Nor the server's own chain (its launch, boot watch and
life: rackgate/fixtures/server.py) or the GSM8K glue (rackgate/fixtures/quick_gate.py), imported by the
fixtures that use them (wave 11); and the garbage collector, paused while the run starts
(rackgate/pytest_plugin.py `pytest_addhooks`), is running again when it ends, what start-up made
frozen (wave 11)."""
import subprocess
import sys

import pytest

from .harness import REPO, SUITE_PLUGINS, user_env

pytestmark = pytest.mark.suite

HEAVY_FOR_A_SERVER = ("requests", "urllib3", "chardet", "charset_normalizer")
# what a run imports when a selected check asks for the server or the quick gate's questions
FOR_THE_SERVER = ("rackgate.atom.server", "rackgate.atom.life", "rackgate.atom.watch", "rackgate.atom.served",
                  "rackgate.gsm8k.session", "rackgate.gsm8k.lmeval", "rackgate.gsm8k.setup")


def test_a_run_that_asks_no_server_does_not_import_the_http_client():
    """`-m platform` (every check module is collected whatever the selection: `-m fabric` imports
    the same)."""
    env = {**user_env(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": str(REPO)}
    run = ("import gc, sys, pytest; rc = pytest.main(sys.argv[1:]); "
           "print('\\nMODULES ' + ' '.join(sorted(sys.modules))); "
           "print(f'GC {gc.isenabled()} {gc.get_freeze_count()}'); sys.exit(rc)")
    p = subprocess.run([sys.executable, "-c", run, "-p", "no:cacheprovider", *SUITE_PLUGINS,
                        "-q", "--co", "-m", "platform"], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    line = next((x for x in p.stdout.splitlines() if x.startswith("MODULES ")), "")
    imported = set(line.split()[1:])
    assert "rackgate.fixtures.server" in imported and "rackgate.atom.client" in imported, (sorted(imported)[:50], p.stdout[-2000:])
    heavy = sorted(imported & set(HEAVY_FOR_A_SERVER))
    assert heavy == [], f"a suite run's start-up imports {heavy}: import it where it is used (rackgate/atom/client.py)"
    lazy = sorted(imported & set(FOR_THE_SERVER))
    assert lazy == [], f"a -m platform start-up imports {lazy}: import it in the fixture that uses it"
    gc_line = next((x for x in p.stdout.splitlines() if x.startswith("GC ")), "").split()
    assert gc_line[1:2] == ["True"], f"the garbage collector is still paused after the run: {gc_line}"
    assert int(gc_line[2]) > 10_000, f"start-up's objects were not frozen: {gc_line}"
