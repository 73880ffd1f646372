#include "shardsim/app/whatif.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "output.h"
#include "shardsim/app/step.h"
#include "shardsim/app/workload.h"
#include "shardsim/core/error.h"
#include "shardsim/core/parallel.h"
#include "shardsim/workloads/lower.h"

namespace shardsim {
namespace {

std::string factor_text(double k) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", k);
  return buf;
}

/// `s` with `levers` sped up on top of any speed-up it already has (factors
/// of one lever multiply).
Scenario sped_up(const Scenario& s, const std::vector<std::pair<std::string, double>>& levers) {
  std::vector<Override> sets;
  for (const auto& [lever, k] : levers) {
    double factor = k;
    for (const auto& [name, had] : s.simulator.speedup.levers) {
      if (name == lever) factor *= had;
    }
    sets.push_back(Override{"simulator.speedup." + lever, factor_text(factor)});
  }
  return parse_scenario(scenario_json(s), s.file, sets);
}

/// The base path's share of the step on the lever's ops (WhatIfLever).
std::optional<double> path_share(const CriticalPathReport& path, const std::string& lever) {
  if (!path.present || path.length_s <= 0 || lever.rfind("net", 0) == 0) return std::nullopt;
  double on = 0;
  for (const auto& [category, t] : path.by_category_s) {
    const bool compute = category.rfind("compute: ", 0) == 0;
    // A host copy's category is its stream's ("host d2h: host copy").
    const bool host_copy = category.ends_with(": host copy");
    if (lever == "compute"               ? compute
        : lever == "host copy"           ? host_copy
        : lever.rfind("stream:", 0) == 0 ? category.rfind(lever.substr(7) + ": ", 0) == 0 && !host_copy
                                         : compute && category.substr(9) == lever) {
      on += t;
    }
  }
  return on / path.length_s;
}

double step_time(const Scenario& s) {
  SimulateOptions opt;
  opt.timing = false;
  opt.critical_path = CriticalPathMode::kOff;
  return simulate_step(s, opt).report.step_time_s;
}

}  // namespace

std::vector<std::string> levers_of(const Scenario& s) {
  const ProgramSet programs = step_programs(s).programs;  // lowered, or the trace's
  std::set<int> kinds;
  std::vector<std::string> streams;
  for (const Program& p : programs.stages) {
    for (const Op& o : p.ops()) {
      if (o.kind == OpKind::kCompute) {
        kinds.insert(static_cast<int>(o.compute));
        continue;
      }
      const std::string& name = p.stream_names()[o.stream];
      if (std::find(streams.begin(), streams.end(), name) == streams.end()) streams.push_back(name);
    }
  }
  std::vector<std::string> out;
  for (int k : kinds) out.emplace_back(to_string(static_cast<ComputeKind>(k)));
  std::sort(streams.begin(), streams.end());
  for (const std::string& st : streams) out.push_back("stream:" + st);
  const auto topo = build_topology(s.cluster);
  std::set<int> links;
  for (LinkId l = 0; l < topo->num_links(); ++l) links.insert(static_cast<int>(topo->link(l).kind));
  for (int k : links) out.push_back("net:" + std::string(to_string(static_cast<LinkKind>(k))));
  return out;
}

WhatIfResult what_if(const Scenario& s, const WhatIfOptions& options) {
  if (!(options.factor > 0) || options.factor > 1e6) {
    throw UsageError("--factor: expected a speed-up in (0, 1e6], got " + factor_text(options.factor));
  }
  std::vector<std::pair<std::string, double>> levers = options.speedups;
  if (levers.empty()) {
    for (std::string& l : levers_of(s)) levers.emplace_back(std::move(l), options.factor);
  }
  // Every lever's scenario loads (a bad name or factor fails here, once).
  std::vector<Scenario> scenarios;
  scenarios.reserve(levers.size() + 1);
  for (const auto& lever : levers) scenarios.push_back(sped_up(s, {lever}));
  if (!options.speedups.empty()) scenarios.push_back(sped_up(s, levers));

  WhatIfResult r;
  r.scenario = s.file;
  r.config_hash = s.config_hash;
  SimulateOptions base;
  base.timing = false;
  const StepRun run = simulate_step(s, base);
  r.base_step_time_s = run.report.step_time_s;
  r.base_path = run.report.critical_path;

  std::vector<double> times(scenarios.size());
  parallel_for(scenarios.size(), options.threads, [&](size_t i) { times[i] = step_time(scenarios[i]); });
  for (size_t i = 0; i < levers.size(); ++i) {
    r.levers.push_back({levers[i].first, levers[i].second, times[i], r.base_step_time_s - times[i],
                        path_share(r.base_path, levers[i].first)});
  }
  std::stable_sort(r.levers.begin(), r.levers.end(), [](const WhatIfLever& a, const WhatIfLever& b) {
    return a.gain_s != b.gain_s ? a.gain_s > b.gain_s : a.lever < b.lever;
  });
  if (!options.speedups.empty()) {
    r.together = WhatIfLever{"together", 0, times.back(), r.base_step_time_s - times.back(), std::nullopt};
  }
  return r;
}

std::string whatif_text(const WhatIfResult& r) {
  std::string out;
  detail::appendf(out, "what-if  %s  (base step %.4f s)\n", r.scenario.c_str(), r.base_step_time_s);
  detail::appendf(out, "  %-28s %8s %12s %10s %9s\n", "lever", "factor", "step time", "change", "on path");
  auto row = [&](const WhatIfLever& l) {
    const std::string factor = l.factor > 0 ? factor_text(l.factor) + "x" : "";
    char share[16] = "-";
    if (l.path_share) std::snprintf(share, sizeof share, "%.1f%%", *l.path_share * 100);
    detail::appendf(out, "  %-28s %8s %10.4f s %+9.1f%% %9s\n", l.lever.c_str(), factor.c_str(), l.step_time_s,
                    r.base_step_time_s > 0 ? -100 * l.gain_s / r.base_step_time_s : 0.0, share);
  };
  for (const WhatIfLever& l : r.levers) row(l);
  if (r.together) row(*r.together);
  out +=
      "  step time: re-simulated with the lever alone k times faster (\"together\": all at once); change: of the "
      "step time;\n  on path: the base step's critical-path time on the lever's ops\n";
  return out;
}

std::string whatif_json(const WhatIfResult& r) {
  using Json = nlohmann::ordered_json;
  auto lever = [](const WhatIfLever& l) {
    Json j;
    j["lever"] = l.lever;
    j["factor"] = l.factor > 0 ? Json(l.factor) : Json(nullptr);
    j["step_time_s"] = l.step_time_s;
    j["gain_s"] = l.gain_s;
    j["path_share"] = l.path_share ? Json(*l.path_share) : Json(nullptr);
    return j;
  };
  Json out;
  out["scenario"] = r.scenario;
  out["config_hash"] = r.config_hash;
  out["base_step_time_s"] = r.base_step_time_s;
  Json path = Json::object();
  for (const auto& [category, t] : r.base_path.by_category_s) path[category] = t;
  out["base_critical_path_s"] = r.base_path.present ? path : Json(nullptr);
  out["levers"] = Json::array();
  for (const WhatIfLever& l : r.levers) out["levers"].push_back(lever(l));
  out["together"] = r.together ? lever(*r.together) : Json(nullptr);
  return out.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace shardsim
