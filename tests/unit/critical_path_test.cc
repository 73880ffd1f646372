// The critical path (analysis/critical_path.h) on programs whose path is
// known by hand, and its invariants on whole simulated steps: the path
// starts at 0, each op starts where the one before ended, its length is the
// step time to the picosecond, ops on it have no slack and no op has
// negative slack.
#include "shardsim/analysis/critical_path.h"

#include <gtest/gtest.h>

#include <cmath>

#include "shardsim/app/step.h"
#include "shardsim/sim/engine.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

using testing::compute_ms;
using testing::simple_chip;

/// Two chips on a line joined by one 1 GB/s link.
std::unique_ptr<Topology> line_of_two() {
  TorusSpec t;
  t.dims = {2};
  t.wraparound = {false};
  t.link_bandwidth = gbyte_per_s(1);
  return make_torus(t);
}

/// Simulates `ps` on two chips joined by one 1 GB/s link, recording both.
EngineResult run_on_two(const ProgramSet& ps, const Mesh& mesh) {
  const auto topo = line_of_two();
  EngineOptions opt;
  opt.trace_devices = {0, 1};
  return simulate(ps, mesh, *topo, simple_chip(), opt);
}

void expect_invariants(const CriticalPath& path, SimTime step) {
  EXPECT_EQ(path.length, step);
  ASSERT_FALSE(path.ops.empty());
  EXPECT_EQ(path.ops.front().start, SimTime());
  EXPECT_EQ(path.ops.back().end, step);
  for (size_t i = 1; i < path.ops.size(); ++i) EXPECT_EQ(path.ops[i].start, path.ops[i - 1].end) << i;
  for (SimTime s : path.slack) EXPECT_GE(s.ps(), 0);
}

// A pipeline of two stages: stage 0 computes 4 ms and sends 1 MB (1 ms at
// 1 GB/s) to stage 1, which computes 1 ms of its own, then 2 ms on what it
// received. The path is the 4 ms, the transfer and the 2 ms; stage 1's own
// 1 ms could end as late as the transfer does.
TEST(CriticalPath, PipelineBubbleIsOffThePathAndHasTheSlack) {
  ProgramSet ps;
  {
    ProgramBuilder b;
    b.add_stream("compute");
    b.add_stream("pp send next");
    const OpId a = b.add(compute_ms(4));
    Op send;
    send.kind = OpKind::kSend;
    send.stream = 1;
    send.peer = +1;
    send.comm_bytes = Bytes(1'000'000);
    b.add(send, {a});
    ps.stages.push_back(std::move(b).finish());
  }
  OpId own = 0, recv_id = 0, last = 0;
  {
    ProgramBuilder b;
    b.add_stream("compute");
    b.add_stream("pp recv");
    own = b.add(compute_ms(1));
    Op recv;
    recv.kind = OpKind::kRecv;
    recv.stream = 1;
    recv.peer = -1;
    recv.comm_bytes = Bytes(1'000'000);
    recv_id = b.add(recv);
    last = b.add(compute_ms(2), {recv_id});
    ps.stages.push_back(std::move(b).finish());
  }
  const Mesh mesh({1, 1, 2, 1}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});
  const EngineResult r = run_on_two(ps, mesh);
  const CriticalPath path = critical_path(ps, mesh, r.timeline);
  expect_invariants(path, r.step_time);
  ASSERT_EQ(path.ops.size(), 3u);
  EXPECT_EQ(path.ops[0].device, 0u);
  EXPECT_EQ(path.ops[0].end.ps(), 4'000'000'000);
  EXPECT_EQ(path_category(ps.stages[0], path.ops[1].op), "pp send next: transfer");
  EXPECT_EQ(path.ops[1].end.ps(), 5'000'000'000 + (r.step_time.ps() - 7'000'000'000));  // + the link's latency
  EXPECT_EQ(path.ops[2].device, 1u);
  EXPECT_EQ(path.ops[2].op, last);
  EXPECT_EQ((path.ops[2].end - path.ops[2].start).ps(), 2'000'000'000);
  for (size_t i = 0; i < r.timeline.spans.size(); ++i) {
    const TimelineSpan& s = r.timeline.spans[i];
    if (s.device == 1 && s.op == own) {
      EXPECT_EQ(path.slack[i], path.ops[1].end - s.end);
    }
    if (s.device == 1 && s.op == last) {
      EXPECT_EQ(path.slack[i], SimTime());
    }
  }
  const auto cats = path_time_by_category(ps, path);
  ASSERT_EQ(cats.size(), 2u);
  EXPECT_EQ(cats[0].first, "compute: matmul");
  EXPECT_DOUBLE_EQ(cats[0].second, 6e-3);
}

