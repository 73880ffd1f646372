// The symmetry reduction against the full simulation (the oracle): where
// mesh translations map the fabric, the routes and the collective plans
// onto themselves, simulating one device per orbit (EngineOptions::
// symmetry) gives the full step for dense, pipelined, context-parallel,
// FSDP, hybrid-sharded and expert-parallel plans, on oversubscribed and
// full-bisection fat trees and on tori, with and without the replica
// shortcut; where the fabric or the plan breaks it, the group shrinks or
// every device runs. The replica shortcut is exact, and on by default at
// any size, where a replica is one NVSwitch node.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "shardsim/app/step.h"
#include "shardsim/core/error.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

/// 64 GPUs in 8-GPU nodes on a rail-optimised two-tier fat tree with two
/// nodes per leaf and 2:1 oversubscribed leaf uplinks, so that rails carry
/// contended traffic. `fabric_extra` adds fabric keys, `plan` is the plan.
std::string rail_scenario(const std::string& model, const std::string& plan, const std::string& fabric_extra = "") {
  return R"({"model": )" + model + R"(, "cluster": {"chip": "h100-sxm", "devices": 64,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8, "nics_per_leaf": 2, "oversubscription": 2)" +
         fabric_extra + R"(}}, "plan": )" + plan + "}";
}

const char* kDense = R"({"name": "dense", "layers": 8, "hidden": 4096, "ffn_hidden": 14336, "heads": 32,
    "kv_heads": 8, "vocab": 32000})";
const char* kMoe = R"({"name": "moe", "layers": 4, "hidden": 2048, "ffn_hidden": 8192, "heads": 16, "kv_heads": 8,
    "vocab": 32000, "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 4096}})";

StepRun run(const std::string& json, bool symmetry, ReplicaShortcut replica = ReplicaShortcut::kOff) {
  SimulateOptions opt;
  opt.replica_shortcut = replica;
  opt.timing = false;
  return simulate_step(testing::scenario(json, {{"simulator.symmetry", symmetry ? "true" : "false"}}), opt);
}

/// The symmetric run gives the full run's step, breakdown and memory.
void expect_same_step(const StepRun& fast, const StepRun& full) {
  EXPECT_NEAR(fast.report.step_time_s, full.report.step_time_s, 1e-9 * full.report.step_time_s);
  EXPECT_NEAR(fast.report.breakdown.exposed_comm_s, full.report.breakdown.exposed_comm_s,
              1e-9 * full.report.step_time_s);
  EXPECT_NEAR(fast.report.breakdown.compute_s, full.report.breakdown.compute_s, 1e-9 * full.report.step_time_s);
  EXPECT_EQ(fast.report.memory.peak_bytes_per_device, full.report.memory.peak_bytes_per_device);
}

