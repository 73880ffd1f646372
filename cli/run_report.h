// The report of a real run: the measured Chrome trace (with the simulator's
// writer) and the summary or JSON printed on stdout. Used by `shardsim run`
// and by rank 0 of `mpirun -n N shardsim-rank ... --report`.
#pragma once

#include <stdexcept>
#include <string>

#include "shardsim/core/program.h"
#include "shardsim/realexec/measured.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::cli {

struct ReportOptions {
  bool json = false;
  std::string trace_file;  ///< "" for none
};

/// The trace file could not be written (a bad path: the user's input).
struct TraceWriteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Adds a flow arrow per send (its rank to its peer, over the send's span),
/// writes the trace atomically, prints the report, and returns the exit
/// status: 0, or 1 after printing the first verify mismatch to stderr.
/// Throws TraceWriteError.
int report_measured_run(const Scenario& s, const ProgramSet& ps, realexec::MeasuredRun run, const ReportOptions& opt);

}  // namespace shardsim::cli
