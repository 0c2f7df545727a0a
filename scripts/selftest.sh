#!/usr/bin/env bash
# The self-tests on a fresh machine: the README's self-test command, with pytest args passed on.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Own result files: reports/junit.xml and allure-results stay the acceptance run's.
exec python3 -m pytest selftest --junitxml=reports/selftest-junit.xml --alluredir=reports/selftest-allure-results "$@"
