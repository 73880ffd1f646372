#!/usr/bin/env bash
# ThreadSanitizer over the threaded parts (clang, build-tsan/):
#  - the library's one thread pool (core/parallel.h) and what runs on it:
#    the plan search, the serving search, sweeps and validation, through the
#    unit tests that drive them on one thread and on several;
#  - the real-execution executor's compute and communication threads, through
#    2-rank MPI runs with --verify of a pipeline- and a tensor-parallel
#    scenario (OpenMPI itself is not instrumented: scripts/tsan.supp keeps
#    reports inside it out, none about our code).
# Any report fails the run (halt_on_error).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-tsan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DSHARDSIM_TSAN=ON \
  -DSHARDSIM_BUILD_BENCH=OFF -DSHARDSIM_WITH_CUDA=OFF -DSHARDSIM_WITH_SIMGRID=OFF -DSHARDSIM_WITH_PYTHON=OFF \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >/dev/null
targets=(shardsim_threaded_tests)
known=$(cmake --build build-tsan --target help)
if grep -q ' shardsim-rank$' <<<"$known"; then targets+=(shardsim shardsim-rank); fi
cmake --build build-tsan -j "$(nproc)" --target "${targets[@]}"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp"
./build-tsan/tests/shardsim_threaded_tests --gtest_brief=1 \
  --gtest_filter='Parallel.*:Search.AnswerDoesNotDependOnThreads'
if [ -x build-tsan/cli/shardsim-rank ]; then
  # Pipeline transfers (pp 2) and collectives (tp 2) on the communication
  # thread while the compute thread runs kernels.
  for plan in pp2 tp2; do
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 \
      ./build-tsan/cli/shardsim run "examples/realexec/tiny-gpt-cpu2-$plan.json" --ranks 2 --steps 2 --warmup 1 \
      --verify --timeout-s 240
  done
else
  echo "test-tsan: the CPU real-execution backend is not built (MPI or OpenBLAS missing): executor not checked"
fi
