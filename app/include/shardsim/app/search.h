// The plan search: enumerate the plans of a scenario's model, cluster and
// batch, drop the invalid and the ones over memory, bound every other from
// below (three bounds, each tighter and dearer than the last), and simulate
// in the order of the bounds until no plan left can beat the best simulated:
// the best is then proven. A budget of simulations may stop it sooner.
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
  /// Most plans simulated, the scenario's own included: a cap on the time,
  /// not part of the method (the search stops when its best is proven; the
  /// 70B and 405B examples take 20 and 8, docs/search.md).
  int64_t max_simulations = 64;
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
  int64_t candidates = 0;  ///< valid and within memory
  /// Plans whose bound could not beat the best simulated step, by the bound
  /// that showed it: tier 1, FLOPs through the pipeline (step_time_lower_bound_s);
  /// tier 2, each layer's own work and communication (LayerBound); tier 3,
  /// the lowered programs' longest path (step_time_lower_bound).
  int64_t pruned_by_bound = 0;
  int64_t pruned_by_layers = 0;
  int64_t pruned_by_program = 0;
  int64_t left_by_budget = 0;   ///< neither pruned nor simulated: the best is not proven
  double enumerate_wall_s = 0;  ///< tier 1: enumeration, checks, memory, bounds
  double bound_wall_s = 0;      ///< tier 2 for every candidate
  double simulate_wall_s = 0;   ///< tier 3 and the simulations
  std::vector<SearchRow> rows;  ///< every simulated plan, best first
};

/// Searches the plans of `base` over `device_counts` (its own count first):
/// the scenario's own plan is simulated first; then candidates in the order
/// of their tier-1 and tier-2 bounds (the objective's, smallest first), each
/// bounded again by its lowered programs (tier 3, native backend) before it
/// is simulated, until the next bound cannot beat the best simulated (every
/// plan left is pruned: the best is proven) or the budget is spent.
/// Deterministic: simulations run in waves of four whose pruning decisions
/// depend only on the waves before, so `jobs` changes the speed, not the
/// answer.
SearchResult search_plans(const Scenario& base, const std::vector<int64_t>& device_counts,
                          const SearchOptions& options);

/// Sets a result's wall times to 0 (`--no-timing`: byte-identical output).
void forget_wall_times(SearchResult& r);

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
