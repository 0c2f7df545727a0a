#!/usr/bin/env bash
# Slurm's daemons and client tools and munge (Debian packages), for `rackgate fleet --scheduler
# slurm` and its self-test. Idempotent: installs only what is missing.
set -euo pipefail
need=()
for cmd in sbatch:slurm-client slurmctld:slurmctld slurmd:slurmd munged:munge; do
  command -v "${cmd%%:*}" >/dev/null 2>&1 || need+=("${cmd##*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge "${need[@]}"
fi