TEST(Symmetry, CanonicalDevicesAloneGiveTheFullStep) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {kDense, R"({"dp": 8, "tp": 8, "zero": 1, "sequence_parallel": true, "global_batch": 16, "seq_len": 2048})"},
      {kDense, R"({"dp": 4, "tp": 8, "pp": 2, "schedule": "interleaved", "virtual_stages": 2, "zero": 1,
                  "global_batch": 16, "seq_len": 2048})"},
      {kDense, R"({"dp": 4, "tp": 8, "cp": 2, "zero": 3, "global_batch": 8, "seq_len": 4096})"},
      // Experts split over tp: whole experts on every tp rank (expert_tp 1)
      // reduce their gradients over tp and dp together, a ring that a
      // shift along tp does not map onto itself (those plans keep the other
      // translations).
      {kMoe, R"({"dp": 8, "tp": 8, "ep": 4, "expert_tp": 8, "zero": 1, "sequence_parallel": true,
                "global_batch": 16, "seq_len": 2048})"},
      // Tensor-parallel groups of part of a node: the node's other groups
      // (data-, context-, pipeline-parallel and expert traffic between
      // them) share its NVLinks with the tensor-parallel collectives, so
      // rank 0's flows inside a node are laid for every rank's image.
      {kDense, R"({"dp": 16, "tp": 4, "zero": 1, "sequence_parallel": true, "global_batch": 16,
                  "seq_len": 2048})"},
      {kDense, R"({"dp": 8, "tp": 2, "cp": 2, "pp": 2, "zero": 1, "global_batch": 16, "seq_len": 4096})"},
      {kDense, R"({"dp": 8, "tp": 2, "cp": 4, "zero": 3, "global_batch": 8, "seq_len": 8192})"},
      {kMoe, R"({"dp": 16, "tp": 4, "ep": 8, "expert_tp": 4, "zero": 1, "sequence_parallel": true,
                "global_batch": 16, "seq_len": 2048})"},
      // Tensor-parallel communication overlap: userbuffers' ring exchange
      // sends between ranks; rank 0's send stands for every rank's, and the
      // one that reaches rank 0 (rank tp-1's) is its image.
      {kDense, R"({"dp": 8, "tp": 8, "zero": 1, "sequence_parallel": true, "tp_comm_overlap": true,
                  "global_batch": 16, "seq_len": 2048})"},
      {kMoe, R"({"dp": 8, "tp": 4, "cp": 2, "ep": 8, "expert_tp": 4, "zero": 1, "sequence_parallel": true,
                "tp_comm_overlap": true, "global_batch": 16, "seq_len": 4096})"}};
  // Two tiers, and three with pods of whole units (every rail of a unit
  // crosses the pod's links alike: a rank-0 flow counts tp times there).
  const std::string pods = R"(, "tiers": 3, "leaves_per_pod": 8)";
  std::vector<std::tuple<std::string, std::string, std::string>> runs;
  for (const auto& [model, plan] : cases) runs.emplace_back(model, plan, "");
  runs.emplace_back(kDense, cases[0].second, pods);
  runs.emplace_back(kDense, cases[2].second, pods);
  runs.emplace_back(kDense, cases[4].second, pods);
  runs.emplace_back(kDense, cases[5].second, pods);
  runs.emplace_back(kDense, cases[8].second, pods);
  // And full bisection (switch links cannot bind: every node-keeping shift
  // is exact), where data-parallel replicas map onto each other too.
  const std::string bisection = R"(, "oversubscription": 1)";
  runs.emplace_back(kDense, cases[0].second, bisection);
  runs.emplace_back(kDense, cases[1].second, bisection);
  runs.emplace_back(kDense, cases[2].second, bisection);
  runs.emplace_back(kMoe, cases[3].second, bisection);
  runs.emplace_back(kDense, cases[5].second, bisection + pods);
  runs.emplace_back(kMoe, cases[9].second, bisection);
  for (const auto& [model, plan, fabric] : runs) {
    SCOPED_TRACE(plan + fabric);
    const std::string json = rail_scenario(model, plan, fabric);
    for (const ReplicaShortcut replica : {ReplicaShortcut::kOff, ReplicaShortcut::kOn}) {
      const StepRun fast = run(json, true, replica);
      // The oracle: every device, or with the replica shortcut where the
      // symmetry leaves dp to its estimate, every device of replica 0.
      const StepRun full = run(json, false, fast.report.sim.replica_estimate ? replica : ReplicaShortcut::kOff);
      EXPECT_EQ(full.report.sim.symmetry, "");
      ASSERT_NE(fast.report.sim.symmetry.find("translations along tp"), std::string::npos) << fast.report.sim.symmetry;
      const int64_t tp = testing::scenario(json).plan.tp;
      EXPECT_LE(fast.report.sim.simulated_devices, full.report.sim.simulated_devices / tp);
      expect_same_step(fast, full);
      EXPECT_LT(fast.report.sim.events, full.report.sim.events);
    }
  }
}

