// Symmetry shortcuts against the full simulation (the oracle). The rail
// shortcut (EngineOptions::rail_shortcut): where the fabric keeps each local
// rank's traffic between nodes on its own rail and tensor-parallel groups
// lie inside nodes, simulating tensor-parallel rank 0 alone gives the full
// step, for dense, pipelined, context-parallel, FSDP and expert-parallel
// plans, with and without the replica shortcut; where any condition fails,
// every rank runs. The replica shortcut is exact, and on by default at any
// size, where a replica is one NVSwitch node.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "shardsim/app/step.h"
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

StepRun run(const std::string& json, bool rail, ReplicaShortcut replica = ReplicaShortcut::kOff) {
  SimulateOptions opt;
  opt.replica_shortcut = replica;
  opt.timing = false;
  return simulate_step(testing::scenario(json, {{"simulator.rail_shortcut", rail ? "true" : "false"}}), opt);
}

TEST(RailShortcut, RankZeroAloneGivesTheFullStep) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {kDense, R"({"dp": 8, "tp": 8, "zero": 1, "sequence_parallel": true, "global_batch": 16, "seq_len": 2048})"},
      {kDense, R"({"dp": 4, "tp": 8, "pp": 2, "schedule": "interleaved", "virtual_stages": 2, "zero": 1,
                  "global_batch": 16, "seq_len": 2048})"},
      {kDense, R"({"dp": 4, "tp": 8, "cp": 2, "zero": 3, "global_batch": 8, "seq_len": 4096})"},
      {kMoe, R"({"dp": 8, "tp": 8, "ep": 4, "zero": 1, "sequence_parallel": true, "global_batch": 16,
                "seq_len": 2048})"},
      // Tensor-parallel groups of part of a node: the node's other groups
      // (data-, context-, pipeline-parallel and expert traffic between
      // them) share its NVLinks with the tensor-parallel collectives, so
      // rank 0's flows inside a node are laid for every rank's image.
      {kDense, R"({"dp": 16, "tp": 4, "zero": 1, "sequence_parallel": true, "global_batch": 16,
                  "seq_len": 2048})"},
      {kDense, R"({"dp": 8, "tp": 2, "cp": 2, "pp": 2, "zero": 1, "global_batch": 16, "seq_len": 4096})"},
      {kDense, R"({"dp": 8, "tp": 2, "cp": 4, "zero": 3, "global_batch": 8, "seq_len": 8192})"},
      {kMoe, R"({"dp": 16, "tp": 4, "ep": 8, "zero": 1, "sequence_parallel": true, "global_batch": 16,
                "seq_len": 2048})"},
      // Tensor-parallel communication overlap: userbuffers' ring exchange
      // sends between ranks; rank 0's send stands for every rank's, and the
      // one that reaches rank 0 (rank tp-1's) is its image.
      {kDense, R"({"dp": 8, "tp": 8, "zero": 1, "sequence_parallel": true, "tp_comm_overlap": true,
                  "global_batch": 16, "seq_len": 2048})"},
      {kMoe, R"({"dp": 8, "tp": 4, "cp": 2, "ep": 8, "zero": 1, "sequence_parallel": true, "tp_comm_overlap": true,
                "global_batch": 16, "seq_len": 4096})"}};
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
  for (const auto& [model, plan, fabric] : runs) {
    SCOPED_TRACE(plan + fabric);
    const std::string json = rail_scenario(model, plan, fabric);
    for (const ReplicaShortcut replica : {ReplicaShortcut::kOff, ReplicaShortcut::kOn}) {
      const StepRun full = run(json, false, replica);
      const StepRun rail = run(json, true, replica);
      EXPECT_FALSE(full.report.sim.rail_shortcut);
      ASSERT_TRUE(rail.report.sim.rail_shortcut);
      const int64_t tp = testing::scenario(json).plan.tp;
      EXPECT_EQ(rail.report.sim.simulated_devices, full.report.sim.simulated_devices / tp);
      EXPECT_NEAR(rail.report.step_time_s, full.report.step_time_s, 1e-9 * full.report.step_time_s);
      EXPECT_NEAR(rail.report.breakdown.exposed_comm_s, full.report.breakdown.exposed_comm_s,
                  1e-9 * full.report.step_time_s);
      EXPECT_EQ(rail.report.memory.peak_bytes_per_device, full.report.memory.peak_bytes_per_device);
      EXPECT_LT(rail.report.sim.events, full.report.sim.events);
    }
  }
}

