#!/usr/bin/env bash
# Builds the scenario fuzzer with clang (libFuzzer + AddressSanitizer +
# UndefinedBehaviorSanitizer) in build-fuzz/ and runs it for N seconds
# (default 60) on a seed corpus made from examples/, tests/ and presets/.
# A crash leaves its input in build-fuzz/crashes/; add it as a golden error
# test (tests/golden/errors/) once fixed.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSHARDSIM_FUZZ=ON -DSHARDSIM_BUILD_TESTS=OFF -DSHARDSIM_BUILD_BENCH=OFF -DSHARDSIM_WITH_CUDA=OFF \
  -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target scenario_fuzzer
corpus=build-fuzz/corpus
mkdir -p "$corpus" build-fuzz/crashes
find examples tests/golden presets -name '*.json' -exec cp {} "$corpus"/ \;
cp fuzz/seeds/* "$corpus"/ 2>/dev/null || true
./build-fuzz/fuzz/scenario_fuzzer "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=65536 -artifact_prefix=build-fuzz/crashes/ -print_final_stats=1 2>&1 | tail -n 25
