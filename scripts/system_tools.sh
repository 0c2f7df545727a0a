#!/usr/bin/env bash
# System tools the self-tests need from Debian: an OpenSSH server for the ssh-transport tests
# (the suite itself only needs the ssh client). Idempotent; needs root (CI runs as root).
set -euo pipefail
if ! command -v sshd >/dev/null 2>&1 && [ ! -x /usr/sbin/sshd ]; then
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server openssh-client >/dev/null
fi
# Debian's docker.io for selftest/docker (a private dockerd the self-tests start and stop; the
# suite itself only runs the docker client on nodes), and sudo for the non-root foreign node.
if ! command -v dockerd >/dev/null 2>&1 || ! command -v sudo >/dev/null 2>&1; then
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io sudo >/dev/null
fi
# Debian's Prometheus and node_exporter for selftest/watch/test_prometheus.py (rackgate's metrics
# textfile read by the real textfile collector, scraped and queried by the real Prometheus, on loopback).
if ! command -v prometheus >/dev/null 2>&1 || ! command -v prometheus-node-exporter >/dev/null 2>&1; then
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus prometheus-node-exporter >/dev/null
fi
