// Calibration micro-benchmarks of the CPU backend: what one rank's kernels
// achieve (matmul FLOP/s by shape, attention, memory bandwidth, the
// exp-bound loss), and what MPI collectives cost on this machine by kind,
// group size and message size, with a latency + size / bandwidth fit. Every
// rank runs them at once, as in a real run.
//
// The profile is a measurement for a person and for the simulator (a
// cluster.calibration): each fit is t(bytes) = latency + bytes / bandwidth by
// least squares (relative error) over the message sizes.
#pragma once

#include <string>

namespace shardsim::realexec {

struct CalibrateOptions {
  bool quick = false;        ///< fewer sizes and repetitions (tests)
  std::string result_file;   ///< rank 0 writes the profile JSON here
  std::string progress_dir;  ///< progress records, as in a real run
};

/// Runs this process's rank of the calibration (MPI is initialized and
/// finalized here). Returns the exit status.
int run_calibration(const CalibrateOptions& opt);

}  // namespace shardsim::realexec
