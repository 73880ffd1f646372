// The Chrome trace is valid JSON in the Trace Event Format: a process per
// recorded device, a thread per stream, complete events with op data, flow
// arrows whose start and finish pair up, and the critical path's process.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "shardsim/app/step.h"
#include "shardsim/viz/chrome_trace.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

TEST(ChromeTrace, HasProcessesThreadsSpansAndPairedFlows) {
  const Scenario s = testing::scenario(R"({"model": {"name": "tiny", "layers": 2, "hidden": 1024,
      "ffn_hidden": 4096, "heads": 16, "vocab": 32000}, "cluster": "dgx-h100-64",
      "plan": {"dp": 8, "tp": 8, "zero": 3, "global_batch": 8, "seq_len": 1024}})");
  const StepRun run = run_training_step(s, {0, 1, 2, 3, 4, 5, 6, 7, 8}, false, {}, "native", CriticalPathMode::kOn);
  const auto j = nlohmann::json::parse(chrome_trace_json(run.programs, run.timeline));
  ASSERT_TRUE(j.contains("traceEvents"));
  std::map<std::string, int> phases;
  std::map<uint64_t, int> flow_ids;
  std::set<int> pids;
  double last_end = 0;
  // The critical path's process: named, listed first, pid one past the
  // devices; one slice per path op, tiling the step.
  int path_pid = -1, path_slices = 0, marked = 0;
  double path_end = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "critical path") path_pid = e["pid"];
  }
  ASSERT_GE(path_pid, 9);
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (e["pid"] == path_pid) {
      if (ph == "X") {
        EXPECT_NEAR(e["ts"].get<double>(), path_end, 1e-6);
        path_end = e["ts"].get<double>() + e["dur"].get<double>();
        EXPECT_EQ(e["cat"].get<std::string>().rfind("critical_path,", 0), 0u);
        ++path_slices;
      }
      continue;
    }
    ++phases[ph];
    if (ph == "X" && e["args"].contains("critical_path")) ++marked;
    if (ph == "X") {
      pids.insert(e["pid"].get<int>());
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_TRUE(e["args"].contains("flops"));
      EXPECT_TRUE(e["args"].contains("bytes"));
      last_end = std::max(last_end, e["ts"].get<double>() + e["dur"].get<double>());
    }
    if (ph == "s") ++flow_ids[e["id"].get<uint64_t>()];
    if (ph == "f") flow_ids[e["id"].get<uint64_t>()] += 10;
  }
  EXPECT_EQ(pids.size(), 9u);
  EXPECT_EQ(phases["M"], 9 * (1 + static_cast<int>(run.programs.stages[0].num_streams())));
  EXPECT_EQ(static_cast<size_t>(phases["X"]), 9 * run.programs.stages[0].size());
  EXPECT_GT(phases["s"], 0);
  for (const auto& [id, n] : flow_ids) EXPECT_EQ(n, 11) << "flow " << id << " is not a start/finish pair";
  // The last span ends at the step time (microseconds), as does the path.
  EXPECT_NEAR(last_end, run.report.step_time_s * 1e6, 1e-3);
  EXPECT_NEAR(path_end, run.report.step_time_s * 1e6, 1e-3);
  EXPECT_EQ(path_slices, run.report.critical_path.ops);
  EXPECT_GT(marked, 0);
}

}  // namespace
}  // namespace shardsim
