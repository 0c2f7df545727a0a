"""Property: for every SRV-BOOT signature, in every log dialect the engine's log mixes, a record
that carries its words at a non-fatal level or says it went on is never fatal, and the fatal form
of the same record is -- with ANSI colour, CRLF line ends, torch's `[rankN]:` prefix and tqdm's
carriage-return redraws mixed in (rackgate.atom.dialects, signatures.Judge)."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackgate.atom import signatures
from rackgate.catalogue import row

from .mutate import SETTINGS

pytestmark = pytest.mark.unit

# The words each signature is found by: its string, or its pattern's first example.
WORDS = list(row("SRV-BOOT").signatures) + [p.examples[0] for p in row("SRV-BOOT").patterns]
# dialect -> (a record's first line at LEVEL with MSG) in each source's layout (docs/formats.md)
DIALECTS = {
    "atom-more": lambda level, msg: [f"[atom {level}] 2026-12-04 13:38:47.1 - ModelRunner0/1:4242 - "
                                     "/app/ATOM/atom/model_loader/expert_staging.py:377 - _staging_buffer", msg],
    "vllm": lambda level, msg: [f"(EngineCore_DP3 pid=4242) {level} 12-04 13:38:47 [core.py:700] {msg}"],
    "python": lambda level, msg: [f"{level}:atom.loader:{msg}"],
    "uvicorn": lambda level, msg: [f"{level + ':':<9} {msg}"],
    "glog": lambda level, msg: [f"[{level[0]}1204 13:38:47.507447385 ProcessGroupNCCL.cpp:1168] {msg}"],
    "warnings": lambda level, msg: [f"/app/ATOM/atom/model_loader/loader.py:88: UserWarning: {msg}"
                                    if level != "ERROR" else msg],  # its fatal form: the raw line itself
    "hip": lambda level, msg: [f":{1 if level == 'ERROR' else 2}:hip_memory.cpp           :731 : 1234567 us: "
                               f"[pid:4242 tid:0x7f] {msg}"],
}
QUIET = {"WARNING", "INFO", "DEBUG"}
OUTCOMES = ["; using unpinned.", ", falling back to pageable memory", " (retrying)", "; will use default"]


@st.composite
def records(draw, fatal: bool):
    words = draw(st.sampled_from(WORDS))
    dialect = draw(st.sampled_from(sorted(DIALECTS)))
    quiet = {"hip": ["WARNING"], "glog": ["INFO", "WARNING"], "warnings": ["WARNING"]}.get(dialect, sorted(QUIET))
    level = "ERROR" if fatal else draw(st.sampled_from(quiet))
    recovered = not fatal and draw(st.booleans())
    msg = words + (draw(st.sampled_from(OUTCOMES)) if recovered else "")
    lines = DIALECTS[dialect](level, msg)
    if draw(st.booleans()):
        lines = [f"[rank{draw(st.integers(0, 15))}]:" + x if i == 0 else x for i, x in enumerate(lines)]
    if draw(st.booleans()):  # colour around the level or the words
        lines = [x.replace(level, f"\x1b[1;31m{level}\x1b[0m", 1) for x in lines]
    bar = "".join(f"Loading safetensors checkpoint shards: {i}% Completed | {i}/96\r"
                  for i in range(draw(st.integers(0, 3))))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    before = ["[atom 13:38:46] Engine Core: loading weights", bar + "[atom 13:38:46] loaded"]
    after = ["[atom 13:38:48] Memory budget: total_gpu=432.00GB"]
    return [x + end for x in before + lines + after], (dialect, level, msg)


_judge = signatures.judge


def test_a_signature_in_a_quiet_or_recovered_record_is_never_fatal():
    @SETTINGS
    @given(records(fatal=False))
    def prop(case):
        lines, what = case
        fatal, noted = _judge(lines)
        assert fatal == [], (what, [f.signature for f in fatal])
        assert len(noted) == 1, (what, noted)
    prop()


def test_the_same_signature_in_an_error_record_is_fatal():
    @SETTINGS
    @given(records(fatal=True))
    def prop(case):
        lines, what = case
        fatal, _ = _judge(lines)
        assert len(fatal) == 1 and fatal[0].level in ("ERROR", ""), (what, fatal)  # "": an exception line
    prop()
