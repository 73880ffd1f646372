// The plan search on the two large cases (issue 17's bar: the best
// proven within 60 s on 2 cores): llama3-70b on 1,024 h100-sxm and
// llama3-405b on 16,384. Prints the pruning tier's throughput (plans through
// enumeration, validity, memory and the FLOP bound per second on one core)
// and the whole search's counts per tier, whether its best is proven, and
// its wall time with the default budget on every core (left out with
// --pruning-only, as the benchmark gate runs it on the 405B case:
// scripts/bench_gate.py).
//   ./build/bench/search_bench [--pruning-only] [scenario.json...]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "shardsim/app/search.h"
#include "shardsim/workloads/plan_space.h"
#include "shardsim/workloads/scenario.h"

namespace {

void bench(const std::string& file, bool pruning_only) {
  using namespace shardsim;
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
  if (pruning_only) return;
  const auto t1 = std::chrono::steady_clock::now();
  const SearchResult r = search_plans(s, {s.cluster.devices}, SearchOptions{});
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  std::printf(
      "  whole search: pruned %lld by FLOPs, %lld by layers (%.1f s), %lld by programs; %zu simulated; %lld left by "
      "the budget: %s; %.1f s wall\n",
      static_cast<long long>(r.pruned_by_bound), static_cast<long long>(r.pruned_by_layers), r.bound_wall_s,
      static_cast<long long>(r.pruned_by_program), r.rows.size(), static_cast<long long>(r.left_by_budget),
      r.left_by_budget == 0 ? "best proven" : "best not proven", total);
  for (const SearchRow& row : r.rows) {
    if (row.from_scenario)
      std::printf("  scenario's plan: %.4f s (%s)\n", row.report.step_time_s, describe_plan(row.plan).c_str());
  }
  std::printf("  best: %.4f s, MFU %.1f%% (%s)\n", r.rows.front().report.step_time_s, 100 * r.rows.front().report.mfu,
              describe_plan(r.rows.front().plan).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  bool pruning_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--pruning-only") == 0) {
      pruning_only = true;
    } else {
      files.emplace_back(argv[i]);
    }
  }
  if (files.empty()) {
    // The gate times the pruning pass of the 405B case alone.
    if (!pruning_only) files.push_back(std::string(SHARDSIM_SOURCE_DIR) + "/examples/llama3-70b-h100x1024.json");
    files.push_back(std::string(SHARDSIM_SOURCE_DIR) + "/examples/llama3-405b-h100x16384.json");
  }
  for (const std::string& f : files) bench(f, pruning_only);
  return 0;
}
