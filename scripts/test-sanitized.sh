#!/usr/bin/env bash
# Builds with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/) and
# runs the test suite except the tests labelled "slow" (the 16,384-GPU
# example and the full validation run), which take minutes under ASan.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDSIM_SANITIZE=ON -DSHARDSIM_EXPENSIVE_CHECKS=ON \
  -DSHARDSIM_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j "$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE slow
