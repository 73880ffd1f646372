// The report of a real run: the measured Chrome trace and the summary or
// JSON (app/real_run.h) printed on stdout. Used by `shardsim run` and by
// rank 0 of `mpirun -n N shardsim-rank ... --report`.
#pragma once

#include <string>

#include "shardsim/core/program.h"
#include "shardsim/realexec/measured.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::cli {

struct ReportOptions {
  bool json = false;
  std::string trace_file;  ///< "" for none
};

/// Adds a flow arrow per send (its rank to its peer, over the send's span),
/// writes the trace atomically, prints the report, and returns the exit
/// status: 0, or 1 after printing the first verify mismatch to stderr.
/// Throws UsageError when the trace cannot be written.
int report_measured_run(const Scenario& s, const ProgramSet& ps, realexec::MeasuredRun run, const ReportOptions& opt);

}  // namespace shardsim::cli
