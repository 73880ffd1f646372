// A scenario's step run for real (realexec/: MPI ranks with OpenBLAS, or
// CUDA + NCCL ranks), and what a real run reports: the summary or JSON, the
// measured Chrome trace, a calibration profile's summary. What
// `shardsim run`, `shardsim calibrate` and rank 0 of
// `mpirun -n N shardsim-rank ... --report` call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/core/step_report.h"
#include "shardsim/realexec/measured.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

struct RealRunOptions {
  std::string backend = "cpu";  ///< "cpu" or "cuda"
  std::string rank_exe;         ///< the rank program (shardsim-rank or shardsim-rank-cuda); "" when not built
  std::string mpirun = "mpirun";
  int cuda_devices = 0;  ///< usable CUDA devices (backend cuda)
  int64_t ranks = -1;    ///< -1: the scenario's cluster.devices (a real run needs one rank each)
  int64_t steps = 3, warmup = 1;
  double timeout_s = 300;
  bool verify = false;
};

struct RealRun {
  Scenario scenario;
  ProgramSet programs;
  realexec::MeasuredRun run;
};

/// Loads `file` with `overrides`, refuses what cannot run for real before
/// any process starts (rank count, blocking pipeline transfers, more than
/// the backend's bytes per rank: InputError or UsageError, one line), runs
/// the ranks under mpirun and returns the measured run with its programs.
/// Throws realexec::RunFailure when a rank dies, hangs or reports an error.
RealRun run_real_step(const std::string& file, const std::vector<Override>& overrides, const RealRunOptions& opt);

/// Adds a flow arrow per send of the traced step (its rank to its peer, over
/// the send's span), the way the simulator draws transfers.
void add_send_flows(const Scenario& s, const ProgramSet& ps, realexec::MeasuredRun& run);

/// The critical path of the traced step (analysis/critical_path.h, on the
/// ranks' own clocks), put in run.timeline.critical_path for the trace; its
/// report. When the measured spans do not follow the programs (a rank's
/// spans missing) the report says so in `skipped` instead.
CriticalPathReport measured_critical_path(const Scenario& s, const ProgramSet& ps, realexec::MeasuredRun& run);

/// `shardsim run --json`: backend, ranks, step times (median), time per op
/// kind of the traced step, its critical path (as `simulate --json` gives
/// it) and what --verify checked.
std::string real_run_json(const ProgramSet& ps, const realexec::MeasuredRun& run, const CriticalPathReport& cp);
/// The summary lines; `trace_file` ("" for none) is named when given.
std::string real_run_text(const Scenario& s, const ProgramSet& ps, const realexec::MeasuredRun& run,
                          const CriticalPathReport& cp, const std::string& trace_file);
/// The measured Chrome trace, written atomically; UsageError when it cannot be.
void write_real_run_trace(const std::string& file, const ProgramSet& ps, const realexec::MeasuredRun& run);

/// `shardsim calibrate`'s summary of a measured profile (the JSON text the
/// calibration ranks wrote): matmul, attention, memory, loss rates and each
/// collective's latency and bandwidth. Throws InputError naming `file` for
/// a malformed profile.
std::string calibration_profile_text(const std::string& profile_json, const std::string& file,
                                     const std::string& backend, int64_t ranks);

}  // namespace shardsim
