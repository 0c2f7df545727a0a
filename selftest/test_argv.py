"""One command-line reader: the launch lint and the benchmark probe read the same flags."""
import pytest

from rackgate.gates import lint
from rackgate.probes import argv, bench

pytestmark = pytest.mark.unit

CMD = ("python -m atom.entrypoints.openai_server --model /models/Kimi-K3 \\\n  --kv_cache_dtype fp8 "
       "--max-num-batched-tokens=8192 --enforce-eager -tp 4 --served-model-name 'Kimi K3'")


def test_flags_long_short_equals_bare_and_underscores():
    assert argv.flags(argv.split(CMD)) == {
        "m": "atom.entrypoints.openai_server", "model": "/models/Kimi-K3", "kv-cache-dtype": "fp8",
        "max-num-batched-tokens": "8192", "enforce-eager": None, "tp": "4", "served-model-name": "Kimi K3"}


def test_lint_and_bench_agree():
    assert lint.flags(CMD) == bench.command(CMD).flags == argv.flags(argv.split(CMD))


def test_bad_quoting():
    with pytest.raises(ValueError):
        argv.split("--model 'unclosed")
    assert lint.flags("--model 'unclosed") == {"model": "'unclosed"}  # lint reads what it can
    with pytest.raises(bench.BenchParseError, match="does not parse"):
        bench.command("--model 'unclosed")
