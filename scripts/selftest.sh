#!/usr/bin/env bash
# The self-tests on a fresh machine: the README's self-test command, with pytest args passed on.
#
#   bash scripts/selftest.sh [--under-load] [pytest args]
#
# --under-load: two CPU-burning processes run for the whole self-test run (started here, ended
# here by their PIDs, whatever the run's outcome), to prove the self-tests assert behaviour, not
# speed: they must pass as they do on a quiet machine. The wall time is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
load=0
args=()
for a in "$@"; do
    if [[ $a == --under-load ]]; then load=1; else args+=("$a"); fi
done
bash scripts/setup.sh
burners=()
stop_burners() {
    for pid in "${burners[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    burners=()
}
trap stop_burners EXIT
trap 'stop_burners; exit 130' INT TERM
if (( load )); then
    for _ in 1 2; do
        # a busy loop in its own shell: one core each, nothing else
        bash -c 'while :; do :; done' &
        burners+=("$!")
    done
    echo "selftest.sh: --under-load: CPU burners running as PIDs ${burners[*]}"
fi
start=$(date +%s)
rc=0
# Own result files: reports/junit.xml and allure-results stay the acceptance run's.
python3 -m pytest selftest -n 5 --dist loadgroup --junitxml=reports/selftest-junit.xml --alluredir=reports/selftest-allure-results \
    ${args[@]+"${args[@]}"} || rc=$?
stop_burners
echo "selftest.sh: pytest exited $rc after $(( $(date +%s) - start )) s$( (( load )) && echo ' (under load: 2 CPU burners)')"
exit "$rc"
