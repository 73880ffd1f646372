#include "shardsim/app/validation.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "shardsim/app/serve.h"
#include "shardsim/app/step.h"
#include "shardsim/core/error.h"
#include "shardsim/core/parallel.h"
#include "shardsim/core/read_file.h"
#include "shardsim/workloads/framework.h"

namespace shardsim {
namespace {

double component(const StepReport& r, const std::string& name) {
  for (const auto& c : r.memory.components) {
    if (c.name == name) return static_cast<double>(c.bytes);
  }
  return 0;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// Whether a JSON file is a scenario with published figures (other JSON
/// beside them, such as the split and the manifest, is skipped).
bool has_published(const std::string& path) {
  const auto j = nlohmann::json::parse(read_file_text(path), nullptr, false);
  return j.is_object() && j.contains("published") && j.contains("plan");
}

std::vector<SkippedRow> read_manifest(const std::filesystem::path& file) {
  std::vector<SkippedRow> out;
  const auto j = nlohmann::json::parse(read_file_text(file.string()), nullptr, false);
  if (!j.is_object() || !j.contains("rows") || !j["rows"].is_array()) {
    throw InputError(file.string(), "/rows", "expected an object with a \"rows\" array");
  }
  for (size_t i = 0; i < j["rows"].size(); ++i) {
    const auto& r = j["rows"][i];
    if (!r.is_object() || !r.contains("id")) {
      throw InputError(file.string(), "/rows/" + std::to_string(i), "expected an object with an \"id\"");
    }
    if (!r.contains("skipped")) continue;
    auto str = [&](const char* k) { return r.contains(k) && r[k].is_string() ? r[k].get<std::string>() : ""; };
    out.push_back({str("id"), str("split"), str("framework"), str("chip"), str("skipped")});
  }
  return out;
}

void summarise(ValidationReport& rep) {
  // A scenario whose row measured a time or a peak memory ran: it must fit.
  // (Analytic figures such as Korthikanti et al.'s activation memory without
  // recomputation describe runs that did not.)
  std::map<std::string, std::pair<std::string, bool>> ran_and_overflows;  // scenario: split, overflows
  for (const ValidationRow& r : rep.rows) {
    if (r.performance || r.metric == "peak_memory_GiB") ran_and_overflows[r.scenario] = {r.split, !r.fits};
  }
  for (const auto& [scenario, run] : ran_and_overflows) {
    rep.out_of_memory += run.second;
    rep.out_of_memory_by_split[run.first] += run.second;
  }
  for (const ValidationRow& r : rep.rows) {
    if (!r.performance) {
      auto add = [&](ValidationStats& st) { st.add(r.error, r.error); };
      add(rep.memory);
      add(rep.memory_groups[r.split]);
      if (!r.framework.empty()) add(rep.memory_groups[r.split + " / framework " + r.framework]);
      if (!r.chip.empty()) add(rep.memory_groups[r.split + " / chip " + r.chip]);
      if (!r.source.empty()) add(rep.memory_groups[r.split + " / source " + r.source]);
      continue;
    }
    const double speed_bias = row_bias(r);
    auto add = [&](const std::string& key) { rep.performance[key].add(r.error, speed_bias); };
    // Serving rows are summarised apart from training steps.
    const std::string split = r.serving ? "serving " + r.split : r.split;
    add(r.serving ? "serving" : "all");
    add(split);
    if (r.fitted) add("fitted");
    if (!r.framework.empty()) add(split + " / framework " + r.framework);
    if (!r.chip.empty()) add(split + " / chip " + r.chip);
    if (!r.source.empty()) add(split + " / source " + r.source);
    if (!r.precision.empty()) add(split + " / precision " + r.precision);
    if (r.serving) add(split + " / metric " + r.metric);
  }
}

/// A row of `s`'s published figures before its prediction: where it comes
/// from and on which side of the protocol it sits.
ValidationRow published_row(const Scenario& s, const std::string& metric, double value, std::string framework) {
  ValidationRow row;
  row.scenario = s.file;
  row.row = s.published.row;
  row.split = s.published.split;
  row.source = s.published.source_id;
  row.framework = std::move(framework);
  row.chip = s.cluster.chip.name;
  row.metric = metric;
  row.published = value;
  row.fitted = s.published.fitted;
  row.calibrated = s.cluster.calibration != nullptr;
  return row;
}

}  // namespace

double row_bias(const ValidationRow& r) {
  if (!r.performance) return r.error;
  // Predicted speed over measured speed, less 1: a time metric (seconds,
  // "_s") is the inverse of a speed, a rate ("_per_s", "_per_gpu", ...)
  // is one.
  auto ends_with = [&](std::string_view tail) {
    return r.metric.size() >= tail.size() && r.metric.compare(r.metric.size() - tail.size(), tail.size(), tail) == 0;
  };
  const bool time = ends_with("_s") && !ends_with("_per_s");
  return time ? (r.predicted > 0 ? r.published / r.predicted - 1 : 0) : r.error;
}

std::string precision_label(const Plan& p) {
  std::string label(to_string(p.matmul_dtype));
  if (p.matmul_dtype != DType::kBf16) label += " " + std::string(to_string(p.fp8_recipe));
  return label;
}

void ValidationStats::add(double error, double bias) {
  ++n;
  sum += std::fabs(error);
  max = std::max(max, std::fabs(error));
  bias_sum += bias;
  high += bias > 0;
}

std::vector<ValidationRow> validate_scenario(const Scenario& s, const StepReport& r) {
  std::vector<ValidationRow> rows;
  for (const auto& [metric, value] : s.published.metrics) {
    ValidationRow row = published_row(s, metric, value, std::string(to_string(s.plan.framework)));
    row.precision = precision_label(s.plan);
    row.fits = r.memory.fits;
    if (metric == "step_time_s") {
      row.predicted = r.step_time_s;
      row.performance = true;
    } else if (metric == "tokens_per_s_per_device") {
      row.predicted = r.tokens_per_s / static_cast<double>(s.cluster.devices);
      row.performance = true;
    } else if (metric == "megatron_tflops_per_gpu") {
      const double B = static_cast<double>(s.plan.global_batch);
      const double sq = static_cast<double>(s.plan.seq_len);
      const double l = static_cast<double>(s.model.layers);
      const double h = static_cast<double>(s.model.hidden);
      const double V = static_cast<double>(s.model.vocab);
      const double F = 96.0 * B * sq * l * h * h * (1.0 + sq / (6.0 * h) + V / (16.0 * l * h));
      row.predicted = F / (r.step_time_s * static_cast<double>(s.cluster.devices)) / 1e12;
      row.performance = true;
    } else if (metric == "activations_GiB") {
      row.predicted = component(r, "activations") / kGiB;
    } else if (metric == "weights_and_optimizer_GiB") {
      row.predicted = (component(r, "weights") + component(r, "gradients") + component(r, "optimizer_state")) / kGiB;
    } else if (metric == "peak_memory_GiB") {
      row.predicted = (static_cast<double>(r.memory.peak_bytes_per_device) - component(r, "framework_reserved")) / kGiB;
    } else {
      throw InputError(s.file, "/published/" + metric,
                       "unknown metric (expected step_time_s, tokens_per_s_per_device, megatron_tflops_per_gpu, "
                       "activations_GiB, weights_and_optimizer_GiB or peak_memory_GiB)");
    }
    row.error = (row.predicted - row.published) / row.published;
    rows.push_back(row);
  }
  return rows;
}

std::vector<ValidationRow> validate_serving(const Scenario& s, const ServeSummary& r) {
  std::vector<ValidationRow> rows;
  for (const auto& [metric, value] : s.published.metrics) {
    ValidationRow row = published_row(s, metric, value, s.serving.engine);
    row.performance = true;
    row.serving = true;
    const std::map<std::string, double> figures = {
        {"output_tokens_per_s_per_device", r.output_tokens_per_s_per_device},
        {"output_tokens_per_s", r.output_tokens_per_s},
        {"total_tokens_per_s", r.total_tokens_per_s},
        {"ttft_mean_s", r.ttft_s.mean},
        {"ttft_p50_s", r.ttft_s.p50},
        {"ttft_p99_s", r.ttft_s.p99},
        {"tpot_mean_s", r.tpot_s.mean},
        {"tpot_p50_s", r.tpot_s.p50},
        {"tpot_p99_s", r.tpot_s.p99},
        {"itl_mean_s", r.itl_s.mean},
        {"itl_p50_s", r.itl_s.p50},
        {"itl_p99_s", r.itl_s.p99},
        {"e2e_mean_s", r.e2e_s.mean},
        {"e2e_p50_s", r.e2e_s.p50},
    };
    const auto it = figures.find(metric);
    if (it == figures.end()) {
      throw InputError(s.file, "/published/" + metric,
                       "unknown serving metric (expected output_tokens_per_s_per_device, output_tokens_per_s, "
                       "total_tokens_per_s, ttft_{mean,p50,p99}_s, tpot_{mean,p50,p99}_s, itl_{mean,p50,p99}_s, "
                       "e2e_mean_s or e2e_p50_s)");
    }
    row.predicted = it->second;
    row.error = (row.predicted - row.published) / row.published;
    rows.push_back(row);
  }
  return rows;
}

ValidationReport validate_directory(const std::string& dir, int threads, bool check_only,
                                    const std::function<void(size_t, size_t)>& progress, const std::string& split) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  ValidationReport rep;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().extension() != ".json") continue;
    if (e.path().filename() == "manifest.json") {
      for (auto& s : read_manifest(e.path())) rep.skipped.push_back(std::move(s));
      continue;
    }
    if (has_published(e.path().string())) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::sort(rep.skipped.begin(), rep.skipped.end(),
            [](const SkippedRow& a, const SkippedRow& b) { return a.row < b.row; });
  // Load every scenario first: a bad one stops the run before any work.
  std::vector<Scenario> scenarios;
  scenarios.reserve(files.size());
  for (const auto& f : files) scenarios.push_back(load_scenario(f));
  if (check_only) return rep;
  if (!split.empty()) {
    std::vector<std::string> kept_files;
    std::vector<Scenario> kept;
    for (size_t i = 0; i < files.size(); ++i) {
      if (scenarios[i].published.split != split) continue;
      kept_files.push_back(files[i]);
      kept.push_back(std::move(scenarios[i]));
    }
    files = std::move(kept_files);
    scenarios = std::move(kept);
    std::erase_if(rep.skipped, [&](const SkippedRow& s) { return s.split != split; });
  }

