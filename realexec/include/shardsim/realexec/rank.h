// One MPI rank of a real run on CPUs: runs its device's Program with real
// kernels and real MPI communication, times every op, and (rank 0) writes the
// measured run for the launcher.
//
// Rank r is device r of the scenario's mesh; it runs the Program of its
// pipeline stage. Threads: the main thread owns MPI (MPI_THREAD_FUNNELED: it
// initializes MPI and is the only thread that calls it) and runs every
// communication op as a non-blocking MPI call it polls; a compute thread
// runs the compute ops. Ops start when their dependencies end, so
// communication overlaps compute exactly as the Program orders it. Each
// (group axes, stream) pair gets its own communicator, split from
// MPI_COMM_WORLD by the mesh coordinates, so the collectives of one
// communicator are issued in the same (stream) order on every member.
#pragma once

#include <cstdint>
#include <string>

#include "shardsim/realexec/measured.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::realexec {

/// Fault injection for failure tests: rank `rank` kills itself (SIGKILL) or
/// sleeps `delay_s` when it starts op `op` of its first step; or (corrupt)
/// flips a value the first communication op from `op` on receives, which
/// --verify must report.
struct FaultSpec {
  enum class Kind { kNone, kKill, kDelay, kCorrupt };
  Kind kind = Kind::kNone;
  int rank = -1;
  int64_t op = -1;
  double delay_s = 0;
};
/// Parses "kill:rank=R:op=N", "delay:rank=R:op=N:s=S" or
/// "corrupt:rank=R:op=N" (the SHARDSIM_FAULT
/// environment variable); "" is no fault. Throws std::invalid_argument.
FaultSpec parse_fault(const std::string& text);
/// The kill and delay faults: rank `rank` raises SIGKILL, or sleeps, when
/// it starts op `op` of step `step` and `f` names that rank, op and step 0.
void apply_fault(const FaultSpec& f, int rank, int64_t op, int step);

struct RankOptions {
  int steps = 3;         ///< measured steps
  int warmup_steps = 1;  ///< steps run first and not measured
  bool verify = false;   ///< check kernels and every communication result
  FaultSpec fault;
  std::string result_file;   ///< rank 0 writes the MeasuredRun JSON here
  std::string progress_dir;  ///< where ranks keep their progress records ("" for none)
};

/// Runs this process's rank (MPI is initialized and finalized here). Returns
/// the process exit status: 0, or 1 after printing an error. On rank 0 the
/// measured run is also stored in `*measured` when given (ranks > 0 says so).
int run_rank(const Scenario& s, const RankOptions& opt, MeasuredRun* measured = nullptr);

}  // namespace shardsim::realexec
