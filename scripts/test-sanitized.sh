#!/usr/bin/env bash
# Builds with clang, AddressSanitizer + UndefinedBehaviorSanitizer and the
# engine's invariant checks (build-asan/), and runs the test suite except the
# tests labelled "slow" (the 16,384-GPU example and the full validation run),
# which take minutes under ASan, and "browser" (Chromium rendering the HTML
# report: a minute under ASan for what the GCC run already checks). This is also the project's clang build (the
# README's build is GCC). -O1 with line tables only (the usual sanitizer
# setting) and a unity build (CMAKE_UNITY_BUILD: each target's sources
# compiled in a few batches, which also proves no two files of a target
# define the same internal name). In .ci/run on 2 cores the whole stage
# (build and tests) took 270-330 s; with GCC at -O2 -g it took 878 s. The CUDA part is left out: its kernels only run on a GPU, and
# the GCC build compiles it. The objects carry libFuzzer's edge counters
# (SHARDSIM_FUZZ, coverage without comparison callbacks) so that
# `scripts/fuzz.sh SECONDS build-asan` links the fuzzers from this build
# instead of compiling the libraries a third time with clang; unity batches of
# 16 sources parse the shared headers half as often as the default 8.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DSHARDSIM_SANITIZE=ON \
  -DSHARDSIM_FUZZ=ON -DSHARDSIM_FUZZ_COVERAGE="-fsanitize-coverage=inline-8bit-counters,pc-table" \
  -DSHARDSIM_EXPENSIVE_CHECKS=ON -DSHARDSIM_BUILD_BENCH=OFF -DSHARDSIM_WITH_CUDA=OFF -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >/dev/null
cmake --build build-asan -j "$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Left to other runs: the heaviest tests here, whose code lighter tests
# already take through ASan. In CI on 2026-12-02, the first took 46 s in an
# earlier run. The other three took 41, 29 and 27 s of the 228 s the tests
# took on 2 cores, in a whole run of 1528 s, over its 25 minutes:
#  - Parallel.AServingSearchDoesNotDependOnThreads: to the ThreadSanitizer run,
#    with the rest of Parallel.*; its serving search runs here through
#    golden.commands.search_serving;
#  - StepBound.NeverAboveTheSimulatedStep (every example's bound against its
#    simulation): to the GCC run; StepBound.NeverAboveTheStepOfRandomScenarios
#    runs the same bound here;
#  - golden.simgrid.mixtral_lv08: to the GCC run; the SimGrid worker runs here
#    through golden.simgrid.demo_cm02 and simgrid.worker_protocol;
#  - Search.FindsTheBruteForceBestOnTwoNodes: to the GCC run; the search runs
#    here through Search.FindsTheBruteForceBestOnOneNode.
ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE 'slow|browser' \
  -E '^(Parallel\.AServingSearchDoesNotDependOnThreads|StepBound\.NeverAboveTheSimulatedStep|golden\.simgrid\.mixtral_lv08|Search\.FindsTheBruteForceBestOnTwoNodes)$'