  std::vector<std::vector<ValidationRow>> per_file(files.size());
  std::atomic<size_t> done{0};
  std::mutex progress_mutex;
  parallel_for(files.size(), threads, [&](size_t i) {
    const Scenario& s = scenarios[i];
    if (s.serving.present) {
      per_file[i] = validate_serving(s, run_serving(s));
    } else {
      // Data-parallel replicas are symmetric: simulating replica 0 moves
      // every member's data through the shared links (docs/model.md,
      // section 6).
      SimulateOptions opt;
      opt.replica_shortcut = ReplicaShortcut::kOn;
      opt.critical_path = CriticalPathMode::kOff;
      const StepRun run = simulate_step(s, opt);
      per_file[i] = validate_scenario(s, run.report);
    }
    for (auto& row : per_file[i]) row.scenario = fs::relative(files[i], dir).string();
    const size_t d = ++done;
    if (progress) {
      const std::lock_guard<std::mutex> lock(progress_mutex);
      progress(d, files.size());
    }
  });
  for (auto& rows : per_file) {
    for (auto& r : rows) rep.rows.push_back(std::move(r));
  }
  summarise(rep);
  return rep;
}

std::string validation_table(const ValidationReport& rep) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-44s %-9s %-24s %12s %12s %8s\n", "scenario", "split", "metric", "published",
                "predicted", "error");
  out += line;
  for (const auto& r : rep.rows) {
    std::string name = std::filesystem::path(r.scenario).replace_extension().string();
    std::snprintf(line, sizeof line, "%-44s %-9s %-24s %12.3f %12.3f %+7.1f%%%s%s\n", name.c_str(),
                  r.split == "held_out"      ? "held out"
                  : r.split == "development" ? "dev"
                                             : r.split.c_str(),
                  r.metric.c_str(), r.published, r.predicted, 100 * r.error, r.fitted ? "  (fitted)" : "",
                  r.fits ? "" : "  (out of memory)");
    out += line;
  }
  // Each group's |error|, then its direction: predicted speed over measured
  // (time and throughput) or predicted memory over published, and the share
  // of rows above.
  bool speed = true;
  auto stat = [&](const std::string& label, const ValidationStats& st) {
    std::snprintf(line, sizeof line, "  %-52s %4d rows, mean |error| %5.1f%%, max %5.1f%%, %s %+5.1f%% (%d%% %s)\n",
                  label.c_str(), st.n, 100 * st.mean(), 100 * st.max, speed ? "speed" : "memory", 100 * st.bias(),
                  st.n ? static_cast<int>(std::lround(100.0 * st.high / st.n)) : 0, speed ? "fast" : "over");
    out += line;
  };
  // The splits' groups first, then by framework, chip, source, precision.
  auto groups = [&](const std::map<std::string, ValidationStats>& by_key) {
    for (const std::string_view kind : {"", " / framework ", " / chip ", " / source ", " / precision "}) {
      for (const auto& [key, st] : by_key) {
        if (kind.empty() ? key.find(" / ") == std::string::npos : key.find(kind) != std::string::npos) stat(key, st);
      }
    }
  };
  out += "\ntime and throughput:\n";
  groups(rep.performance);
  out += "memory:\n";
  speed = false;
  stat("all", rep.memory);
  groups(rep.memory_groups);
  std::snprintf(line, sizeof line, "published runs judged out of memory: %d", rep.out_of_memory);
  out += line;
  std::string by_split;
  for (const auto& [split, n] : rep.out_of_memory_by_split) {
    if (n > 0) by_split += (by_split.empty() ? "" : ", ") + std::to_string(n) + " " + split;
  }
  out += by_split.empty() ? "\n" : " (" + by_split + ")\n";
  if (!rep.skipped.empty()) {
    std::map<std::string, int> by_split;
    for (const auto& s : rep.skipped) ++by_split[s.split];
    std::snprintf(line, sizeof line, "rows not expressible yet (manifest.json): %zu", rep.skipped.size());
    out += line;
    for (const auto& [split, n] : by_split) out += ", " + std::to_string(n) + " " + split;
    out += "\n";
  }
  return out;
}

