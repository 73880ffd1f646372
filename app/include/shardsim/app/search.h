// The plan search: enumerate the plans of a scenario's model, cluster and
// batch, drop the invalid and the ones over memory, prune by a lower bound
// on the step time, and simulate the rest in order of a closed-form
// estimate, up to a budget of simulations.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "shardsim/core/step_report.h"
#include "shardsim/workloads/plan_space.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

enum class SearchObjective : uint8_t {
  kStepTime,  ///< shortest step
  kMfu,       ///< highest model FLOP utilisation (at a fixed device count, the same order as kStepTime)
  kCost,      ///< fewest device-seconds per step, over device counts N, N/2, N/4, ... (GPU clusters)
};

/// Runs one wave of a search's simulations: reports[k] = simulate(k) for
/// every k < n (reports has n entries). The default runs them on `jobs`
/// threads; an MPI runner (realexec/mpi_search.h) deals them out across
/// ranks. The search and its outputs read step_time_s, mfu, hfu,
/// memory.peak_bytes_per_device, memory.fits and binding of each report.
using WaveRunner =
    std::function<void(size_t n, const std::function<StepReport(size_t)>& simulate, std::vector<StepReport>& reports)>;

struct SearchOptions {
  SearchObjective objective = SearchObjective::kStepTime;
  /// Most plans simulated, the scenario's own included.
  int64_t max_simulations = 12;
  /// Threads that simulate at once; 0: every core. Results do not depend on it.
  int jobs = 0;
  /// Called after each wave of simulations: (simulated, budget, seconds so far).
  std::function<void(int64_t, int64_t, double)> progress;
  /// Empty: threads (`jobs`). The waves are the same whoever runs them (four
  /// plans each, chosen before any of them runs), so the answer is too.
  WaveRunner wave_runner;
};

struct SearchRow {
  Plan plan;
  int64_t devices = 0;
  StepReport report;
  double lower_bound_s = 0;
  double estimate_s = 0;
  bool from_scenario = false;  ///< the plan the scenario came with
  double objective = 0;        ///< smaller is better (MFU negated)
};

struct SearchResult {
  PlanSpaceCounts counts;
  int64_t candidates = 0;         ///< valid and within memory
  int64_t pruned_by_bound = 0;    ///< tier 1: their analytical lower bound cannot beat the best simulated
  /// Tier 2: their lowered programs' bounds cannot beat it (the busiest
  /// stage's compute ops, and the path through one device per stage with
  /// every op at a time no run beats).
  int64_t pruned_by_program = 0;
  int64_t left_by_budget = 0;     ///< neither pruned nor simulated: the best is not proven
  double enumerate_wall_s = 0;    ///< tier 1: enumeration, checks, memory, bounds
  double simulate_wall_s = 0;     ///< tier 3: simulations
  std::vector<SearchRow> rows;    ///< every simulated plan, best first
};

/// Searches the plans of `base` over `device_counts` (its own count first).
/// Deterministic: simulations run in waves of four whose pruning decisions
/// depend only on the waves before, so `jobs` changes the speed, not the
/// answer.
SearchResult search_plans(const Scenario& base, const std::vector<int64_t>& device_counts,
                          const SearchOptions& options);

}  // namespace shardsim

#include "shardsim/app/serve.h"

namespace shardsim {

/// Serving search (jobs <= 0: every core): the replica layouts of an inference scenario with a
/// serving object — tp (powers of two up to a node, or 16 on tori), pp
/// (1, 2, 4, 8), ep (MoE: powers of two dividing the experts and the
/// replicas), dp = devices / (tp·pp) — each served end to end. Weight and
/// KV dtypes stay the scenario's (they change the model's numerics).
struct ServingRow {
  Plan plan;
  ServeSummary summary;
  bool feasible = true;  ///< meets the latency limits
};
struct ServingSearchResult {
  int64_t enumerated = 0, invalid = 0, over_memory = 0;
  std::vector<ServingRow> rows;  ///< feasible first, by output tokens/s per device, best first
};
struct ServingLimits {
  double max_ttft_p99_s = 0;  ///< 0: no limit
  double max_tpot_p99_s = 0;
};
ServingSearchResult search_serving_plans(const Scenario& base, const ServingLimits& limits, int jobs);

/// The device counts a search over `base` tries: its own, and for kCost on
/// GPU clusters N/2, N/4, ... as well.
std::vector<int64_t> search_device_counts(const Scenario& base, SearchObjective objective);
/// "step_time", "mfu" or "cost" (UsageError otherwise), and back.
SearchObjective parse_search_objective(const std::string& name);
const char* to_string(SearchObjective objective);

/// `shardsim search --json` and its table: the first `top` rows ranked.
/// Throws InputError (at /plan) when no plan fits.
std::string search_json(const Scenario& base, const SearchResult& r, SearchObjective objective, int64_t top);
std::string search_text(const Scenario& base, const SearchResult& r, SearchObjective objective, int64_t top);
std::string serving_search_json(const Scenario& base, const ServingSearchResult& r, const ServingLimits& limits,
                                int64_t top);
std::string serving_search_text(const Scenario& base, const ServingSearchResult& r, const ServingLimits& limits,
                                int64_t top);

/// The scenario file `base` was loaded from (with `overrides`), its plan
/// replaced by the best row's, checked to load, written atomically to `out`.
void emit_best_plan(const Scenario& base, const std::vector<Override>& overrides, const SearchResult& r,
                    const std::string& out);
void emit_best_plan(const Scenario& base, const std::vector<Override>& overrides, const ServingSearchResult& r,
                    const std::string& out);
/// The HTML report of the best plan with every simulated plan plotted.
void write_search_report(const Scenario& base, const SearchResult& r, const std::string& out);

}  // namespace shardsim
