// The search's lower bounds on a step, each never above the simulated step
// (the oracle) on every plan of four small plan spaces: tier 1 from FLOPs
// through the pipeline (step_time_lower_bound_s), tier 2 from each layer's
// own work and communication (LayerBound), tier 3 the lowered programs'
// longest path (sim/step_bound.h), which equals the step where nothing can
// be slowed down.
#include "shardsim/sim/step_bound.h"

#include <gtest/gtest.h>

#include <string>

#include "shardsim/app/layer_bound.h"
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

struct Tightest {
  double tier1 = 0, tier2 = 0, tier3 = 0;  ///< the largest bound / step seen
};

// Every candidate of a plan space: each tier's bound <= simulated step.
Tightest check_space(const std::string& json) {
  const Scenario base = testing::scenario(json);
  PlanSpaceCounts counts;
  LayerBound layers(base);
  Tightest tightest;
  const std::vector<PlanCandidate> cands = enumerate_plans(base, {base.cluster.devices}, counts);
  EXPECT_GT(cands.size(), 50u);
  // At most 250 of them, spread over the enumeration's order.
  const size_t stride = (cands.size() + 249) / 250;
  for (size_t i = 0; i < cands.size(); i += stride) {
    const PlanCandidate& c = cands[i];
    Scenario s = base;
    s.plan = c.plan;
    const double t = simulated_s(s);
    const double b2 = layers(c.plan, c.devices).value_or(0), b3 = bound_s(s);
    EXPECT_LE(c.lower_bound_s, t) << "tier 1: " << describe_plan(c.plan);
    EXPECT_LE(b2, t) << "tier 2: " << describe_plan(c.plan);
    EXPECT_LE(b3, t) << "tier 3: " << describe_plan(c.plan);
    tightest.tier1 = std::max(tightest.tier1, c.lower_bound_s / t);
    tightest.tier2 = std::max(tightest.tier2, b2 / t);
    tightest.tier3 = std::max(tightest.tier3, b3 / t);
  }
  return tightest;
}

// 16 GPUs in two nodes (tp inside, dp across NICs); 32 GPUs in four nodes
// on a 2:1 oversubscribed rail tree with context parallelism across nodes
// and userbuffers' ring exchange; 32 GPUs of 4 a node with 6 layers, so that
// pipelines of 2 and 3 stages split them unevenly (the head makes the last
// stage heavier still), interleaving, GPipe and every recomputation; and a
// mixture of experts on two nodes with its first layer dense.
TEST(StepBound, NeverAboveTheSimulatedStep) {
  std::vector<Tightest> spaces;
  spaces.push_back(check_space(R"({"model": {"name": "small", "layers": 4, "hidden": 2048,
    "ffn_hidden": 8192, "heads": 16, "kv_heads": 8, "vocab": 32000}, "cluster": {"chip": "h100-sxm", "devices": 16,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
    "plan": {"dp": 16, "zero": 0, "global_batch": 16, "seq_len": 2048}})"));
  spaces.push_back(check_space(R"({"model": {"name": "small", "layers": 4, "hidden": 2048,
    "ffn_hidden": 8192, "heads": 16, "kv_heads": 8, "vocab": 32000}, "cluster": {"chip": "h100-sxm", "devices": 32,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8, "nics_per_leaf": 2, "oversubscription": 2}},
    "plan": {"dp": 32, "zero": 1, "global_batch": 32, "seq_len": 4096, "tp_comm_overlap": true}})"));
  spaces.push_back(check_space(R"({"model": {"name": "deep", "layers": 6, "hidden": 2048,
    "ffn_hidden": 8192, "heads": 16, "kv_heads": 8, "vocab": 128000}, "cluster": {"chip": "h100-sxm", "devices": 32,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 4}},
    "plan": {"dp": 32, "zero": 1, "global_batch": 64, "seq_len": 2048}})"));
  spaces.push_back(check_space(R"({"model": {"name": "moe", "layers": 4, "hidden": 2048, "ffn_hidden": 8192,
    "heads": 16, "kv_heads": 8, "vocab": 32000, "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 4096,
    "first_dense_layers": 1}}, "cluster": {"chip": "h100-sxm", "devices": 16,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
    "plan": {"dp": 16, "zero": 1, "global_batch": 32, "seq_len": 2048}})"));
  // The bounds are real ones: each tier comes within 20% of the step on
  // some plan of every space, and tier 3 within 5%.
  for (const Tightest& t : spaces) {
    std::printf("tightest bound / step: tier 1 %.3f, tier 2 %.3f, tier 3 %.3f\n", t.tier1, t.tier2, t.tier3);
    EXPECT_GT(t.tier1, 0.45);
    EXPECT_GT(t.tier2, 0.8);
    EXPECT_GT(t.tier3, 0.95);
  }
}

// And on random scenarios (tori, hybrid FSDP, every kind of context
// parallelism and pipeline schedule: testing::random_scenarios).
TEST(StepBound, NeverAboveTheStepOfRandomScenarios) {
  for (const testing::RandomScenario& c : testing::random_scenarios(17, 200)) {
    SCOPED_TRACE(c.json);
    const Scenario s = testing::scenario(c.json);
    const double t = simulated_s(s);
    EXPECT_LE(step_time_lower_bound_s(s), t) << "tier 1";
    EXPECT_LE(LayerBound(s)(s.plan, s.cluster.devices).value_or(0), t) << "tier 2";
    EXPECT_LE(bound_s(s), t) << "tier 3";
  }
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
