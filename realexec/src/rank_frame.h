// One rank's run from start to end, shared by the CPU and CUDA executors
// (private to realexec): the world-size check, the kernel self-check of
// --verify, the warm-up and measured steps, and the gather at rank 0.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gather.h"
#include "shardsim/realexec/kernels.h"
#include "shardsim/realexec/progress.h"
#include "shardsim/realexec/rank.h"
#include "shardsim/workloads/lower.h"

namespace shardsim::realexec::detail {

/// What the frame needs of a backend: `make(ps, progress)` builds its
/// executor (with run_step, spans and stats as the executors have),
/// `self_check()` checks its kernels, `device()` names what ran.
template <typename Make, typename SelfCheckFn, typename DeviceFn>
int run_rank_steps(const Scenario& s, const RankOptions& opt, int rank, int world, MeasuredRun* measured,
                   const std::string& backend, Make make, SelfCheckFn self_check, DeviceFn device) {
  const ProgramSet ps = lower_training_step(s);
  if (world != s.cluster.devices) {
    throw std::runtime_error("the scenario has " + std::to_string(s.cluster.devices) + " devices but mpirun started " +
                             std::to_string(world) + " ranks");
  }
  ProgressWriter progress(opt.progress_dir, rank);
  progress.record().state.store(static_cast<int32_t>(RankState::kRunning));
  VerifyStats local;
  if (opt.verify) {
    const SelfCheck k = self_check();
    local.kernels_checked = k.checked;
    local.mismatches = k.mismatches;
    if (!k.first_mismatch.empty()) local.first_mismatch = "rank " + std::to_string(rank) + ": " + k.first_mismatch;
  }
  std::vector<double> local_s;
  std::vector<TimelineSpan> spans;
  {
    auto ex = make(ps, progress);
    const int total = opt.warmup_steps + opt.steps;
    for (int step = 0; step < total; ++step) {
      const double t = ex->run_step(step, step == total - 1);
      if (step >= opt.warmup_steps) local_s.push_back(t);
    }
    spans = ex->spans();
    const VerifyStats& st = ex->stats();
    local.collectives_checked += st.collectives_checked;
    local.transfers_checked += st.transfers_checked;
    local.mismatches += st.mismatches;
    if (local.first_mismatch.empty()) local.first_mismatch = st.first_mismatch;
  }
  progress.record().state.store(static_cast<int32_t>(RankState::kDone));
  progress.touch();
  gather_measured_run(local_s, spans, local, opt, rank, world, measured, backend, device());
  return 0;
}

}  // namespace shardsim::realexec::detail