// The critical path of rank 0 alone is the full simulation's: the same
// length and time by category (it may visit other, symmetric, ranks there).
TEST(Symmetry, CriticalPathMatchesTheFullSimulation) {
  for (const char* plan : {R"({"dp": 8, "tp": 4, "pp": 2, "zero": 1, "sequence_parallel": true,
                               "tp_comm_overlap": true, "global_batch": 32, "seq_len": 2048})",
                           R"({"dp": 8, "tp": 2, "cp": 2, "pp": 2, "zero": 1, "global_batch": 16,
                               "seq_len": 4096})"}) {
    SCOPED_TRACE(plan);
    const Scenario base = testing::scenario(rail_scenario(kDense, plan));
    CriticalPathReport path[2];
    for (const bool symmetry : {false, true}) {
      Scenario s = base;
      s.simulator.symmetry = symmetry;
      SimulateOptions opt;
      opt.replica_shortcut = ReplicaShortcut::kOff;
      opt.critical_path = CriticalPathMode::kOn;
      opt.timing = false;
      const StepRun r = simulate_step(s, opt);
      ASSERT_EQ(r.report.sim.simulated_devices < 64, symmetry);
      path[symmetry] = r.report.critical_path;
    }
    ASSERT_TRUE(path[0].present && path[1].present);
    EXPECT_NEAR(path[1].length_s, path[0].length_s, 1e-9 * path[0].length_s);
    std::map<std::string, double> full(path[0].by_category_s.begin(), path[0].by_category_s.end());
    std::map<std::string, double> one(path[1].by_category_s.begin(), path[1].by_category_s.end());
    ASSERT_EQ(one.size(), full.size());
    for (const auto& [category, s] : full) EXPECT_NEAR(one[category], s, 1e-9 * path[0].length_s) << category;
  }
}

// Where the fabric breaks a translation the group shrinks to the steps
// that keep it (and the step still equals the full simulation); where
// nothing can be checked, every device runs.
TEST(Symmetry, ShrinksOrFallsBackWhereDevicesWouldDiffer) {
  const std::string plan = R"({"dp": 8, "tp": 8, "zero": 1, "global_batch": 16, "seq_len": 2048})";
  struct Case {
    std::string json;
    std::string note;  ///< what the symmetry must say
  };
  const std::vector<Case> cases = {
      {rail_scenario(kDense, plan), "translations along tp, dp (every 2)"},
      // Leaves of two consecutive GPUs: only shifts by two keep them.
      {rail_scenario(kDense, plan, R"(, "rail_optimized": false)"), "translations along tp (every 2), dp"},
      // Three tiers with pods of half a unit: rails 0-3 and 4-7 cross
      // different pods.
      {rail_scenario(kDense, plan, R"(, "tiers": 3, "leaves_per_pod": 4)"),
       "translations along tp (every 4), dp (every 2)"},
      // Tensor-parallel groups of two nodes: a shift by one crosses nodes.
      {rail_scenario(kDense, R"({"dp": 4, "tp": 16, "zero": 1, "global_batch": 16, "seq_len": 2048})"),
       "translations along tp (every 8), dp"},
      // Data parallelism innermost: replicas share nodes.
      {rail_scenario(kDense, R"({"dp": 8, "tp": 8, "zero": 1, "global_batch": 16, "seq_len": 2048,
                                 "mesh_order": ["dp", "tp", "cp", "pp"]})"),
       "translations along tp (every 2), dp"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    const StepRun fast = run(c.json, true);
    EXPECT_EQ(fast.report.sim.symmetry.substr(0, c.note.size()), c.note) << fast.report.sim.symmetry;
    expect_same_step(fast, run(c.json, false));
  }
  // Traced devices run: steps grow until they are canonical (tp 3 and
  // dp 1: tp every 4, dp every 2), or there is no shift left (tp 7).
  SimulateOptions opt;
  opt.replica_shortcut = ReplicaShortcut::kOff;
  opt.timing = false;
  const Scenario rails = testing::scenario(rail_scenario(kDense, plan));
  opt.trace_devices = {3, 8};
  const StepRun traced = simulate_step(rails, opt);
  EXPECT_EQ(traced.report.sim.symmetry, "translations along tp (every 4), dp (every 2)");
  EXPECT_EQ(traced.report.sim.simulated_devices, 8);
  opt.trace_devices = {7};
  EXPECT_EQ(simulate_step(rails, opt).report.sim.symmetry,
            "translations along dp (every 2); none along tp: a traced device");
  expect_same_step(traced, run(rail_scenario(kDense, plan), false));
  // A graph fabric cannot tell its automorphisms.
  opt.trace_devices = {0};
  const StepRun graph = simulate_step(
      load_scenario(std::string(SHARDSIM_SOURCE_DIR) + "/examples/llama3-8b-h100x64-graphml.json", {}), opt);
  EXPECT_EQ(graph.report.sim.simulated_devices, 64);
  EXPECT_EQ(graph.report.sim.symmetry.substr(0, 5), "none ") << graph.report.sim.symmetry;
}

