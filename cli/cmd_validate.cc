// `shardsim validate DIR`: simulate every scenario of DIR that carries
// published figures and print predicted against published.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "step_runner.h"
#include "validation.h"

namespace shardsim::cli {

int cmd_validate(const std::vector<std::string>& args) {
  std::string dir;
  bool json = false;
  for (const std::string& a : args) {
    if (a == "--json")
      json = true;
    else if (!a.empty() && a[0] == '-')
      throw UsageError("validate: unknown option " + a);
    else if (dir.empty())
      dir = a;
    else
      throw UsageError("validate: one directory expected, got a second: " + a);
  }
  if (dir.empty()) throw UsageError("validate: expected a directory of scenarios");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw UsageError("validate: " + dir + " is not a directory");
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<ValidationRow> rows;
  // A progress line on a terminal only; silent on pipes and in CI.
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  size_t done = 0;
  for (const auto& f : files) {
    if (progress) {
      std::fprintf(stderr, "\r[%zu/%zu] %-60s", ++done, files.size(),
                   std::filesystem::path(f).filename().string().c_str());
      std::fflush(stderr);
    }
    const Scenario s = load_scenario(f);
    if (s.published.metrics.empty()) continue;
    const StepRun run = run_training_step(s, {}, s.cluster.devices > 2048 && s.plan.dp > 1);
    for (auto& row : validate_scenario(s, run.report)) rows.push_back(row);
  }
  if (progress) std::fprintf(stderr, "\r%80s\r", "");
  double perf_sum = 0, perf_max = 0, mem_sum = 0, mem_max = 0;
  int perf_n = 0, mem_n = 0;
  for (const auto& r : rows) {
    const double e = std::fabs(r.error);
    if (r.performance) {
      perf_sum += e;
      perf_max = std::max(perf_max, e);
      ++perf_n;
    } else {
      mem_sum += e;
      mem_max = std::max(mem_max, e);
      ++mem_n;
    }
  }
  const double perf_mean = perf_n ? perf_sum / perf_n : 0, mem_mean = mem_n ? mem_sum / mem_n : 0;
  if (json) {
    nlohmann::ordered_json j;
    j["rows"] = nlohmann::ordered_json::array();
    for (const auto& r : rows) {
      j["rows"].push_back({{"scenario", std::filesystem::path(r.scenario).filename().string()},
                           {"metric", r.metric},
                           {"published", r.published},
                           {"predicted", r.predicted},
                           {"error", r.error}});
    }
    j["performance"] = {{"rows", perf_n}, {"mean_abs_error", perf_mean}, {"max_abs_error", perf_max}};
    j["memory"] = {{"rows", mem_n}, {"mean_abs_error", mem_mean}, {"max_abs_error", mem_max}};
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("%-36s %-26s %12s %12s %8s\n", "scenario", "metric", "published", "predicted", "error");
  for (const auto& r : rows) {
    std::printf("%-36s %-26s %12.3f %12.3f %+7.1f%%\n", std::filesystem::path(r.scenario).stem().string().c_str(),
                r.metric.c_str(), r.published, r.predicted, 100 * r.error);
  }
  std::printf("\ntime and throughput: %d rows, mean |error| %.1f%%, max %.1f%%\n", perf_n, 100 * perf_mean,
              100 * perf_max);
  std::printf("memory:              %d rows, mean |error| %.1f%%, max %.1f%%\n", mem_n, 100 * mem_mean, 100 * mem_max);
  return 0;
}

}  // namespace shardsim::cli
