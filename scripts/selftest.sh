#!/usr/bin/env bash
# The self-tests on a fresh machine: installs what they need, then runs them.
# Usage: bash scripts/selftest.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -e .
exec python3 -m pytest selftest "$@"
