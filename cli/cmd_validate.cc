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
  // Error statistics over the time and throughput rows, over those held
  // out from fitting any chip default, and over the memory rows.
  struct Stats {
    int n = 0;
    double sum = 0, max = 0;
    void add(double e) {
      ++n;
      sum += std::fabs(e);
      max = std::max(max, std::fabs(e));
    }
    double mean() const { return n ? sum / n : 0; }
  };
  Stats perf, held_out, mem;
  for (const auto& r : rows) {
    if (!r.performance) {
      mem.add(r.error);
      continue;
    }
    perf.add(r.error);
    if (!r.fitted) held_out.add(r.error);
  }
  auto stats_json = [](const Stats& st) {
    return nlohmann::ordered_json{{"rows", st.n}, {"mean_abs_error", st.mean()}, {"max_abs_error", st.max}};
  };
  if (json) {
    nlohmann::ordered_json j;
    j["rows"] = nlohmann::ordered_json::array();
    for (const auto& r : rows) {
      j["rows"].push_back({{"scenario", std::filesystem::path(r.scenario).filename().string()},
                           {"metric", r.metric},
                           {"published", r.published},
                           {"predicted", r.predicted},
                           {"error", r.error},
                           {"fitted", r.fitted}});
    }
    j["performance"] = stats_json(perf);
    j["performance_held_out"] = stats_json(held_out);
    j["memory"] = stats_json(mem);
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("%-36s %-26s %12s %12s %8s\n", "scenario", "metric", "published", "predicted", "error");
  for (const auto& r : rows) {
    std::printf("%-36s %-26s %12.3f %12.3f %+7.1f%%%s\n", std::filesystem::path(r.scenario).stem().string().c_str(),
                r.metric.c_str(), r.published, r.predicted, 100 * r.error, r.fitted ? "  (fitted)" : "");
  }
  std::printf("\ntime and throughput: %d rows, mean |error| %.1f%%, max %.1f%%\n", perf.n, 100 * perf.mean(),
              100 * perf.max);
  if (held_out.n != perf.n) {
    std::printf("  held out:          %d rows, mean |error| %.1f%%, max %.1f%% (%d rows fitted a chip default)\n",
                held_out.n, 100 * held_out.mean(), 100 * held_out.max, perf.n - held_out.n);
  }
  std::printf("memory:              %d rows, mean |error| %.1f%%, max %.1f%%\n", mem.n, 100 * mem.mean(),
              100 * mem.max);
  return 0;
}

}  // namespace shardsim::cli
