// shardsim search: which plan should I run?
#include <unistd.h>

#include <thread>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "plan_search.h"
#include "report_writer.h"
#include "shardsim/core/atomic_file.h"
#include "shardsim/core/error.h"
#include "shardsim/workloads/framework.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::cli {
namespace {

std::string schedule_name(const Plan& p) {
  if (p.pp <= 1) return "none";
  return p.schedule == PipelineSchedule::kInterleaved ? "interleaved"
         : p.schedule == PipelineSchedule::kGpipe     ? "gpipe"
                                                      : "1f1b";
}
std::string recompute_name(Recompute r) {
  return std::string(to_string(r));
}

/// The overrides that turn the scenario's plan into `p` (and its device count).
std::vector<Override> plan_overrides(const Plan& p, int64_t devices, const Scenario& base) {
  auto i = [](int64_t x) { return std::to_string(x); };
  std::vector<Override> o = {{"plan.dp", i(p.dp)},
                             {"plan.tp", i(p.tp)},
                             {"plan.pp", i(p.pp)},
                             {"plan.cp", i(p.cp)},
                             {"plan.zero", i(p.zero)},
                             {"plan.microbatch_size", i(p.microbatch_size)},
                             {"plan.recompute", recompute_name(p.recompute)},
                             {"plan.sequence_parallel", p.sequence_parallel ? "true" : "false"},
                             {"plan.schedule", p.schedule == PipelineSchedule::kInterleaved ? "interleaved"
                                               : p.schedule == PipelineSchedule::kGpipe     ? "gpipe"
                                                                                            : "1f1b"},
                             {"plan.virtual_stages", i(p.virtual_stages)}};
  if (p.ep > 1 || base.plan.ep > 1) o.push_back({"plan.ep", i(p.ep)});
  if (p.recompute != Recompute::kCustom && !base.plan.recompute_keep.empty())
    o.push_back({"plan.recompute_keep", "[]"});
  if (devices != base.cluster.devices) o.push_back({"cluster.devices", i(devices)});
  return o;
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
            {"recompute", recompute_name(p.recompute)},
            {"sequence_parallel", p.sequence_parallel}}},
          {"from_scenario", r.from_scenario},
          {"step_time_s", r.report.step_time_s},
          {"mfu", r.report.mfu},
          {"peak_bytes_per_device", r.report.memory.peak_bytes_per_device},
          {"binding", r.report.binding},
          {"lower_bound_s", r.lower_bound_s},
          {"estimate_s", r.estimate_s}};
}

bool progress_wanted() {
  const char* ci = std::getenv("CI");
  return ::isatty(STDERR_FILENO) && (ci == nullptr || *ci == '\0');
}

/// The serving search's table (an inference scenario with a serving object).
int serving_search(const Scenario& base, const std::string& file, const ServingLimits& limits, bool json, int64_t top,
                   int jobs, const std::vector<Override>& sets, const std::string& emit) {
  if (jobs <= 0) jobs = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const ServingSearchResult res = search_serving_plans(base, limits, jobs);
  if (res.rows.empty()) {
    throw InputError(file, "/plan", "no replica layout of this model fits the devices' memory with its requests");
  }
  if (!emit.empty()) {
    const Plan& p = res.rows.front().plan;
    std::vector<Override> all = sets;
    for (const auto& [k, v] : std::vector<std::pair<std::string, int64_t>>{
             {"plan.tp", p.tp}, {"plan.pp", p.pp}, {"plan.dp", p.dp}, {"plan.ep", p.ep}}) {
      all.push_back({k, std::to_string(v)});
    }
    const std::string text = render_scenario(file, all);
    parse_scenario(text, emit);  // the emitted file must load as it is
    std::string err;
    if (!write_file_atomic(emit, text, err)) throw UsageError(err);
  }
  auto row_json = [](const ServingRow& r) {
    return nlohmann::json{{"tp", r.plan.tp},
                          {"pp", r.plan.pp},
                          {"ep", r.plan.ep},
                          {"replicas", r.summary.replicas},
                          {"meets_limits", r.feasible},
                          {"output_tokens_per_s_per_device", r.summary.output_tokens_per_s_per_device},
                          {"ttft_p99_s", r.summary.ttft_s.p99},
                          {"tpot_p99_s", r.summary.tpot_s.p99},
                          {"e2e_p99_s", r.summary.e2e_s.p99}};
  };
  if (json) {
    nlohmann::json j;
    j["scenario"] = file;
    j["objective"] = "output_tokens_per_s_per_device";
    j["limits"] = {{"max_ttft_p99_s", limits.max_ttft_p99_s}, {"max_tpot_p99_s", limits.max_tpot_p99_s}};
    j["plans"] = {{"enumerated", res.enumerated},
                  {"invalid", res.invalid},
                  {"over_memory", res.over_memory},
                  {"served", res.rows.size()}};
    j["ranked"] = nlohmann::json::array();
    for (size_t i = 0; i < res.rows.size() && static_cast<int64_t>(i) < top; ++i) {
      j["ranked"].push_back(row_json(res.rows[i]));
    }
    std::fputs((j.dump(2) + "\n").c_str(), stdout);
    return 0;
  }
  std::printf("search (serving): %s on %lld x %s, objective output tokens/s per device", base.model.name.c_str(),
              static_cast<long long>(base.cluster.devices), base.cluster.chip.name.c_str());
  if (limits.max_ttft_p99_s > 0) std::printf(", TTFT p99 <= %g s", limits.max_ttft_p99_s);
  if (limits.max_tpot_p99_s > 0) std::printf(", TPOT p99 <= %g s", limits.max_tpot_p99_s);
  std::printf("\n  layouts   %lld enumerated, %lld invalid, %lld without room for the KV cache, %zu served\n\n",
              static_cast<long long>(res.enumerated), static_cast<long long>(res.invalid),
              static_cast<long long>(res.over_memory), res.rows.size());
  std::printf("  rank  tok/s/dev  TTFT p99  TPOT p99  replicas  layout\n");
  for (size_t i = 0; i < res.rows.size() && static_cast<int64_t>(i) < top; ++i) {
    const ServingRow& r = res.rows[i];
    std::printf("  %4zu  %9.2f  %8.4f  %8.4f  %8lld  tp %lld · pp %lld%s%s\n", i + 1,
                r.summary.output_tokens_per_s_per_device, r.summary.ttft_s.p99, r.summary.tpot_s.p99,
                static_cast<long long>(r.summary.replicas), static_cast<long long>(r.plan.tp),
                static_cast<long long>(r.plan.pp), r.plan.ep > 1 ? (" · ep " + std::to_string(r.plan.ep)).c_str() : "",
                r.feasible ? "" : "  (misses the limits)");
  }
  return 0;
}

}  // namespace

