// The faces of a plan search: its JSON, its table, the best plan as a
// scenario file and its HTML report.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "output.h"
#include "shardsim/app/report.h"
#include "shardsim/app/search.h"
#include "shardsim/core/error.h"
#include "shardsim/workloads/framework.h"

namespace shardsim {
namespace {

std::string schedule_name(const Plan& p) {
  if (p.pp <= 1) return "none";
  return std::string(to_string(p.schedule));
}

nlohmann::json row_json(const SearchRow& r) {
  const Plan& p = r.plan;
  return {{"plan",
           {{"devices", r.devices},
            {"dp", p.dp},
            {"tp", p.tp},
            {"pp", p.pp},
            {"cp", p.cp},
            {"ep", p.ep},
            {"zero", p.zero},
            {"microbatch_size", p.microbatch_size},
            {"schedule", schedule_name(p)},
            {"virtual_stages", p.virtual_stages},
            {"recompute", std::string(to_string(p.recompute))},
            {"sequence_parallel", p.sequence_parallel}}},
          {"from_scenario", r.from_scenario},
          {"step_time_s", r.report.step_time_s},
          {"mfu", r.report.mfu},
          {"peak_bytes_per_device", r.report.memory.peak_bytes_per_device},
          {"binding", r.report.binding},
          {"lower_bound_s", r.lower_bound_s},
          {"estimate_s", r.estimate_s}};
}

nlohmann::json serving_row_json(const ServingRow& r) {
  return {{"tp", r.plan.tp},
          {"pp", r.plan.pp},
          {"ep", r.plan.ep},
          {"replicas", r.summary.replicas},
          {"meets_limits", r.feasible},
          {"output_tokens_per_s_per_device", r.summary.output_tokens_per_s_per_device},
          {"ttft_p99_s", r.summary.ttft_s.p99},
          {"tpot_p99_s", r.summary.tpot_s.p99},
          {"e2e_p99_s", r.summary.e2e_s.p99}};
}

void require_rows(const Scenario& base, const SearchResult& r) {
  if (!r.rows.empty()) return;
  throw InputError(base.file, "/plan",
                   "no plan of this model and batch fits in " + std::to_string(base.cluster.devices) +
                       " devices' memory (" + std::to_string(r.counts.over_memory) + " over memory, " +
                       std::to_string(r.counts.invalid) + " invalid of " + std::to_string(r.counts.enumerated) + ")");
}

void require_rows(const Scenario& base, const ServingSearchResult& r) {
  if (r.rows.empty()) {
    throw InputError(base.file, "/plan", "no replica layout of this model fits the devices' memory with its requests");
  }
}

void write_checked_scenario(const Scenario& base, const std::vector<Override>& all, const std::string& out) {
  const std::string text = render_scenario(base.file, all);
  parse_scenario(text, out);  // the emitted file must load as it is
  std::string err;
  if (!write_file_atomic(out, text, err)) throw UsageError(err);
}

}  // namespace

std::vector<int64_t> search_device_counts(const Scenario& base, SearchObjective objective) {
  std::vector<int64_t> counts = {base.cluster.devices};
  if (objective == SearchObjective::kCost && base.cluster.fabric == FabricKind::kNvswitchFatTree) {
    for (int64_t n = base.cluster.devices / 2; n >= 1 && n * 2 <= base.cluster.devices; n /= 2) {
      counts.push_back(n);
      if (n % 2 != 0) break;
    }
  }
  return counts;
}

SearchObjective parse_search_objective(const std::string& name) {
  if (name == "step_time") return SearchObjective::kStepTime;
  if (name == "mfu") return SearchObjective::kMfu;
  if (name == "cost") return SearchObjective::kCost;
  throw UsageError("--objective: expected step_time, mfu or cost, got \"" + name + "\"");
}

const char* to_string(SearchObjective objective) {
  switch (objective) {
    case SearchObjective::kMfu:
      return "mfu";
    case SearchObjective::kCost:
      return "cost";
    case SearchObjective::kStepTime:
      break;
  }
  return "step_time";
}

std::string search_json(const Scenario& base, const SearchResult& res, SearchObjective objective, int64_t top) {
  require_rows(base, res);
  nlohmann::json j;
  j["scenario"] = base.file;
  j["objective"] = to_string(objective);
  j["plans"] = {{"enumerated", res.counts.enumerated},        {"invalid", res.counts.invalid},
                {"over_memory", res.counts.over_memory},      {"candidates", res.candidates},
                {"pruned_by_bound", res.pruned_by_bound},     {"pruned_by_layers", res.pruned_by_layers},
                {"pruned_by_program", res.pruned_by_program}, {"simulated", res.rows.size()},
                {"left_by_budget", res.left_by_budget},       {"best_proven", res.left_by_budget == 0}};
  j["wall_s"] = {{"enumerate", res.enumerate_wall_s}, {"bound", res.bound_wall_s}, {"simulate", res.simulate_wall_s}};
  j["ranked"] = nlohmann::json::array();
  for (size_t i = 0; i < res.rows.size() && static_cast<int64_t>(i) < top; ++i) {
    j["ranked"].push_back(row_json(res.rows[i]));
  }
  return j.dump(2) + "\n";
}

std::string search_text(const Scenario& base, const SearchResult& res, SearchObjective objective, int64_t top) {
  require_rows(base, res);
  std::string o;
  const double per_s = res.enumerate_wall_s > 0 ? static_cast<double>(res.counts.enumerated) / res.enumerate_wall_s : 0;
  detail::appendf(o, "search: %s on %lld x %s, %lld sequences of %lld tokens per step, objective %s\n",
                  base.model.name.c_str(), static_cast<long long>(base.cluster.devices), base.cluster.chip.name.c_str(),
                  static_cast<long long>(base.plan.global_batch), static_cast<long long>(base.plan.seq_len),
                  to_string(objective));
  detail::appendf(
      o, "  plans     %lld enumerated, %lld invalid, %lld over memory, %lld candidates (%.3f s, %.0f plans/s)\n",
      static_cast<long long>(res.counts.enumerated), static_cast<long long>(res.counts.invalid),
      static_cast<long long>(res.counts.over_memory), static_cast<long long>(res.candidates), res.enumerate_wall_s,
      per_s);
  detail::appendf(o,
                  "  pruned    %lld by FLOPs through the pipeline, %lld by their layers (%.1f s), %lld by their "
                  "programs\n",
                  static_cast<long long>(res.pruned_by_bound), static_cast<long long>(res.pruned_by_layers),
                  res.bound_wall_s, static_cast<long long>(res.pruned_by_program));
  detail::appendf(o, "  simulated %zu (the scenario's plan included); %lld left by the budget (%.1f s)\n",
                  res.rows.size(), static_cast<long long>(res.left_by_budget), res.simulate_wall_s);
  detail::appendf(o, "  %s\n",
                  res.left_by_budget == 0
                      ? "best proven: every other plan's lower bound is above it"
                      : "best not proven: raise --max-simulations to simulate the plans the budget left");
  o += "\n  rank  step_s    MFU     mem GiB  bound by                  plan\n";
  for (size_t i = 0; i < res.rows.size() && static_cast<int64_t>(i) < top; ++i) {
    const SearchRow& r = res.rows[i];
    detail::appendf(o, "  %4zu  %8.4f  %5.1f%%  %7.2f  %-24s  %s%s%s\n", i + 1, r.report.step_time_s,
                    100 * r.report.mfu,
                    static_cast<double>(r.report.memory.peak_bytes_per_device) / (1024.0 * 1024 * 1024),
                    r.report.binding.c_str(), describe_plan(r.plan).c_str(),
                    r.devices != base.cluster.devices ? (" on " + std::to_string(r.devices)).c_str() : "",
                    r.from_scenario ? "  (scenario)" : "");
  }
  return o;
}

std::string serving_search_json(const Scenario& base, const ServingSearchResult& res, const ServingLimits& limits,
                                int64_t top) {
  require_rows(base, res);
  nlohmann::json j;
  j["scenario"] = base.file;
  j["objective"] = "output_tokens_per_s_per_device";
  j["limits"] = {{"max_ttft_p99_s", limits.max_ttft_p99_s}, {"max_tpot_p99_s", limits.max_tpot_p99_s}};
  j["plans"] = {{"enumerated", res.enumerated},
                {"invalid", res.invalid},
                {"over_memory", res.over_memory},
                {"served", res.rows.size()}};
  j["ranked"] = nlohmann::json::array();
  for (size_t i = 0; i < res.rows.size() && static_cast<int64_t>(i) < top; ++i) {
    j["ranked"].push_back(serving_row_json(res.rows[i]));
  }
  return j.dump(2) + "\n";
}

std::string serving_search_text(const Scenario& base, const ServingSearchResult& res, const ServingLimits& limits,
                                int64_t top) {
  require_rows(base, res);
  std::string o;
  detail::appendf(o, "search (serving): %s on %lld x %s, objective output tokens/s per device", base.model.name.c_str(),
                  static_cast<long long>(base.cluster.devices), base.cluster.chip.name.c_str());
  if (limits.max_ttft_p99_s > 0) detail::appendf(o, ", TTFT p99 <= %g s", limits.max_ttft_p99_s);
  if (limits.max_tpot_p99_s > 0) detail::appendf(o, ", TPOT p99 <= %g s", limits.max_tpot_p99_s);
  detail::appendf(o, "\n  layouts   %lld enumerated, %lld invalid, %lld without room for the KV cache, %zu served\n\n",
                  static_cast<long long>(res.enumerated), static_cast<long long>(res.invalid),
                  static_cast<long long>(res.over_memory), res.rows.size());
  o += "  rank  tok/s/dev  TTFT p99  TPOT p99  replicas  layout\n";
  for (size_t i = 0; i < res.rows.size() && static_cast<int64_t>(i) < top; ++i) {
    const ServingRow& r = res.rows[i];
    detail::appendf(o, "  %4zu  %9.2f  %8.4f  %8.4f  %8lld  tp %lld · pp %lld%s%s\n", i + 1,
                    r.summary.output_tokens_per_s_per_device, r.summary.ttft_s.p99, r.summary.tpot_s.p99,
                    static_cast<long long>(r.summary.replicas), static_cast<long long>(r.plan.tp),
                    static_cast<long long>(r.plan.pp),
                    r.plan.ep > 1 ? (" · ep " + std::to_string(r.plan.ep)).c_str() : "",
                    r.feasible ? "" : "  (misses the limits)");
  }
  return o;
}

void emit_best_plan(const Scenario& base, const std::vector<Override>& overrides, const SearchResult& r,
                    const std::string& out) {
  require_rows(base, r);
  const SearchRow& b = r.rows.front();
  std::vector<Override> all = overrides;
  // The scenario's own plan stays as its file has it; an enumerated one gets
  // every field the enumerator set (fields it reset go back to defaults).
  if (!b.from_scenario) {
    for (Override& o : searched_plan_overrides(b.plan)) all.push_back(std::move(o));
  }
  if (b.devices != base.cluster.devices) all.push_back({"cluster.devices", std::to_string(b.devices)});
  write_checked_scenario(base, all, out);
}

void emit_best_plan(const Scenario& base, const std::vector<Override>& overrides, const ServingSearchResult& r,
                    const std::string& out) {
  require_rows(base, r);
  const Plan& p = r.rows.front().plan;
  std::vector<Override> all = overrides;
  for (const auto& [k, v] : std::vector<std::pair<std::string, int64_t>>{
           {"plan.tp", p.tp}, {"plan.pp", p.pp}, {"plan.dp", p.dp}, {"plan.ep", p.ep}}) {
    all.push_back({k, std::to_string(v)});
  }
  write_checked_scenario(base, all, out);
}

void write_search_report(const Scenario& base, const SearchResult& res, const std::string& out) {
  require_rows(base, res);
  std::vector<ReportPlanPoint> points;
  for (size_t i = 0; i < res.rows.size(); ++i) {
    const SearchRow& r = res.rows[i];
    points.push_back(
        {describe_plan(r.plan) +
             (r.devices != base.cluster.devices ? " on " + std::to_string(r.devices) + " devices" : std::string()),
         r.report.step_time_s, r.report.memory.peak_bytes_per_device, i == 0, r.from_scenario});
  }
  Scenario best = base;
  best.plan = res.rows.front().plan;
  best.cluster.devices = res.rows.front().devices;
  write_step_report(best, out,
                    "shardsim search: best plan for " + base.model.name + " on " +
                        std::to_string(best.cluster.devices) + " x " + base.cluster.chip.name,
                    std::move(points));
}

}  // namespace shardsim
