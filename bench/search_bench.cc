// The plan search on the large case: llama3-405b on 16,384 h100-sxm,
// 2048 sequences of 8192 tokens. Prints the pruning tier's throughput (plans
// through enumeration, validity, memory and the analytical bound per second
// on one core) and the whole search's counts and wall time with the default
// budget on every core (left out with --pruning-only, as the benchmark gate
// runs it: scripts/bench_gate.py).
//   ./build/bench/search_bench [--pruning-only] [scenario.json]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "shardsim/app/search.h"
#include "shardsim/workloads/plan_space.h"
#include "shardsim/workloads/scenario.h"

int main(int argc, char** argv) {
  using namespace shardsim;
  std::string file = std::string(SHARDSIM_SOURCE_DIR) + "/examples/llama3-405b-h100x16384.json";
  bool pruning_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--pruning-only") == 0) {
      pruning_only = true;
    } else {
      file = argv[i];
    }
  }
  const Scenario s = load_scenario(file);
  // Tier 1 alone, repeated for a stable figure.
  PlanSpaceCounts counts;
  size_t cands = 0;
  const auto t0 = std::chrono::steady_clock::now();
  int reps = 0;
  double wall = 0;
  do {
    counts = {};
    cands = enumerate_plans(s, {s.cluster.devices}, counts).size();
    ++reps;
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (wall < 2.0);
  std::printf(
      "%s\n  pruning tier: %lld plans enumerated (%lld invalid, %lld over memory, %zu candidates) in %.4f s: "
      "%.0f plans/s on one core\n",
      file.c_str(), static_cast<long long>(counts.enumerated), static_cast<long long>(counts.invalid),
      static_cast<long long>(counts.over_memory), cands, wall / reps,
      static_cast<double>(counts.enumerated) * reps / wall);
  if (pruning_only) return 0;
  const auto t1 = std::chrono::steady_clock::now();
  const SearchResult r = search_plans(s, {s.cluster.devices}, SearchOptions{});
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  std::printf(
      "  whole search: %zu simulated, %lld pruned by the bound, %lld by program bounds, %lld left by the budget, "
      "%.1f s wall\n",
      r.rows.size(), static_cast<long long>(r.pruned_by_bound), static_cast<long long>(r.pruned_by_program),
      static_cast<long long>(r.left_by_budget), total);
  for (const SearchRow& row : r.rows) {
    if (row.from_scenario)
      std::printf("  scenario's plan: %.4f s (%s)\n", row.report.step_time_s, describe_plan(row.plan).c_str());
  }
  std::printf("  best: %.4f s, MFU %.1f%% (%s)\n", r.rows.front().report.step_time_s, 100 * r.rows.front().report.mfu,
              describe_plan(r.rows.front().plan).c_str());
  return 0;
}
