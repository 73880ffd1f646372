// The outcome of a real run: measured step times, the Timeline of one step
// (same schema as the simulator's), and what --verify checked. Rank 0 writes
// it as JSON for the launcher, which turns it into the report and the trace.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/core/timeline.h"

namespace shardsim::realexec {

struct VerifyStats {
  bool enabled = false;
  int64_t kernels_checked = 0;      ///< kernel self-checks against a reference (all ranks)
  int64_t collectives_checked = 0;  ///< collective results checked (all ranks, all steps)
  int64_t transfers_checked = 0;    ///< received send/recv payloads checked
  int64_t mismatches = 0;
  std::string first_mismatch;  ///< empty when none
};

struct MeasuredRun {
  std::string backend = "cpu";  ///< "cpu" or "cuda"
  std::string device;           ///< what a rank ran on ("" for the CPU backend; the GPU's name)
  int ranks = 0;
  int warmup_steps = 0;
  /// Wall time of each measured step: the slowest rank's time from the
  /// barrier that starts the step to its last op's end.
  std::vector<double> step_times_s;
  int trace_step = 0;  ///< index into step_times_s of the step in `timeline`
  Timeline timeline;   ///< every rank's spans of that step, times from the step's start
  VerifyStats verify;
};

/// JSON text of `r` (one object; spans as [device, program, stream, op,
/// start_ps, end_ps] rows).
std::string measured_run_json(const MeasuredRun& r);
/// Parses measured_run_json's output; throws std::runtime_error naming `file`.
MeasuredRun parse_measured_run(const std::string& text, const std::string& file);

/// Median of `v` (mean of the two middle values for an even count); 0 if empty.
double median(std::vector<double> v);

/// Time per op kind in the traced step, averaged over ranks: compute ops by
/// ComputeKind ("matmul", ...), collectives by CollectiveKind ("all-reduce",
/// ...; the time from issue to completion, overlapping compute), "send" and
/// "recv". Sorted by kind name.
std::vector<std::pair<std::string, double>> time_by_kind_s(const ProgramSet& programs, const Timeline& t);

}  // namespace shardsim::realexec
