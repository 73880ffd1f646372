// Per-rank programs (ProgramSet::per_rank): a step lowered per stage and
// written out rank by rank, groups and peers named outright, simulates as
// the step itself (the engine matches the k-th collective of a group on
// every member and a transfer by its tag), on random scenarios of every
// parallelism; the critical path follows it alike.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shardsim/analysis/critical_path.h"
#include "shardsim/app/step.h"
#include "shardsim/sim/engine.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/per_rank.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

struct Both {
  explicit Both(const Scenario& s) : m(build_mesh(s.plan)) {}
  Mesh m;
  EngineResult mesh, ranks;
  ProgramSet stage_programs, rank_programs;
};

Both simulate_both(const Scenario& s, bool every_span) {
  Both b(s);
  b.stage_programs = lower_step(s);
  b.rank_programs = per_rank_programs(b.stage_programs, b.m);
  const auto topo = build_topology(s.cluster);
  EngineOptions opt = step_engine_options(s, {0}, false);
  opt.symmetry = false;
  opt.spans_of_every_device = every_span;
  b.mesh = simulate(b.stage_programs, b.m, *topo, s.cluster.chip, opt);
  b.ranks = simulate(b.rank_programs, b.m, *topo, s.cluster.chip, opt);
  return b;
}

TEST(PerRank, ProgramsOfEveryRankSimulateAsTheStep) {
  for (const testing::RandomScenario& rs : testing::random_scenarios(77, 40)) {
    SCOPED_TRACE(rs.json);
    const Scenario s = testing::scenario(rs.json);
    const Both b = simulate_both(s, false);
    EXPECT_EQ(b.ranks.step_time.ps(), b.mesh.step_time.ps());
    EXPECT_EQ(b.ranks.flows, b.mesh.flows);
    EXPECT_EQ(b.ranks.events, b.mesh.events);
    EXPECT_EQ(b.ranks.critical_device, b.mesh.critical_device);
    EXPECT_DOUBLE_EQ(b.ranks.breakdown.exposed_comm_s, b.mesh.breakdown.exposed_comm_s);
    EXPECT_DOUBLE_EQ(b.ranks.breakdown.bubble_s, b.mesh.breakdown.bubble_s);
    EXPECT_EQ(b.ranks.comm_busy_by_stream_s, b.mesh.comm_busy_by_stream_s);
    // Device 0's spans and flows alike (its program is its stage's, op for op).
    ASSERT_EQ(b.ranks.timeline.spans.size(), b.mesh.timeline.spans.size());
    for (size_t i = 0; i < b.mesh.timeline.spans.size(); ++i) {
      EXPECT_EQ(b.ranks.timeline.spans[i].op, b.mesh.timeline.spans[i].op);
      EXPECT_EQ(b.ranks.timeline.spans[i].end.ps(), b.mesh.timeline.spans[i].end.ps());
    }
    ASSERT_EQ(b.ranks.timeline.flows.size(), b.mesh.timeline.flows.size());
  }
}

TEST(PerRank, GroupsAreTheMeshGroupsAndEveryCollectiveMeets) {
  const Scenario s = testing::scenario(R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 32,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}}, "plan": {"dp": 2, "tp": 4, "pp": 2, "cp": 2,
    "zero": 1, "sequence_parallel": true, "global_batch": 8, "seq_len": 8192, "schedule": "interleaved",
    "virtual_stages": 2}})");
  const ProgramSet stages = lower_step(s);
  const Mesh mesh = build_mesh(s.plan);
  const ProgramSet ranks = per_rank_programs(stages, mesh);
  ASSERT_EQ(ranks.stages.size(), 32u);
  EXPECT_TRUE(ranks.pipelined);
  std::vector<uint32_t> members;
  for (uint32_t d = 0; d < 32; ++d) {
    const Program& p = ranks.stages[d];
    const Program& stage = stages.stages[static_cast<size_t>(mesh.coord(d, MeshAxis::kPp))];
    ASSERT_EQ(p.size(), stage.size());
    for (OpId i = 0; i < p.size(); ++i) {
      const Op& o = p.op(i);
      ASSERT_TRUE(std::equal(p.deps(i).begin(), p.deps(i).end(), stage.deps(i).begin(), stage.deps(i).end()));
      if (o.kind == OpKind::kCollective) {
        members.clear();
        mesh.group_members(d, o.axes, members);
        EXPECT_EQ(ranks.groups.at(static_cast<size_t>(o.group)), members);
      } else if (o.kind == OpKind::kSend || o.kind == OpKind::kRecv) {
        EXPECT_NE(o.peer_device, static_cast<int32_t>(d));
        EXPECT_EQ(mesh.coord(static_cast<uint32_t>(o.peer_device), MeshAxis::kTp), mesh.coord(d, MeshAxis::kTp));
      }
    }
  }
  const CollectiveInstances inst = match_collectives(ranks);
  EXPECT_EQ(inst.first.size(), inst.group.size() + 1);
  // Every collective op of every rank is one member of one instance.
  size_t ops = 0;
  for (const Program& p : ranks.stages) {
    for (const Op& o : p.ops()) ops += o.kind == OpKind::kCollective;
  }
  EXPECT_EQ(inst.ops.size(), ops);
}

TEST(PerRank, MembersThatDisagreeAreRefused) {
  const Scenario s = testing::scenario(R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 8,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}}, "plan": {"dp": 2, "tp": 4, "global_batch": 4,
    "seq_len": 2048}})");
  ProgramSet ranks = per_rank_programs(lower_step(s), build_mesh(s.plan));
  ProgramSet fewer = ranks;
  fewer.groups[0].push_back(7);  // a member that runs none of the group's collectives
  EXPECT_THROW(match_collectives(fewer), std::logic_error);
}

TEST(PerRank, CriticalPathFollowsPerRankPrograms) {
  const Scenario s = testing::scenario(R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 16,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}}, "plan": {"dp": 2, "tp": 4, "pp": 2,
    "zero": 1, "global_batch": 8, "seq_len": 4096}})");
  const Both b = simulate_both(s, true);
  const CriticalPath a = critical_path(b.stage_programs, b.m, b.mesh.timeline);
  const CriticalPath r = critical_path(b.rank_programs, b.m, b.ranks.timeline);
  EXPECT_EQ(r.length.ps(), a.length.ps());
  ASSERT_EQ(r.ops.size(), a.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(r.ops[i].device, a.ops[i].device);
    EXPECT_EQ(r.ops[i].op, a.ops[i].op);
  }
  EXPECT_EQ(path_time_by_category(b.rank_programs, r), path_time_by_category(b.stage_programs, a));
}

}  // namespace
}  // namespace shardsim