// Data parallel over two chips: 2 ms of compute, then an all-gather the
// next 1 ms op waits for (exposed), with a 0.1 ms op beside it on the
// compute stream. The path runs through the all-gather; the 0.1 ms op's
// slack is the rest of the gather.
TEST(CriticalPath, ExposedAllGatherIsOnThePath) {
  ProgramBuilder b;
  b.add_stream("compute");
  b.add_stream("dp gather");
  const OpId x = b.add(compute_ms(2));
  Op ag;
  ag.kind = OpKind::kCollective;
  ag.collective = CollectiveKind::kAllGather;
  ag.axes = axis_bit(MeshAxis::kDp);
  ag.stream = 1;
  ag.comm_bytes = Bytes(2'000'000);
  const OpId gather = b.add(ag, {x});
  const OpId beside = b.add(compute_ms(0.1));
  const OpId y = b.add(compute_ms(1), {gather});
  ProgramSet ps;
  ps.stages.push_back(std::move(b).finish());
  const Mesh mesh({1, 1, 1, 2}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});
  const EngineResult r = run_on_two(ps, mesh);
  const CriticalPath path = critical_path(ps, mesh, r.timeline);
  expect_invariants(path, r.step_time);
  ASSERT_EQ(path.ops.size(), 3u);
  EXPECT_EQ(path.ops[0].op, x);
  EXPECT_EQ(path.ops[1].op, gather);
  EXPECT_EQ(path_category(ps.stages[0], gather), "dp gather: all-gather");
  EXPECT_EQ(path.ops[1].start.ps(), 2'000'000'000);
  EXPECT_EQ(path.ops[2].op, y);
  for (size_t i = 0; i < r.timeline.spans.size(); ++i) {
    if (r.timeline.spans[i].op == beside) {
      EXPECT_EQ(path.slack[i], path.ops[1].end - r.timeline.spans[i].end);
    }
  }
}

/// `v` milliseconds, to the picosecond.
SimTime at_ms(double v) {
  return SimTime::from_ps(std::llround(v * 1e9));
}

/// x, a data-parallel all-gather after it, y after the gather, z after y:
/// one program both members of a dp group of two run.
struct GatherChain {
  ProgramSet ps;
  Mesh mesh{{1, 1, 1, 2}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp}};
  OpId x = 0, gather = 0, y = 0, z = 0;

  GatherChain() {
    ProgramBuilder b;
    b.add_stream("compute");
    b.add_stream("dp gather");
    x = b.add(compute_ms(1));
    Op ag;
    ag.kind = OpKind::kCollective;
    ag.collective = CollectiveKind::kAllGather;
    ag.axes = axis_bit(MeshAxis::kDp);
    ag.stream = 1;
    ag.comm_bytes = Bytes(1'000'000);
    gather = b.add(ag, {x});
    y = b.add(compute_ms(1), {gather});
    z = b.add(compute_ms(1), {y});
    ps.stages.push_back(std::move(b).finish());
  }

  /// A span of `op` on `device` from `start_ms` to `end_ms`.
  TimelineSpan span(uint32_t device, OpId op, double start_ms, double end_ms) const {
    return {device, 0, ps.stages[0].op(op).stream, op, at_ms(start_ms), at_ms(end_ms)};
  }
};

