"""Where the self-tests' compiled modules go when the user's environment writes none
(PYTHONDONTWRITEBYTECODE): outside the checkout, shared by every run of every self-test session on this
machine (Python checks each cached module against its source's mtime and size). The suite runs the
self-tests start keep theirs there (harness.user_env); the self-test processes themselves too
(keep_bytecode, from selftest/conftest.py)."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

PYCACHE = Path(tempfile.gettempdir()) / f"rackgate-selftest-pycache-{os.getuid()}"


def keep_bytecode() -> None:
    """This self-test process's own bytecode, where the user's environment writes none: every module
    it imports from here on compiled once into PYCACHE and read back by the next process, the
    environment left as the user has it (the processes the tests start see it unchanged). Under
    `-n 5` each of the five workers compiled rackgate and rewrote the asserts of every self-test
    module from source at start-up: ~3.7 CPU s a worker, ~1.7 with the bytecode kept; the first
    process on a machine pays ~2 CPU s more, once (the standard library and site-packages modules it
    imports after this are compiled into PYCACHE too). `.ci/run` runs the quick tier first, which
    leaves it for the workers (docs/performance.md, wave 12)."""
    if sys.dont_write_bytecode and not sys.pycache_prefix:
        sys.pycache_prefix, sys.dont_write_bytecode = str(PYCACHE), False