int cmd_search(const std::vector<std::string>& args) {
  std::string file, emit, report, objective = "step_time";
  std::vector<Override> sets;
  int64_t top = 10, devices = 0, budget = 12, jobs = 0;
  ServingLimits limits;
  bool json = false, no_timing = false;
  auto positive = [](const std::string& flag, const std::string& v, int64_t hi) {
    if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos || std::stoll(v) < 1 ||
        std::stoll(v) > hi) {
      throw UsageError(flag + ": expected an integer from 1 to " + std::to_string(hi) + ", got \"" + v + "\"");
    }
    return std::stoll(v);
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--no-timing") {
      no_timing = true;
    } else if (a == "--set") {
      sets.push_back(parse_set(take_value(args, i)));
    } else if (a == "--top") {
      top = positive(a, take_value(args, i), 1000000);
    } else if (a == "--devices") {
      devices = positive(a, take_value(args, i), int64_t{1} << 20);
    } else if (a == "--max-simulations") {
      budget = positive(a, take_value(args, i), 100000);
    } else if (a == "--jobs") {
      jobs = positive(a, take_value(args, i), 1024);
    } else if (a == "--objective") {
      objective = take_value(args, i);
      if (objective != "step_time" && objective != "mfu" && objective != "cost") {
        throw UsageError("--objective: expected step_time, mfu or cost, got \"" + objective + "\"");
      }
    } else if (a == "--emit-best") {
      emit = take_value(args, i);
    } else if (a == "--max-ttft-p99-s" || a == "--max-tpot-p99-s") {
      const std::string v = take_value(args, i);
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(x > 0) || x > 1e6) {
        throw UsageError(a + ": expected a positive number of seconds, got \"" + v + "\"");
      }
      (a == "--max-ttft-p99-s" ? limits.max_ttft_p99_s : limits.max_tpot_p99_s) = x;
    } else if (a == "--report") {
      report = take_value(args, i);
    } else {
      take_scenario_file("search", a, file);
    }
  }
  if (file.empty()) throw UsageError("search: expected a scenario file (shardsim --help)");
  if (devices > 0) sets.push_back({"cluster.devices", std::to_string(devices)});
  const Scenario base = load_scenario(file, sets);
  if (base.plan.inference()) {
    if (!base.serving.present) {
      throw InputError(file, "/serving",
                       "missing: searching an inference plan serves the scenario's request stream; add a serving "
                       "object (docs/inference.md)");
    }
    if (!report.empty()) throw UsageError("--report: the serving search has no HTML report yet; use --json");
    const int rc = serving_search(base, file, limits, json, top, static_cast<int>(jobs), sets, emit);
    return rc;
  }

  SearchOptions opt;
  opt.objective = objective == "mfu"    ? SearchObjective::kMfu
                  : objective == "cost" ? SearchObjective::kCost
                                        : SearchObjective::kStepTime;
  opt.max_simulations = budget;
  opt.jobs = static_cast<int>(jobs);
  if (progress_wanted()) {
    opt.progress = [](int64_t done, int64_t budget_left, double s) {
      const double left = done > 0 ? s / static_cast<double>(done) * static_cast<double>(budget_left - done) : 0;
      std::fprintf(stderr, "\rsearch: simulated %lld of at most %lld plans, %.0f s, at most %.0f s left   ",
                   static_cast<long long>(done), static_cast<long long>(budget_left), s, std::max(0.0, left));
    };
  }
  std::vector<int64_t> counts = {base.cluster.devices};
  if (opt.objective == SearchObjective::kCost && base.cluster.fabric == FabricKind::kNvswitchFatTree) {
    for (int64_t n = base.cluster.devices / 2; n >= 1 && n * 2 <= base.cluster.devices; n /= 2) {
      counts.push_back(n);
      if (n % 2 != 0) break;
    }
  }
  SearchResult res = search_plans(base, counts, opt);
  if (opt.progress) std::fputs("\r\033[K", stderr);
  if (res.rows.empty()) {
    throw InputError(file, "/plan",
                     "no plan of this model and batch fits in " + std::to_string(base.cluster.devices) +
                         " devices' memory (" + std::to_string(res.counts.over_memory) + " over memory, " +
                         std::to_string(res.counts.invalid) + " invalid of " + std::to_string(res.counts.enumerated) +
                         ")");
  }
  if (no_timing) res.enumerate_wall_s = res.simulate_wall_s = 0;

  if (!emit.empty()) {
    const SearchRow& b = res.rows.front();
    std::vector<Override> all = sets;
    for (Override& o : plan_overrides(b.plan, b.devices, base)) all.push_back(std::move(o));
    const std::string text = render_scenario(file, all);
    parse_scenario(text, emit);  // the emitted file must load as it is
    std::string err;
    if (!write_file_atomic(emit, text, err)) throw UsageError(err);
  }

  if (!report.empty()) {
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
    write_step_report(best, report,
                      "shardsim search: best plan for " + base.model.name + " on " +
                          std::to_string(best.cluster.devices) + " x " + base.cluster.chip.name,
                      std::move(points));
  }
  const double per_s = res.enumerate_wall_s > 0 ? static_cast<double>(res.counts.enumerated) / res.enumerate_wall_s : 0;
  if (json) {
    nlohmann::json j;
    j["scenario"] = file;
    j["objective"] = objective;
    j["plans"] = {{"enumerated", res.counts.enumerated},    {"invalid", res.counts.invalid},
                  {"over_memory", res.counts.over_memory},  {"candidates", res.candidates},
                  {"pruned_by_bound", res.pruned_by_bound}, {"pruned_by_compute", res.pruned_by_compute},
                  {"simulated", res.rows.size()},           {"left_by_budget", res.left_by_budget},
                  {"best_proven", res.left_by_budget == 0}};
    j["wall_s"] = {{"enumerate", res.enumerate_wall_s}, {"simulate", res.simulate_wall_s}};
    j["ranked"] = nlohmann::json::array();
    for (size_t i = 0; i < res.rows.size() && static_cast<int64_t>(i) < top; ++i)
      j["ranked"].push_back(row_json(res.rows[i]));
    std::fputs((j.dump(2) + "\n").c_str(), stdout);
    return 0;
  }
  std::printf("search: %s on %lld x %s, %lld sequences of %lld tokens per step, objective %s\n",
              base.model.name.c_str(), static_cast<long long>(base.cluster.devices), base.cluster.chip.name.c_str(),
              static_cast<long long>(base.plan.global_batch), static_cast<long long>(base.plan.seq_len),
              objective.c_str());
  std::printf("  plans     %lld enumerated, %lld invalid, %lld over memory, %lld candidates (%.3f s, %.0f plans/s)\n",
              static_cast<long long>(res.counts.enumerated), static_cast<long long>(res.counts.invalid),
              static_cast<long long>(res.counts.over_memory), static_cast<long long>(res.candidates),
              res.enumerate_wall_s, per_s);
  std::printf(
      "  simulated %zu (the scenario's plan included); pruned %lld by the analytical bound and %lld by "
      "their compute ops; %lld left by the budget (%.1f s)\n",
      res.rows.size(), static_cast<long long>(res.pruned_by_bound), static_cast<long long>(res.pruned_by_compute),
      static_cast<long long>(res.left_by_budget), res.simulate_wall_s);
  std::printf("  %s\n", res.left_by_budget == 0
                            ? "best proven: every other plan's lower bound is above it"
                            : "best not proven: raise --max-simulations to simulate the plans the budget left");
  std::printf("\n  rank  step_s    MFU     mem GiB  bound by                  plan\n");
  for (size_t i = 0; i < res.rows.size() && static_cast<int64_t>(i) < top; ++i) {
    const SearchRow& r = res.rows[i];
    std::printf("  %4zu  %8.4f  %5.1f%%  %7.2f  %-24s  %s%s%s\n", i + 1, r.report.step_time_s, 100 * r.report.mfu,
                static_cast<double>(r.report.memory.peak_bytes_per_device) / (1024.0 * 1024 * 1024),
                r.report.binding.c_str(), describe_plan(r.plan).c_str(),
                r.devices != base.cluster.devices ? (" on " + std::to_string(r.devices)).c_str() : "",
                r.from_scenario ? "  (scenario)" : "");
  }
  if (!emit.empty()) std::printf("\n  best plan written to %s\n", emit.c_str());
  if (!report.empty()) std::printf("  report written to %s\n", report.c_str());
  return 0;
}

}  // namespace shardsim::cli
