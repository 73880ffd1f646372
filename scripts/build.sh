#!/usr/bin/env bash
# Configures and builds shardsim (Release) into build/.
# A unity build: each target's sources compiled in batches of 16, as the
# sanitized and ThreadSanitizer builds are, which parses the shared headers
# once a batch (a fresh build here took 362 s one file at a time and 207 s
# so, 2026-12-02; docs/testing.md, Continuous integration).
# scripts/tidy.sh reads the batches' sources back from the compile commands.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >/dev/null
cmake --build build -j "$(nproc)"
