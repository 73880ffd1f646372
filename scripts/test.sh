#!/usr/bin/env bash
# Builds shardsim and runs every test (unit, property, golden, examples).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