std::string validation_json(const ValidationReport& rep) {
  nlohmann::ordered_json j;
  j["rows"] = nlohmann::ordered_json::array();
  for (const auto& r : rep.rows) {
    j["rows"].push_back({{"scenario", r.scenario},
                         {"row", r.row},
                         {"split", r.split},
                         {"source", r.source},
                         {"framework", r.framework},
                         {"chip", r.chip},
                         {"precision", r.precision},
                         {"metric", r.metric},
                         {"published", r.published},
                         {"predicted", r.predicted},
                         {"error", r.error},
                         {"fitted", r.fitted},
                         {"fits", r.fits}});
  }
  auto stats = [](const ValidationStats& st) {
    return nlohmann::ordered_json{{"rows", st.n},
                                  {"mean_abs_error", st.mean()},
                                  {"max_abs_error", st.max},
                                  {"mean_bias", st.bias()},
                                  {"rows_high", st.high}};
  };
  j["performance"] = nlohmann::ordered_json::object();
  for (const auto& [key, st] : rep.performance) j["performance"][key] = stats(st);
  j["memory"] = stats(rep.memory);
  j["memory_groups"] = nlohmann::ordered_json::object();
  for (const auto& [key, st] : rep.memory_groups) j["memory_groups"][key] = stats(st);
  j["out_of_memory"] = rep.out_of_memory;
  j["out_of_memory_by_split"] = nlohmann::ordered_json::object();
  for (const auto& [split, n] : rep.out_of_memory_by_split) j["out_of_memory_by_split"][split] = n;
  j["skipped"] = nlohmann::ordered_json::array();
  for (const auto& s : rep.skipped) {
    j["skipped"].push_back(
        {{"row", s.row}, {"split", s.split}, {"framework", s.framework}, {"chip", s.chip}, {"reason", s.reason}});
  }
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace shardsim
