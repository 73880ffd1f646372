// Starting a real run from the shardsim CLI, which links no MPI: it runs
// `mpirun -n N --oversubscribe --bind-to none shardsim-rank ...` in its own
// process group, watches it against a timeout, and reads back the measured
// run that rank 0 wrote. A rank that dies or hangs ends the whole run: the
// process group is killed and the error names the rank.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/realexec/measured.h"

namespace shardsim::realexec {

struct LaunchRequest {
  std::string mpirun = "mpirun";
  std::string rank_exe;                ///< path of shardsim-rank
  std::vector<std::string> rank_args;  ///< scenario file, --set ..., --steps ..., --verify
  int ranks = 1;
  double timeout_s = 300;
  std::vector<int> stage_of_rank;  ///< pipeline stage of each rank, to name ops in errors
};

/// A real run that failed (a rank died, hung or reported an error): what()
/// is the one line for the user.
struct RunFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs the ranks (which get `--result FILE --progress-dir DIR` appended)
/// and returns the text rank 0 wrote to FILE. Throws RunFailure.
std::string launch_ranks(const LaunchRequest& req, const ProgramSet& programs);

/// Runs the ranks and returns rank 0's measured run. `programs` (the lowered
/// scenario) names the op a hung rank was in. Throws RunFailure.
MeasuredRun launch_real_run(const LaunchRequest& req, const ProgramSet& programs);

}  // namespace shardsim::realexec
