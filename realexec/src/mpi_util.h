// MPI helpers shared by the rank executor and the calibration benchmarks
// (private to realexec/src).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "bf16.h"

namespace shardsim::realexec::detail {

/// MPI reduction of bf16 values (fp16 collectives reduce the same way: same
/// bytes, same cost): widen to fp32, add, round back.
inline void bf16_sum(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = to_bf16(from_bf16(a[i]) + from_bf16(b[i]));
}

inline void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw std::runtime_error(std::string(what) + ": " + std::string(msg, static_cast<size_t>(len)));
  }
}

/// Waits for `req` the way the rank executor polls: MPI_Test, then sleep a
/// quarter of the time waited so far, clamped to [10, 200] us. (Blocking MPI
/// calls under --oversubscribe yield the core between tests, and on a loaded
/// machine one yield can cost a whole scheduler time slice, several ms.)
inline void wait_polling(MPI_Request& req) {
  using Us = std::chrono::microseconds;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    const auto waited = std::chrono::duration_cast<Us>(std::chrono::steady_clock::now() - start);
    std::this_thread::sleep_for(std::clamp(waited / 4, Us(10), Us(200)));
  }
}

/// A barrier that waits by polling (see wait_polling): ranks leave it
/// within a poll interval of each other even on a loaded machine.
inline void barrier_polling(MPI_Comm comm) {
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(comm, &req), "MPI_Ibarrier");
  wait_polling(req);
}

/// A rank program's frame: initializes MPI (MPI_THREAD_FUNNELED), runs
/// `body(rank, world)`, finalizes; an exception prints one line naming the
/// rank and aborts the whole job (so the launcher sees it at once).
template <typename Body>
int run_mpi_rank(Body&& body) {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "shardsim-rank: error: MPI_Init_thread failed\n");
    return 1;
  }
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  try {
    if (provided < MPI_THREAD_FUNNELED) throw std::runtime_error("the MPI library does not support threads");
    const int rc = body(rank, world);
    MPI_Finalize();
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardsim-rank: rank %d: error: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}

}  // namespace shardsim::realexec::detail
