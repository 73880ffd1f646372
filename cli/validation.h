// Predicted-versus-published comparison for `shardsim validate`.
#pragma once

#include <string>
#include <vector>

#include "shardsim/core/step_report.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

struct ValidationRow {
  std::string scenario;
  std::string metric;
  double published = 0;
  double predicted = 0;
  double error = 0;          ///< (predicted - published) / published
  bool performance = false;  ///< a time or throughput metric (memory otherwise)
  bool fitted = false;       ///< the scenario's row was used to fit a chip default
};

/// The metrics a scenario's "published" object may name:
///   step_time_s                 seconds per iteration
///   megatron_tflops_per_gpu     Narayanan et al.'s F = 96·B·s·l·h²·(1 + s/(6h)
///                               + V/(16·l·h)) per iteration over (time · GPUs):
///                               the FLOP count their TFLOP/s column uses
///   activations_GiB             the activation component of peak memory
///   weights_and_optimizer_GiB   weights + gradients + optimizer state
/// Throws InputError for an unknown metric.
std::vector<ValidationRow> validate_scenario(const Scenario& s, const StepReport& r);

}  // namespace shardsim
