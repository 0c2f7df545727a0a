#!/usr/bin/env bash
# Everything the self-tests need on a fresh machine (idempotent; run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
# the suite and what the self-tests import or run (hypothesis, ruff): the [selftest] extra
python3 -m pip install -q --disable-pip-version-check -e ".[selftest]"
bash scripts/system_tools.sh   # sshd on loopback for the ssh-transport self-tests
bash scripts/report_tools.sh   # Allure 3 (npm) and Chromium: the report self-tests render and open a report
bash scripts/slurm_tools.sh     # slurm-wlm and munge: rackgate fleet --scheduler slurm and its self-test
# CPU torch for selftest/fabric's runs of the collective probe on real torch (the sim's containers
# need none: their python gets the sim's stand-in, rackgate/sim/nccl/standin); the +cpu pin means
# pip can never pull a CUDA build instead.
python3 -c "import torch" 2>/dev/null || python3 -m pip install -q --disable-pip-version-check "torch==2.13.0+cpu"
# The real engine for the `realengine` self-tests (transformers serve + SmolLM2-135M on the CPU,
# aiperf, lm-eval): its venv and model folders under ~/.cache/rackgate, stamped, so a second run
# is a check ("cached"). Here, so the README's self-test command proves on a fresh machine what CI
# proves (issue 52): without it those tests were skipped there.
bash scripts/real_engine/install.sh
