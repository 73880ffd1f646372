// Cross-checks of the two network backends: the same Program simulated by the
// native engine and by SimGrid. Both send every flow over the same routes and
// share bandwidth by max-min (SimGrid's CM02 with zero-latency links, see
// simgrid_engine.cc), so they must agree; where they could differ is
// SimGrid's solver precision (maxmin/precision 1e-5) and its double-seconds
// clock against our integer picoseconds.
//
// SimGrid's engine runs once per process: every TEST makes at most one
// SimGrid simulation, and CTest runs each TEST in its own process
// (gtest_discover_tests).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "shardsim/app/step.h"
#include "shardsim/sim/engine.h"
#include "shardsim/sim/simgrid_engine.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {
namespace {

constexpr uint8_t kTp = axis_bit(MeshAxis::kTp);
constexpr uint8_t kDp = axis_bit(MeshAxis::kDp);

Mesh mesh(int64_t tp, int64_t dp) {
  return Mesh({tp, 1, 1, dp}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});
}

TorusSpec torus(std::vector<int64_t> dims) {
  TorusSpec t;
  t.dims = std::move(dims);
  t.wraparound.assign(t.dims.size(), true);
  t.link_bandwidth = gbyte_per_s(45);
  t.hop_latency = microseconds(1);
  return t;
}

FatTreeSpec fat_tree(double oversubscription, bool rails) {
  FatTreeSpec f;
  f.nvlink_bandwidth = gbyte_per_s(450);
  f.nic_bandwidth = gbyte_per_s(50);
  f.nvlink_latency = microseconds(0.95);
  f.nic_latency = microseconds(2);
  f.switch_latency = microseconds(0.5);
  f.nics_per_leaf = 16;
  f.rail_optimized = rails;
  f.oversubscription = oversubscription;
  return f;
}

struct Pair {
  double native_s;
  double simgrid_s;
  double rel_diff() const { return std::abs(simgrid_s - native_s) / native_s; }
};

/// A lone collective (or, with all_groups, every group of that shape at once)
/// on both backends.
Pair collective_on_both(CollectiveKind kind, int64_t bytes, const Mesh& m, uint8_t axes, const Topology& topo,
                        bool all_groups) {
  const CollectiveCosts costs{microseconds(10), Bytes(0), NcclSpec{}, CustomAllReduce{}};
  const double native =
      simulate_collective(kind, Bytes(bytes), m, axes, topo, ChipSpec{}, costs, all_groups).step_time.seconds();
  EngineOptions opt;
  opt.collective = costs;
  if (!all_groups) m.group_members(0, axes, opt.active_devices);
  const double sg = simulate_simgrid(lone_collective_program(kind, Bytes(bytes), axes), m, topo, ChipSpec{}, opt, {})
                        .step_time.seconds();
  std::printf("%s: native %.9f s, simgrid %.9f s\n", std::string(to_string(kind)).c_str(), native, sg);
  return {native, sg};
}

struct LoneCase {
  CollectiveKind kind;
  bool on_torus;
};

class LoneCollective : public ::testing::TestWithParam<LoneCase> {};

// Contention-free: a lone collective of every kind, on a 4x4 torus (per-axis
// rings) and on 4 nodes of 8 GPUs (hierarchical rings, direct all-to-all).
TEST_P(LoneCollective, BackendsAgreeWithinOnePercent) {
  const LoneCase c = GetParam();
  const auto topo = c.on_torus ? make_torus(torus({4, 4})) : make_fat_tree(fat_tree(1.0, true), 32);
  const Mesh m = c.on_torus ? mesh(1, 16) : mesh(1, 32);
  const Pair p = collective_on_both(c.kind, 256 << 20, m, kDp, *topo, false);
  EXPECT_LT(p.rel_diff(), 0.01) << "native " << p.native_s << " s, simgrid " << p.simgrid_s << " s";
}

std::string case_name(const ::testing::TestParamInfo<LoneCase>& info) {
  std::string k(to_string(info.param.kind));
  for (char& ch : k) {
    if (ch == '-') ch = '_';
  }
  return k + (info.param.on_torus ? "_torus" : "_fat_tree");
}

INSTANTIATE_TEST_SUITE_P(
    EveryKind, LoneCollective,
    ::testing::Values(LoneCase{CollectiveKind::kAllGather, true}, LoneCase{CollectiveKind::kReduceScatter, true},
                      LoneCase{CollectiveKind::kAllReduce, true}, LoneCase{CollectiveKind::kAllToAll, true},
                      LoneCase{CollectiveKind::kBroadcast, true}, LoneCase{CollectiveKind::kAllGather, false},
                      LoneCase{CollectiveKind::kReduceScatter, false}, LoneCase{CollectiveKind::kAllReduce, false},
                      LoneCase{CollectiveKind::kAllToAll, false}, LoneCase{CollectiveKind::kBroadcast, false}),
    case_name);