// Small random scenarios (testing::random_scenarios): wherever the symmetry
// is found the step equals the full simulation's; and it is found often
// enough to matter.
TEST(Symmetry, RandomScenariosMatchTheFullSimulation) {
  int reduced = 0;
  const std::vector<testing::RandomScenario> cases = testing::random_scenarios(20261126, 150);
  ASSERT_EQ(cases.size(), 150u);
  for (const testing::RandomScenario& c : cases) {
    SCOPED_TRACE(c.json);
    Scenario s = testing::scenario(c.json);
    SimulateOptions opt;
    opt.replica_shortcut = ReplicaShortcut::kOff;
    opt.timing = false;
    opt.critical_path = CriticalPathMode::kOff;
    const StepRun fast = simulate_step(s, opt);
    s.simulator.symmetry = false;
    const StepRun full = simulate_step(s, opt);
    ASSERT_EQ(full.report.sim.simulated_devices, c.devices);
    reduced += fast.report.sim.simulated_devices < c.devices;
    expect_same_step(fast, full);
  }
  EXPECT_GE(reduced, 75);
  std::printf("%zu random scenarios, %d of them reduced\n", cases.size(), reduced);
}

// A replica that is one node (tp·cp·pp = 8): replica 0 alone (and with
// tp 8 its rank 0 alone) gives the full step, and auto turns it on at 64
// devices; half a node is not exact and auto leaves it off.
TEST(ReplicaShortcut, ExactAndOnByDefaultWhereAReplicaIsANode) {
  for (const char* plan : {R"({"dp": 8, "tp": 8, "zero": 3, "sequence_parallel": true, "global_batch": 16,
                               "seq_len": 2048})",
                           R"({"dp": 8, "tp": 4, "pp": 2, "zero": 1, "global_batch": 16, "seq_len": 2048})",
                           R"({"dp": 8, "tp": 2, "cp": 2, "pp": 2, "zero": 1, "global_batch": 16,
                               "seq_len": 4096})"}) {
    SCOPED_TRACE(plan);
    const std::string json = rail_scenario(kDense, plan);
    EXPECT_TRUE(replica_is_a_node(testing::scenario(json)));
    const StepRun full = run(json, false, ReplicaShortcut::kOff);
    const StepRun fast = run(json, true, ReplicaShortcut::kAuto);
    EXPECT_EQ(full.report.sim.simulated_devices, 64);
    EXPECT_LE(fast.report.sim.simulated_devices, 8);
    EXPECT_NEAR(fast.report.step_time_s, full.report.step_time_s, 1e-9 * full.report.step_time_s);
    EXPECT_NEAR(fast.report.breakdown.exposed_comm_s, full.report.breakdown.exposed_comm_s,
                1e-9 * full.report.step_time_s);
  }
  const std::string half = rail_scenario(kDense, R"({"dp": 16, "tp": 4, "zero": 1, "global_batch": 16,
                                                     "seq_len": 2048})");
  EXPECT_FALSE(replica_is_a_node(testing::scenario(half)));
  // (Every replica runs, one device per orbit: tp rank 0 of replicas 0-3,
  // those of two nodes, a leaf.)
  EXPECT_EQ(run(half, true, ReplicaShortcut::kAuto).report.sim.simulated_devices, 4);
  // Expert parallelism splits dp: other replicas' all-to-alls share links.
  EXPECT_FALSE(replica_is_a_node(testing::scenario(
      rail_scenario(kMoe, R"({"dp": 8, "tp": 8, "ep": 4, "zero": 1, "sequence_parallel": true, "global_batch": 16,
               "seq_len": 2048})"))));
}

}  // namespace
}  // namespace shardsim
