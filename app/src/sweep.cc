#include "shardsim/app/sweep.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "shardsim/app/step.h"
#include "shardsim/core/error.h"
#include "shardsim/core/parallel.h"

namespace shardsim {
namespace {

/// The plan.dp override that keeps tp·pp·cp·dp = devices at `point`, if the
/// point changes the other factors and leaves dp alone.
std::optional<Override> fitted_dp(const nlohmann::json& root, const std::string& text, const std::string& name,
                                  const std::vector<Override>& all, const std::vector<Override>& point) {
  bool reshapes = false;
  for (const Override& o : point) {
    if (o.path == "plan.dp") return std::nullopt;
    reshapes |= o.path == "plan.tp" || o.path == "plan.pp" || o.path == "plan.cp" || o.path == "cluster.devices";
  }
  if (!reshapes) return std::nullopt;
  int64_t factor[3] = {1, 1, 1};
  const char* keys[3] = {"tp", "pp", "cp"};
  for (int k = 0; k < 3; ++k) {
    const nlohmann::json* v = nullptr;
    if (root.contains("plan") && root["plan"].is_object() && root["plan"].contains(keys[k])) v = &root["plan"][keys[k]];
    nlohmann::json parsed;
    for (const Override& o : all) {
      if (o.path == std::string("plan.") + keys[k]) {
        parsed = nlohmann::json::parse(o.value, nullptr, false);
        v = &parsed;
      }
    }
    if (v != nullptr && v->is_number_integer()) factor[k] = v->get<int64_t>();
    if (factor[k] < 1) return std::nullopt;  // the loader says what is wrong
  }
  const int64_t devices = parse_cluster_text(text, name, all).devices;
  const int64_t per_replica = factor[0] * factor[1] * factor[2];
  if (devices % per_replica != 0) return std::nullopt;
  return Override{"plan.dp", std::to_string(devices / per_replica)};
}

}  // namespace

std::vector<SweepRow> sweep_steps(const std::string& scenario_text, const std::string& name,
                                  const std::vector<Override>& base, const std::vector<std::vector<Override>>& points,
                                  int threads) {
  parse_scenario(scenario_text, name, base);  // a bad scenario fails once, not per point
  const nlohmann::json root = nlohmann::json::parse(scenario_text);
  std::vector<SweepRow> rows(points.size());
  // A point's own error (a bad override, a plan that does not divide the
  // cluster) goes in its row; anything else is not the point's fault and
  // stops the sweep (parallel_for rethrows it).
  parallel_for(points.size(), threads, [&](size_t i) {
    SweepRow& row = rows[i];
    row.point = points[i];
    try {
      std::vector<Override> all = base;
      all.insert(all.end(), points[i].begin(), points[i].end());
      if (auto dp = fitted_dp(root, scenario_text, name, all, points[i])) all.push_back(std::move(*dp));
      const Scenario s = parse_scenario(scenario_text, name, all);
      SimulateOptions opt;
      opt.timing = false;  // rows are deterministic
      opt.critical_path = CriticalPathMode::kOff;
      row.report = simulate_step(s, opt).report;
      row.ok = true;
    } catch (const InputError& e) {
      row.error = e.what();
    } catch (const UsageError& e) {
      row.error = e.what();
    }
  });
  return rows;
}

std::string sweep_json(const std::vector<SweepRow>& rows) {
  using Json = nlohmann::ordered_json;
  Json out = Json::array();
  for (const SweepRow& r : rows) {
    Json j;
    for (const Override& o : r.point) {
      // An override's value is JSON text, or a bare word taken as a string.
      const Json v = Json::parse(o.value, nullptr, false);
      j[o.path] = v.is_discarded() ? Json(o.value) : v;
    }
    const StepReport& s = r.report;
    if (r.ok) {
      j["step_time_s"] = s.step_time_s;
      j["mfu"] = s.mfu;
      j["hfu"] = s.hfu;
      j["tokens_per_s"] = s.tokens_per_s;
      j["model_tflops_per_device"] = s.model_tflops_per_device;
      j["compute_s"] = s.breakdown.compute_s;
      j["exposed_comm_s"] = s.breakdown.exposed_comm_s;
      j["bubble_s"] = s.breakdown.bubble_s;
      j["other_s"] = s.breakdown.other_s;
      j["peak_bytes_per_device"] = s.memory.peak_bytes_per_device;
      j["fits"] = s.memory.fits;
      j["binding"] = s.binding;
      j["error"] = nullptr;
    } else {
      for (const char* k : {"step_time_s", "mfu", "hfu", "tokens_per_s", "model_tflops_per_device", "compute_s",
                            "exposed_comm_s", "bubble_s", "other_s", "peak_bytes_per_device", "fits", "binding"}) {
        j[k] = nullptr;
      }
      j["error"] = r.error;
    }
    out.push_back(std::move(j));
  }
  return out.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace shardsim