// The critical path of rank 0 alone is the full simulation's: the same
// length and time by category (it may visit other, symmetric, ranks there).
TEST(RailShortcut, CriticalPathMatchesTheFullSimulation) {
  for (const char* plan : {R"({"dp": 8, "tp": 4, "pp": 2, "zero": 1, "sequence_parallel": true,
                               "tp_comm_overlap": true, "global_batch": 32, "seq_len": 2048})",
                           R"({"dp": 8, "tp": 2, "cp": 2, "pp": 2, "zero": 1, "global_batch": 16,
                               "seq_len": 4096})"}) {
    SCOPED_TRACE(plan);
    const Scenario base = testing::scenario(rail_scenario(kDense, plan));
    CriticalPathReport path[2];
    for (const bool rail : {false, true}) {
      Scenario s = base;
      s.simulator.rail_shortcut = rail;
      SimulateOptions opt;
      opt.replica_shortcut = ReplicaShortcut::kOff;
      opt.critical_path = CriticalPathMode::kOn;
      opt.timing = false;
      const StepRun r = simulate_step(s, opt);
      ASSERT_EQ(r.report.sim.rail_shortcut, rail);
      path[rail] = r.report.critical_path;
    }
    ASSERT_TRUE(path[0].present && path[1].present);
    EXPECT_NEAR(path[1].length_s, path[0].length_s, 1e-9 * path[0].length_s);
    std::map<std::string, double> full(path[0].by_category_s.begin(), path[0].by_category_s.end());
    std::map<std::string, double> one(path[1].by_category_s.begin(), path[1].by_category_s.end());
    ASSERT_EQ(one.size(), full.size());
    for (const auto& [category, s] : full) EXPECT_NEAR(one[category], s, 1e-9 * path[0].length_s) << category;
  }
}

// Every condition, broken alone, makes every rank run.
TEST(RailShortcut, FallsBackWhereRanksWouldDiffer) {
  const std::string plan = R"({"dp": 8, "tp": 8, "zero": 1, "global_batch": 16, "seq_len": 2048})";
  EXPECT_TRUE(run(rail_scenario(kDense, plan), true).report.sim.rail_shortcut);
  // Leaves that serve consecutive GPUs carry every rank's traffic.
  EXPECT_FALSE(run(rail_scenario(kDense, plan, R"(, "rail_optimized": false)"), true).report.sim.rail_shortcut);
  // Three tiers with pods of half a unit: rails cross different pods.
  EXPECT_FALSE(run(rail_scenario(kDense, plan, R"(, "tiers": 3, "leaves_per_pod": 4)"), true).report.sim.rail_shortcut);
  // Tensor-parallel groups of two nodes: their collectives cross the rails.
  EXPECT_FALSE(
      run(rail_scenario(kDense, R"({"dp": 4, "tp": 16, "zero": 1, "global_batch": 16, "seq_len": 2048})"), true)
          .report.sim.rail_shortcut);
  // Tensor parallelism not innermost in the mesh.
  EXPECT_FALSE(run(rail_scenario(kDense, R"({"dp": 8, "tp": 8, "zero": 1, "global_batch": 16, "seq_len": 2048,
                                             "mesh_order": ["dp", "tp", "cp", "pp"]})"),
                   true)
                   .report.sim.rail_shortcut);
  // A traced device of another rank must run.
  SimulateOptions opt;
  opt.trace_devices = {3};
  opt.replica_shortcut = ReplicaShortcut::kOff;
  EXPECT_FALSE(simulate_step(testing::scenario(rail_scenario(kDense, plan)), opt).report.sim.rail_shortcut);
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
  // (Every replica runs; the rail shortcut runs tensor-parallel rank 0.)
  EXPECT_EQ(run(half, true, ReplicaShortcut::kAuto).report.sim.simulated_devices, 64 / 4);
  // Expert parallelism splits dp: other replicas' all-to-alls share links.
  EXPECT_FALSE(replica_is_a_node(testing::scenario(
      rail_scenario(kMoe, R"({"dp": 8, "tp": 8, "ep": 4, "zero": 1, "sequence_parallel": true, "global_batch": 16,
               "seq_len": 2048})"))));
}

}  // namespace
}  // namespace shardsim
