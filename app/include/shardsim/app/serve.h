// Runs a serving scenario end to end: requests, the scheduler, iterations
// timed by lowering and simulating them, and the summary figures, with their
// JSON, text and trace. What `shardsim serve`, `shardsim.serve` and the
// serving search call.
#pragma once

#include <cstdint>
#include <string>

#include "shardsim/workloads/serving.h"

namespace shardsim {

struct LatencyPercentiles {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;
};

struct ServeSummary {
  ServeResult result;
  int64_t replicas = 0;
  double duration_s = 0;
  double output_tokens_per_s = 0;
  double total_tokens_per_s = 0;
  double output_tokens_per_s_per_device = 0;
  LatencyPercentiles ttft_s, tpot_s, itl_s, e2e_s;
  double kv_mean_used = 0, kv_max_used = 0;
  size_t distinct_iterations_simulated = 0;
  double wall_s = 0;  ///< the run's wall time (set to 0 for byte-identical output)
};

/// Serves `s`'s requests (s.serving must be present, else InputError).
/// Deterministic, but for wall_s.
ServeSummary run_serving(const Scenario& s);

/// The result object of `shardsim serve --json` (pretty-printed, fixed key
/// order).
std::string serve_json(const Scenario& s, const ServeSummary& r);
/// The summary `shardsim serve` prints.
std::string serve_summary_text(const Scenario& s, const ServeSummary& r);
/// A Chrome trace of the iterations (one process per replica, a counter of
/// the KV cache in use), written atomically; UsageError when it cannot be.
void write_serve_trace(const std::string& file, const ServeSummary& r);

}  // namespace shardsim
