#!/usr/bin/env bash
# What rendering and viewing the Allure report needs, installed on a fresh machine (CI runs
# this as root from scripts/selftest.sh; idempotent, quick when everything is there):
#   - Allure 3 (npm package `allure`, pure Node) under .tools/allure, npm cache in .tools/npm-cache
#   - headless Chromium (Debian package `chromium`) for the report self-test
set -euo pipefail
cd "$(dirname "$0")/.."
ALLURE_VERSION="${ALLURE_VERSION:-3}"
if [ ! -x .tools/allure/node_modules/.bin/allure ]; then
    command -v npm >/dev/null || { echo "report_tools: npm is missing (apt-get install -y nodejs npm)" >&2; exit 1; }
    mkdir -p .tools/allure
    npm install --prefix .tools/allure --cache .tools/npm-cache --no-audit --no-fund --loglevel=error \
        "allure@${ALLURE_VERSION}" >/dev/null
fi
if ! command -v chromium >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "report_tools: chromium is missing: sudo apt-get install -y chromium" >&2; exit 1
    fi
fi
