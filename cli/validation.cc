#include "validation.h"

#include "shardsim/core/error.h"

namespace shardsim {
namespace {

double component(const StepReport& r, const std::string& name) {
  for (const auto& c : r.memory.components) {
    if (c.name == name) return static_cast<double>(c.bytes);
  }
  return 0;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

std::vector<ValidationRow> validate_scenario(const Scenario& s, const StepReport& r) {
  std::vector<ValidationRow> rows;
  for (const auto& [metric, value] : s.published.metrics) {
    ValidationRow row;
    row.scenario = s.file;
    row.metric = metric;
    row.published = value;
    row.fitted = s.published.fitted;
    if (metric == "step_time_s") {
      row.predicted = r.step_time_s;
      row.performance = true;
    } else if (metric == "megatron_tflops_per_gpu") {
      const double B = static_cast<double>(s.plan.global_batch);
      const double sq = static_cast<double>(s.plan.seq_len);
      const double l = static_cast<double>(s.model.layers);
      const double h = static_cast<double>(s.model.hidden);
      const double V = static_cast<double>(s.model.vocab);
      const double F = 96.0 * B * sq * l * h * h * (1.0 + sq / (6.0 * h) + V / (16.0 * l * h));
      row.predicted = F / (r.step_time_s * static_cast<double>(s.cluster.devices)) / 1e12;
      row.performance = true;
    } else if (metric == "activations_GiB") {
      row.predicted = component(r, "activations") / kGiB;
    } else if (metric == "weights_and_optimizer_GiB") {
      row.predicted = (component(r, "weights") + component(r, "gradients") + component(r, "optimizer_state")) / kGiB;
    } else {
      throw InputError(s.file, "/published/" + metric,
                       "unknown metric (expected step_time_s, megatron_tflops_per_gpu, activations_GiB or "
                       "weights_and_optimizer_GiB)");
    }
    row.error = (row.predicted - row.published) / row.published;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace shardsim
