#!/usr/bin/env bash
# The self-tests on a fresh machine: installs what they need, then runs them.
# Usage: bash scripts/selftest.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -e .
bash scripts/system_tools.sh   # sshd on loopback for the ssh-transport self-tests
bash scripts/report_tools.sh   # Allure 3 (npm) and Chromium: the report self-tests render and open a report
# Own result files: reports/junit.xml and allure-results stay the acceptance run's (docs/catalogue.md reads them).
exec python3 -m pytest selftest --junitxml=reports/selftest-junit.xml --alluredir=reports/selftest-allure-results "$@"