// Device 1's x takes 5 ms, device 0's 2 ms: device 0 arrives at the gather
// early and waits. The path is device 1's x and the gather from its arrival
// (1 ms), not device 0's wait; device 0's x and arrival have 3 ms of slack.
TEST(CriticalPath, TheLastMemberToArriveBoundsACollective) {
  const GatherChain g;
  Timeline tl;
  tl.devices = {0, 1};
  tl.spans = {g.span(0, g.x, 0, 2), g.span(1, g.x, 0, 5), g.span(0, g.gather, 2, 6), g.span(1, g.gather, 5, 6),
              g.span(0, g.y, 6, 7), g.span(1, g.y, 6, 7), g.span(0, g.z, 7, 8),      g.span(1, g.z, 7, 8)};
  const CriticalPath path = critical_path(g.ps, g.mesh, tl);
  expect_invariants(path, at_ms(8));
  ASSERT_EQ(path.ops.size(), 4u);
  EXPECT_EQ(path.ops[0].op, g.x);
  EXPECT_EQ(path.ops[0].device, 1u);
  EXPECT_EQ(path.ops[1].op, g.gather);
  EXPECT_EQ(path.ops[1].device, 1u);
  EXPECT_EQ(path.ops[1].start, at_ms(5));
  EXPECT_EQ(path.slack[0], at_ms(3));  // device 0's x
  EXPECT_EQ(path.slack[1], SimTime());
  EXPECT_EQ(path.slack[2], at_ms(3));  // device 0's arrival at the gather
  EXPECT_EQ(path.slack[3], SimTime());
  const auto cats = path_time_by_category(g.ps, path);
  ASSERT_EQ(cats.size(), 2u);
  EXPECT_EQ(cats[0], (std::pair<std::string, double>{"compute: matmul", 7e-3}));
  EXPECT_NEAR(cats[1].second, 1e-3, 1e-15);
}

// A measured run: device 0's clock puts its gather's end (5.9 ms) and its
// short y before device 1's gather ended (6 ms). On one clock that cannot
// happen (logic_error); measured, the negative wait counts as zero and the
// path still tiles the step: device 1's x, the gather up to where device
// 0's z began, then z.
TEST(CriticalPath, MeasuredClocksMayDisagreeAndThePathStillTilesTheStep) {
  const GatherChain g;
  Timeline tl;
  tl.devices = {0, 1};
  tl.spans = {g.span(0, g.x, 0, 2),      g.span(1, g.x, 0, 5),      g.span(0, g.gather, 2, 5.9),
              g.span(1, g.gather, 5, 6), g.span(0, g.y, 5.9, 5.95), g.span(1, g.y, 6, 6.05),
              g.span(0, g.z, 5.95, 8),   g.span(1, g.z, 6.05, 7)};
  EXPECT_THROW(critical_path(g.ps, g.mesh, tl), std::logic_error);
  const CriticalPath path = critical_path(g.ps, g.mesh, tl, TimelineClock::kMeasured);
  expect_invariants(path, at_ms(8));
  ASSERT_EQ(path.ops.size(), 3u);
  EXPECT_EQ(path.ops[0].op, g.x);
  EXPECT_EQ(path.ops[0].device, 1u);
  EXPECT_EQ(path.ops[1].op, g.gather);
  EXPECT_EQ(path.ops[1].end, at_ms(5.95));
  EXPECT_EQ(path.ops[2].op, g.z);
  EXPECT_EQ(path.ops[2].device, 0u);
}

// A whole step of tensor, pipeline and data parallelism (collectives,
// transfers, interleaving), with and without the replica shortcut: the
// report's path sums to the step time and the timeline it keeps is the
// traced device's alone.
TEST(CriticalPath, WholeStepPathSumsToTheStepTime) {
  const std::string json = R"({"model": {"name": "small", "layers": 8, "hidden": 2048, "ffn_hidden": 8192,
    "heads": 16, "kv_heads": 8, "vocab": 32000}, "cluster": {"chip": "h100-sxm", "devices": 16,
    "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
    "plan": {"dp": 2, "tp": 2, "pp": 4, "schedule": "interleaved", "virtual_stages": 2, "zero": 1,
             "sequence_parallel": true, "global_batch": 16, "seq_len": 2048}})";
  for (const char* shortcut : {"off", "on"}) {
    SCOPED_TRACE(shortcut);
    SimulateOptions opt;
    opt.critical_path = CriticalPathMode::kOn;
    opt.replica_shortcut = shortcut == std::string("on") ? ReplicaShortcut::kOn : ReplicaShortcut::kOff;
    opt.trace_devices = {0};
    const StepRun run = simulate_step(testing::scenario(json), opt);
    const CriticalPathReport& cp = run.report.critical_path;
    ASSERT_TRUE(cp.present);
    EXPECT_EQ(cp.length_s, run.report.step_time_s);
    double sum = 0;
    for (const auto& [name, s] : cp.by_category_s) sum += s;
    EXPECT_NEAR(sum, run.report.step_time_s, 1e-12 * run.report.step_time_s);
    EXPECT_GT(cp.devices, 1);  // the pipeline carries it across stages
    EXPECT_FALSE(cp.top_segments.empty());
    for (const TimelineSpan& s : run.timeline.spans) EXPECT_EQ(s.device, 0u);
  }
}

}  // namespace
}  // namespace shardsim
