#!/usr/bin/env bash
# The fast first stage (CI runs it before anything else; run it while editing): lint, types, the
# import contracts and the `unit` self-test tier (selftest/tiers.py: no process, no sim, no server).
# Stops at the first failure, naming the stage. A minute or two on 2 cores.
#
#   bash scripts/quick.sh [pytest args for the unit tier]
set -euo pipefail
cd "$(dirname "$0")/.."
stage() {
    local name=$1; shift
    local start=$SECONDS
    if ! "$@"; then
        echo "quick.sh: $name failed ($*): the run stops here" >&2
        exit 1
    fi
    echo "quick.sh: $name passed in $(( SECONDS - start )) s"
}
stage ruff python3 -m ruff check .
stage mypy python3 -m mypy
stage import-contracts lint-imports
stage "unit tier" python3 -m pytest selftest -m unit -q -p no:cacheprovider \
    --junitxml=reports/selftest-unit-junit.xml --alluredir=reports/selftest-unit-allure-results "$@"