// Contention: an all-to-all over 64 GPUs (8 nodes, 2 per leaf, no rails)
// through leaves with 4:1 oversubscription. Both backends show the slowdown
// against a full-bisection fabric and agree within 5%.
TEST(Contention, AllToAllThroughOversubscribedFatTree) {
  const Mesh m = mesh(1, 64);
  const auto full = make_fat_tree(fat_tree(1.0, false), 64);
  const auto over = make_fat_tree(fat_tree(4.0, false), 64);
  const double unloaded = simulate_collective(CollectiveKind::kAllToAll, Bytes(1 << 30), m, kDp, *full, ChipSpec{},
                                              CollectiveCosts{}, false)
                              .step_time.seconds();
  const Pair p = collective_on_both(CollectiveKind::kAllToAll, 1 << 30, m, kDp, *over, false);
  EXPECT_GT(p.native_s, 1.5 * unloaded);
  EXPECT_GT(p.simgrid_s, 1.5 * unloaded);
  EXPECT_LT(p.rel_diff(), 0.05) << "native " << p.native_s << " s, simgrid " << p.simgrid_s << " s";
}

// Contention: two tensor-parallel groups of 4 interleaved on a ring of 8
// chips ({0,2,4,6} and {1,3,5,7}); each ring step crosses a link the other
// group also uses, so both all-gathers run slower together than alone.
TEST(Contention, TwoTensorParallelGroupsShareTorusLinks) {
  const Mesh m({4, 1, 1, 2}, {MeshAxis::kDp, MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp});
  const auto topo = make_torus(torus({8}));
  const double alone = simulate_collective(CollectiveKind::kAllGather, Bytes(256 << 20), m, kTp, *topo, ChipSpec{},
                                           CollectiveCosts{}, false)
                           .step_time.seconds();
  const Pair p = collective_on_both(CollectiveKind::kAllGather, 256 << 20, m, kTp, *topo, true);
  EXPECT_GT(p.native_s, 1.2 * alone);
  EXPECT_GT(p.simgrid_s, 1.2 * alone);
  EXPECT_LT(p.rel_diff(), 0.05) << "native " << p.native_s << " s, simgrid " << p.simgrid_s << " s";
}

// A small FSDP training step (16 H100, ZeRO-3, gathers and reductions
// overlapped with compute) gives the same step time on both backends.
TEST(TrainingStep, SmallFsdpStepAgreesWithinOnePercent) {
  const Scenario s = parse_scenario(
      R"({"model": {"name": "tiny", "layers": 4, "hidden": 2048, "ffn_hidden": 8192, "heads": 16, "kv_heads": 4,
          "vocab": 32000}, "cluster": {"chip": "h100-sxm", "devices": 16, "fabric": {"kind": "nvswitch_fat_tree",
          "gpus_per_node": 8}}, "plan": {"dp": 16, "zero": 3, "global_batch": 32, "seq_len": 2048}})",
      "fsdp.json");
  const ProgramSet programs = lower_training_step(s);
  const auto topo = build_topology(s.cluster);
  const Mesh m = build_mesh(s.plan);
  // Every device on both (the native engine's symmetry reduction would lay
  // a flow per orbit, on a quotient of the links).
  EngineOptions opt = step_engine_options(s, {0}, false);
  opt.symmetry = false;
  const EngineResult native = simulate(programs, m, *topo, s.cluster.chip, opt);
  const EngineResult sg = simulate_simgrid(programs, m, *topo, s.cluster.chip, opt, {});
  const double diff = std::abs(sg.step_time.seconds() - native.step_time.seconds()) / native.step_time.seconds();
  EXPECT_LT(diff, 0.01) << "native " << native.step_time.seconds() << " s, simgrid " << sg.step_time.seconds() << " s";
  // Both moved every byte over the same links.
  ASSERT_EQ(native.link_bytes.size(), sg.link_bytes.size());
  double nb = 0, sb = 0;
  for (size_t l = 0; l < native.link_bytes.size(); ++l) {
    nb += native.link_bytes[l];
    sb += sg.link_bytes[l];
  }
  EXPECT_NEAR(sb, nb, 1e-9 * nb);
  EXPECT_EQ(native.flows, sg.flows);
}

// LV08, SimGrid's calibrated TCP model, is slower than CM02 on the same
// step: it divides bandwidth by 0.97, multiplies latency by 13.01 and adds
// reverse traffic. The native time stands in for CM02 (the tests above).
TEST(TrainingStep, Lv08IsSlowerThanTheIdealModel) {
  const Mesh m = mesh(1, 16);
  const auto topo = make_torus(torus({4, 4}));
  const CollectiveKind kind = CollectiveKind::kAllReduce;
  const double native = simulate_collective(kind, Bytes(64 << 20), m, kDp, *topo, ChipSpec{}, CollectiveCosts{}, false)
                            .step_time.seconds();
  EngineOptions opt;
  SimgridOptions lv08;
  lv08.lv08 = true;
  const double sg =
      simulate_simgrid(lone_collective_program(kind, Bytes(64 << 20), kDp), m, *topo, ChipSpec{}, opt, lv08)
          .step_time.seconds();
  EXPECT_GT(sg, native * 1.02);
  EXPECT_LT(sg, native * 2.0);
}

// The engine refuses a second SimGrid simulation in one process.
TEST(Process, SecondSimulationIsRefused) {
  const Mesh m = mesh(1, 4);
  const auto topo = make_torus(torus({4}));
  const ProgramSet p = lone_collective_program(CollectiveKind::kAllReduce, Bytes(1 << 20), kDp);
  simulate_simgrid(p, m, *topo, ChipSpec{}, EngineOptions{}, {});
  EXPECT_THROW(simulate_simgrid(p, m, *topo, ChipSpec{}, EngineOptions{}, {}), std::logic_error);
}

}  // namespace
}  // namespace shardsim
