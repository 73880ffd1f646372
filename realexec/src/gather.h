// The end of a real run, shared by the CPU and CUDA executors (private to
// realexec): every rank's step times, spans and --verify counts go to rank 0,
// which builds the MeasuredRun and writes it for the launcher.
#pragma once

#include <string>
#include <vector>

#include "shardsim/core/timeline.h"
#include "shardsim/realexec/measured.h"
#include "shardsim/realexec/rank.h"

namespace shardsim::realexec::detail {

/// Collective over MPI_COMM_WORLD. `step_s`: this rank's time of each measured
/// step; `spans`: its spans of the traced (last) step; `local`: its verify
/// counts. Rank 0 writes opt.result_file (when set) and stores the run in
/// `*measured` (when given); other ranks leave it alone. `backend` and
/// `device` name what ran (MeasuredRun).
void gather_measured_run(const std::vector<double>& step_s, const std::vector<TimelineSpan>& spans,
                         const VerifyStats& local, const RankOptions& opt, int rank, int world, MeasuredRun* measured,
                         const std::string& backend = "cpu", const std::string& device = "");

}  // namespace shardsim::realexec::detail
