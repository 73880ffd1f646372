// Runs a serving scenario end to end: requests, the scheduler, iterations
// timed by lowering and simulating them, and the summary figures. Shared by
// `shardsim serve` and the serving search.
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
};

/// Serves `s`'s requests (s.serving must be present). Deterministic.
ServeSummary run_serving(const Scenario& s);

}  // namespace shardsim
