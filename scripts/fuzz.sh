#!/usr/bin/env bash
# Builds the fuzzers with clang (libFuzzer + AddressSanitizer +
# UndefinedBehaviorSanitizer) in build-fuzz/ (or BUILD_DIR) and runs them for N seconds in
# all (default 60): the scenario loader for 55% of it, on a seed corpus made
# from examples/, tests/ and presets/; then the Chakra trace reader for the
# rest, on fuzz/chakra_seeds/ (hand-written traces of tests/golden/chakra
# and a small exported one, each a trace's parts joined by "|||").
# A crash leaves its input in BUILD_DIR/crashes/; add it as a golden error
# test (tests/golden/errors/ or tests/golden/chakra/) once fixed.
# BUILD_DIR: an already configured build with SHARDSIM_FUZZ=ON to link the
# fuzzers in (the CI passes scripts/test-sanitized.sh's build-asan, whose
# objects carry the edge counters); without it, build-fuzz/ is configured
# here with libFuzzer's full coverage (comparisons too).
#   scripts/fuzz.sh [SECONDS] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${2:-build-fuzz}
scenario_s=$(( (seconds * 55 + 99) / 100 ))
chakra_s=$(( seconds - scenario_s > 0 ? seconds - scenario_s : 1 ))
if [ $# -lt 2 ]; then
  cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DSHARDSIM_FUZZ=ON -DSHARDSIM_BUILD_TESTS=OFF -DSHARDSIM_BUILD_BENCH=OFF -DSHARDSIM_WITH_CUDA=OFF \
    -DCMAKE_UNITY_BUILD=ON >/dev/null
elif ! grep -q '^SHARDSIM_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "fuzz: $build is not a build configured with SHARDSIM_FUZZ=ON" >&2
  exit 2
fi
cmake --build "$build" -j "$(nproc)" --target scenario_fuzzer chakra_fuzzer
corpus=$build/corpus
mkdir -p "$corpus" "$build/crashes"
find examples tests/golden presets -name '*.json' -exec cp {} "$corpus"/ \;
cp fuzz/seeds/* "$corpus"/ 2>/dev/null || true
"./$build/fuzz/scenario_fuzzer" "$corpus" -max_total_time="$scenario_s" -timeout=10 -rss_limit_mb=2048 \
  -max_len=65536 -artifact_prefix="$build/crashes/" -print_final_stats=1 2>&1 | tail -n 25
chakra_corpus=$build/chakra_corpus
mkdir -p "$chakra_corpus"
cp fuzz/chakra_seeds/* "$chakra_corpus"/
"./$build/fuzz/chakra_fuzzer" "$chakra_corpus" -max_total_time="$chakra_s" -timeout=10 -rss_limit_mb=2048 \
  -max_len=131072 -artifact_prefix="$build/crashes/chakra-" -print_final_stats=1 2>&1 | tail -n 25
