// A sweep: one scenario simulated at every point of a grid of overrides, in
// parallel, each point's row in grid order whatever the thread count. What
// `shardsim.sweep` calls; rows are flat so that pandas.DataFrame takes them.
#pragma once

#include <string>
#include <vector>

#include "shardsim/core/step_report.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

struct SweepRow {
  std::vector<Override> point;  ///< the overrides of this point
  bool ok = false;
  std::string error;  ///< why the point could not be simulated (InputError's line), when !ok
  StepReport report;
};

/// Simulates `scenario_text` (named `name` in messages) with `base`
/// overrides and then each point's, on `threads` threads (<= 0: every
/// core). A point that changes plan.tp, plan.pp, plan.cp or cluster.devices
/// but not plan.dp gets dp = devices / (tp·pp·cp) (where that divides), so
/// that a grid over tp and pp keeps the cluster whole. A point the loader
/// rejects (a plan that does not divide, ...) gets its error in its row; a
/// bad `scenario_text` throws InputError at once.
std::vector<SweepRow> sweep_steps(const std::string& scenario_text, const std::string& name,
                                  const std::vector<Override>& base, const std::vector<std::vector<Override>>& points,
                                  int threads);

/// The rows as one JSON array of flat objects: each point's override paths
/// as columns (their JSON values), then step_time_s, mfu, hfu, tokens_per_s,
/// model_tflops_per_device, compute_s, exposed_comm_s, bubble_s, other_s,
/// peak_bytes_per_device, fits, binding, error (null when simulated).
std::string sweep_json(const std::vector<SweepRow>& rows);

}  // namespace shardsim
