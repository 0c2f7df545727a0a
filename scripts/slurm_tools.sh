#!/usr/bin/env bash
# Slurm's daemons and client tools and munge (Debian's slurm-wlm and munge), for
# `rackgate fleet --scheduler slurm` and its self-test (selftest/fleet/test_slurm_fleet.py starts
# its own private cluster; nothing here starts or configures a daemon). Idempotent.
set -euo pipefail
for cmd in sbatch squeue sinfo scontrol slurmctld slurmd munged mungekey; do
  if ! command -v "$cmd" >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge
    break
  fi
done
