// The simulation-free lower bound on a step (sim/step_bound.h): never above
// the simulated step, on every plan of three small plan spaces (the oracle
// is the simulation), and equal to it where nothing can be slowed down.
#include "shardsim/sim/step_bound.h"

#include <gtest/gtest.h>

#include <string>

#include "shardsim/app/step.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/plan_space.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

double bound_s(const Scenario& s) {
  const ProgramSet programs = lower_training_step(s);
  const auto topo = build_topology(s.cluster);
  return step_time_lower_bound(programs, build_mesh(s.plan), *topo, s.cluster.chip, step_engine_options(s, {}, false))
      .seconds();
}

double simulated_s(const Scenario& s) {
  return run_training_step(s, {}).report.step_time_s;
}

// Every candidate of a plan space: bound <= simulated step. Returns the
// smallest ratio seen, to show the bound is not trivially small.
double check_space(const std::string& json) {
  const Scenario base = testing::scenario(json);
  PlanSpaceCounts counts;
  double tightest = 0;
  for (const PlanCandidate& c : enumerate_plans(base, {base.cluster.devices}, counts)) {
    Scenario s = base;
    s.plan = c.plan;
    const double b = bound_s(s), t = simulated_s(s);
    EXPECT_LE(b, t) << describe_plan(c.plan);
    tightest = std::max(tightest, b / t);
  }
  return tightest;
}

// 16 GPUs in two nodes (tp inside, dp across NICs); 32 GPUs in four nodes
// on a 2:1 oversubscribed rail tree with context parallelism across nodes
// and userbuffers' ring exchange; pipelines of 1F1B and interleaving.
TEST(StepBound, NeverAboveTheSimulatedStep) {
  const double two_nodes = check_space(R"({"model": {"name": "small", "layers": 4, "hidden": 2048,
    "ffn_hidden": 8192, "heads": 16, "kv_heads": 8, "vocab": 32000}, "cluster": {"chip": "h100-sxm", "devices": 16,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
    "plan": {"dp": 16, "zero": 0, "global_batch": 16, "seq_len": 2048}})");
  const double oversubscribed = check_space(R"({"model": {"name": "small", "layers": 4, "hidden": 2048,
    "ffn_hidden": 8192, "heads": 16, "kv_heads": 8, "vocab": 32000}, "cluster": {"chip": "h100-sxm", "devices": 32,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8, "nics_per_leaf": 2, "oversubscription": 2}},
    "plan": {"dp": 32, "zero": 1, "global_batch": 32, "seq_len": 4096, "tp_comm_overlap": true}})");
  // The bound is a real one: on some plan it is within 5% of the step.
  EXPECT_GT(two_nodes, 0.95);
  EXPECT_GT(oversubscribed, 0.95);
}

// One device: nothing to wait for, so the longest path is the step.
TEST(StepBound, EqualsTheStepOfOneDevice) {
  const Scenario s = testing::scenario(R"({"model": {"name": "tiny", "layers": 4, "hidden": 1024,
    "ffn_hidden": 4096, "heads": 16, "kv_heads": 4, "vocab": 32000}, "cluster": {"chip": "h100-sxm", "devices": 1,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 1}}, "plan": {"global_batch": 4, "seq_len": 2048}})");
  const double t = simulated_s(s);
  EXPECT_LE(bound_s(s), t);
  EXPECT_NEAR(bound_s(s), t, 1e-8 * t);
}

}  // namespace
}  // namespace shardsim
