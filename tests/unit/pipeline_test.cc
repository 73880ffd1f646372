// Pipeline schedules: bubbles come out of the simulation and match the
// closed forms when communication is free and stages are equal.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "shardsim/app/step.h"
#include "shardsim/sim/engine.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"
#include "shardsim/workloads/schedule.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

/// Programs for `stages` stages that follow `schedule` with compute ops of
/// t_f / v (forward) and t_b / v (backward) per chunk and one-byte sends.
ProgramSet synthetic_pipeline(PipelineSchedule schedule, int64_t stages, int64_t m, int64_t v, double tf, double tb) {
  ProgramSet ps;
  for (int64_t s = 0; s < stages; ++s) {
    ProgramBuilder b;
    for (const char* n : {"compute", "send next", "send prev", "recv"}) b.add_stream(n);
    std::vector<std::vector<OpId>> fwd_out(static_cast<size_t>(v), std::vector<OpId>(static_cast<size_t>(m)));
    for (const PipelineStep& st : pipeline_steps(schedule, stages, s, m, v)) {
      const int64_t g = st.chunk * stages + s;
      const bool first = g == 0, last = g == stages * v - 1;
      auto p2p = [&](OpKind kind, StreamId stream, int8_t peer, Pass pass, OpId dep) {
        Op o;
        o.kind = kind;
        o.stream = stream;
        o.peer = peer;
        o.pass = pass;
        o.comm_bytes = Bytes(1);
        return b.add(o, {dep});
      };
      Op c;
      c.compute = ComputeKind::kAttention;  // FLOP-bound: time = flops / peak
      c.pass = st.forward ? Pass::kForward : Pass::kBackward;
      c.flops = Flops((st.forward ? tf : tb) / static_cast<double>(v) * 1e12);
      OpId in = kNoOp;
      if (st.forward && !first) in = p2p(OpKind::kRecv, 3, -1, Pass::kForward, kNoOp);
      if (!st.forward && !last) in = p2p(OpKind::kRecv, 3, 1, Pass::kBackward, kNoOp);
      const OpId x = b.add(c, {in});
      if (st.forward && !last) p2p(OpKind::kSend, 1, 1, Pass::kForward, x);
      if (!st.forward && !first) p2p(OpKind::kSend, 2, -1, Pass::kBackward, x);
    }
    ps.stages.push_back(std::move(b).finish());
  }
  return ps;
}

double simulate_pipeline(PipelineSchedule schedule, int64_t p, int64_t m, int64_t v, double tf, double tb) {
  const ProgramSet ps = synthetic_pipeline(schedule, p, m, v, tf, tb);
  const Mesh mesh({1, 1, p, 1}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});
  TorusSpec t;  // a ring of p devices, links fast enough to be free
  t.dims = {p};
  t.wraparound = {true};
  t.link_bandwidth = gbyte_per_s(1e12);
  const auto topo = make_torus(t);
  ChipSpec chip;
  chip.bf16_peak = FlopsPerSec(1e12);
  chip.hbm_bandwidth = BytesPerSec(1e12);
  return simulate(ps, mesh, *topo, chip, EngineOptions{}).step_time.seconds();
}

struct PipeCase {
  int64_t p, m;
};

class PipelineBubble : public ::testing::TestWithParam<PipeCase> {};

TEST_P(PipelineBubble, OneFOneBAndGpipeTakeMPlusPMinusOneSlots) {
  const auto [p, m] = GetParam();
  const double tf = 1e-3, tb = 2e-3;
  const double expect = static_cast<double>(m + p - 1) * (tf + tb);
  EXPECT_NEAR(simulate_pipeline(PipelineSchedule::kOneFOneB, p, m, 1, tf, tb), expect, expect * 0.01);
  EXPECT_NEAR(simulate_pipeline(PipelineSchedule::kGpipe, p, m, 1, tf, tb), expect, expect * 0.01);
}

TEST_P(PipelineBubble, InterleavingCutsTheBubbleByV) {
  const auto [p, m] = GetParam();
  const double tf = 1e-3, tb = 2e-3;
  for (int64_t v : {2, 4}) {
    const double expect = static_cast<double>(m) * (tf + tb) + static_cast<double>(p - 1) * (tf + tb) / v;
    EXPECT_NEAR(simulate_pipeline(PipelineSchedule::kInterleaved, p, m, v, tf, tb), expect, expect * 0.01) << "v " << v;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PipelineBubble,
                         ::testing::Values(PipeCase{2, 4}, PipeCase{4, 8}, PipeCase{4, 16}, PipeCase{8, 32}),
                         [](const auto& info) {
                           return "p" + std::to_string(info.param.p) + "_m" + std::to_string(info.param.m);
                         });

// What the search's pipeline bound relies on (workloads/pipeline_bound.h):
// every stage of every schedule starts with its chunk 0's forward of the
// first microbatch and ends with its chunk 0's backward.
TEST(PipelineSchedule, StagesStartAndEndWithChunkZero) {
  for (const PipelineSchedule sched :
       {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kInterleaved}) {
    for (int64_t p = 1; p <= 8; ++p) {
      for (int64_t m = 1; m <= 24; ++m) {
        for (int64_t v = 1; v <= 4; ++v) {
          if ((sched == PipelineSchedule::kInterleaved && m % p != 0) ||
              (sched == PipelineSchedule::kOneFOneB && v > 1))
            continue;
          for (int64_t s = 0; s < p; ++s) {
            const std::vector<PipelineStep> st = pipeline_steps(sched, p, s, m, v);
            ASSERT_FALSE(st.empty());
            EXPECT_TRUE(st.front().forward && st.front().chunk == 0 && st.front().microbatch == 0);
            EXPECT_TRUE(!st.back().forward && st.back().chunk == 0);
          }
        }
      }
    }
  }
}

TEST(PipelineSchedule, EveryStepRunsOnceAndBackwardFollowsForward) {
  for (auto sched : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kInterleaved}) {
    const int64_t p = 4, m = 8, v = sched == PipelineSchedule::kOneFOneB ? 1 : 2;
    for (int64_t s = 0; s < p; ++s) {
      std::set<std::tuple<int, int, bool>> seen;
      for (const PipelineStep& st : pipeline_steps(sched, p, s, m, v)) {
        EXPECT_TRUE(seen.insert({st.chunk, st.microbatch, st.forward}).second);
        if (!st.forward) {
          EXPECT_TRUE(seen.count({st.chunk, st.microbatch, true}));
        }
      }
      EXPECT_EQ(static_cast<int64_t>(seen.size()), 2 * m * v);
    }
  }
}

// Small vocabulary so the stages are nearly balanced.
const char* kPipe = R"({"model": {"name": "tiny", "layers": 16, "hidden": 1024, "ffn_hidden": 4096, "heads": 16,
  "vocab": 4096}, "cluster": "dgx-h100-64",
  "plan": {"dp": 8, "tp": 2, "pp": 4, "global_batch": 64, "seq_len": 1024}})";

TEST(Pipeline, ReplicaShortcutMatchesSimulatingEveryDevice) {
  for (const char* zero : {"0", "1", "3"}) {
    // (The rail shortcut, checked in symmetry_test.cc, off: every rank runs.)
    const Scenario s = testing::scenario(kPipe, {{"plan.zero", zero}, {"simulator.symmetry", "false"}});
    const StepRun full = run_training_step(s, {}, false);
    const StepRun shortcut = run_training_step(s, {}, true);
    EXPECT_EQ(full.report.sim.simulated_devices, 64);
    EXPECT_EQ(shortcut.report.sim.simulated_devices, 8);
    EXPECT_NEAR(shortcut.report.step_time_s, full.report.step_time_s, 1e-9 * full.report.step_time_s) << zero;
  }
}

TEST(Pipeline, BubbleShowsInTheBreakdownAndShrinksWithMoreMicrobatches) {
  const StepRun few = run_training_step(testing::scenario(kPipe, {{"plan.global_batch", "32"}}), {});
  const StepRun many = run_training_step(testing::scenario(kPipe, {{"plan.global_batch", "256"}}), {});
  EXPECT_GT(few.report.breakdown.bubble_s, 0);
  EXPECT_GT(few.report.breakdown.bubble_s / few.report.step_time_s,
            many.report.breakdown.bubble_s / many.report.step_time_s);
}

TEST(Pipeline, RecomputationAddsHardwareNotModelFlops) {
  const StepRun none = run_training_step(testing::scenario(kPipe), {});
  const StepRun sel = run_training_step(testing::scenario(kPipe, {{"plan.recompute", "\"selective\""}}), {});
  const StepRun full = run_training_step(testing::scenario(kPipe, {{"plan.recompute", "\"full\""}}), {});
  EXPECT_DOUBLE_EQ(none.report.model_flops_per_step, full.report.model_flops_per_step);
  EXPECT_DOUBLE_EQ(none.report.model_flops_per_step, sel.report.model_flops_per_step);
  EXPECT_GT(full.report.hfu / full.report.mfu, sel.report.hfu / sel.report.mfu);
  EXPECT_GT(sel.report.hfu, sel.report.mfu);
  EXPECT_GT(full.report.step_time_s, none.report.step_time_s);
  EXPECT_LT(full.report.memory.peak_bytes_per_device, none.report.memory.peak_bytes_per_device);
}

TEST(ContextParallel, RingAttentionTransfersHideBehindCompute) {
  // cp = 8 inside one node: the KV blocks move over NVLink while the
  // previous block's attention computes; a 100x faster NVLink barely helps.
  // (Without SM contention, so that only the overlap is measured; with it,
  // attention that runs beside a transfer is slower, never faster.)
  const char* json = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
      "plan": {"dp": 8, "cp": 8, "global_batch": 8, "seq_len": 65536}})";
  const Override free_sms{"cluster.chip.comm_compute_units", "0"};
  const double normal = run_training_step(testing::scenario(json, {free_sms}), {}).report.step_time_s;
  const double fast =
      run_training_step(testing::scenario(json, {free_sms, {"cluster.fabric.nvlink_GBps_per_gpu", "45000"}}), {})
          .report.step_time_s;
  EXPECT_LT(normal / fast, 1.03);
  EXPECT_GE(normal, fast);
  const double contended = run_training_step(testing::scenario(json), {}).report.step_time_s;
  EXPECT_GT(contended, normal);
}

// Megatron-LM's software of 2021 as plan fields (docs/model.md, section 1).
const char* kMegatronStyle = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
    "plan": {"dp": 16, "tp": 2, "pp": 2, "sequence_parallel": false, "global_batch": 64, "seq_len": 2048}})";

double step_s(const std::vector<Override>& sets) {
  return run_training_step(testing::scenario(kMegatronStyle, sets), {}).report.step_time_s;
}

TEST(MegatronSoftware, BlockingP2pRunsTransfersInTheComputeStreamAndNeverHelps) {
  const Scenario s = testing::scenario(kMegatronStyle, {{"plan.p2p_blocking", "true"}});
  int transfers = 0;
  for (const Program& p : lower_training_step(s).stages) {
    for (const Op& o : p.ops()) {
      if (o.kind != OpKind::kSend && o.kind != OpKind::kRecv) continue;
      EXPECT_EQ(o.stream, 0) << p.name(o);
      ++transfers;
    }
  }
  EXPECT_GT(transfers, 0);
  EXPECT_GE(step_s({{"plan.p2p_blocking", "true"}}), step_s({}));
}

TEST(MegatronSoftware, ScatterGatherSendsASliceAndAllGathersIt) {
  // Without sequence parallelism each tp rank sends 1/tp of the boundary
  // activation; the receiver all-gathers the slices over tp.
  auto transfer_bytes = [](const Scenario& s, int& gathers) {
    int64_t bytes = 0;
    gathers = 0;
    for (const Program& p : lower_training_step(s).stages) {
      for (const Op& o : p.ops()) {
        if (o.kind == OpKind::kSend) bytes = o.comm_bytes.value();
        if (o.kind == OpKind::kCollective && p.name(o).find("pp activation all-gather") != std::string_view::npos) {
          ++gathers;
        }
      }
    }
    return bytes;
  };
  int plain_gathers = 0, sg_gathers = 0;
  const int64_t plain = transfer_bytes(testing::scenario(kMegatronStyle), plain_gathers);
  const int64_t sliced =
      transfer_bytes(testing::scenario(kMegatronStyle, {{"plan.p2p_scatter_gather", "true"}}), sg_gathers);
  EXPECT_EQ(sliced * 2, plain);  // tp 2
  EXPECT_EQ(plain_gathers, 0);
  EXPECT_GT(sg_gathers, 0);
}

TEST(MegatronSoftware, InputGradientAllReduceWaitsForTheWeightGradientWithoutOverlap) {
  auto waits_for_wgrad = [](const Scenario& s) {
    int waits = 0, reduces = 0;
    const ProgramSet ps = lower_training_step(s);
    const Program& p = ps.stages.front();
    for (OpId i = 0; i < p.size(); ++i) {
      if (p.name(p.op(i)).find("attn grad all-reduce") == std::string_view::npos) continue;
      ++reduces;
      for (OpId d : p.deps(i)) waits += p.name(p.op(d)).find("wgrad") != std::string_view::npos;
    }
    EXPECT_GT(reduces, 0);
    return waits;
  };
  EXPECT_EQ(waits_for_wgrad(testing::scenario(kMegatronStyle)), 0);
  EXPECT_GT(waits_for_wgrad(testing::scenario(kMegatronStyle, {{"plan.tp_grad_overlap", "false"}})), 0);
  EXPECT_GE(step_s({{"plan.tp_grad_overlap", "false"}}), step_s({}));
}

TEST(MegatronSoftware, UnfusedGradientAccumulationAddsEveryParameterOncePerMicrobatch) {
  // Conservation: on every stage the added gradients are the stage's
  // parameters (the optimizer's count, zero 0) once per microbatch.
  const Scenario s = testing::scenario(kMegatronStyle, {{"plan.grad_accumulation_fusion", "false"}});
  const int64_t microbatches = s.plan.microbatches();
  for (const Program& p : lower_training_step(s).stages) {
    int64_t added = 0, params = 0;
    for (const Op& o : p.ops()) {
      if (p.name(o) == "grad accumulate") added += o.m;
      if (o.pass == Pass::kOptimizer && o.compute == ComputeKind::kOptimizer) params = o.m;
    }
    EXPECT_GT(params, 0);
    EXPECT_EQ(added, microbatches * params);
  }
  // Fused (the default) and ZeRO-2 (reduce-scatter every microbatch) add nothing.
  for (const auto& sets : {std::vector<Override>{},
                           std::vector<Override>{{"plan.grad_accumulation_fusion", "false"}, {"plan.zero", "2"}}}) {
    for (const Program& p : lower_training_step(testing::scenario(kMegatronStyle, sets)).stages) {
      for (const Op& o : p.ops()) EXPECT_NE(p.name(o), "grad accumulate");
    }
  }
  EXPECT_GT(step_s({{"plan.grad_accumulation_fusion", "false"}}), step_s({}));
}

TEST(Pipeline, InFlightActivationsFollowTheSchedule) {
  // 1F1B keeps p - stage microbatches on a stage; GPipe keeps all m.
  Plan p;
  p.pp = 4;
  p.dp = 1;
  p.global_batch = 16;
  EXPECT_EQ(peak_in_flight_bytes(p, 0, {1}), 4);
  EXPECT_EQ(peak_in_flight_bytes(p, 3, {1}), 1);
  p.schedule = PipelineSchedule::kGpipe;
  EXPECT_EQ(peak_in_flight_bytes(p, 0, {1}), 16);
  // Interleaved, v chunks: (p-1)·2 + (v-1)·p + 1 chunk-microbatches on stage 0.
  p.schedule = PipelineSchedule::kInterleaved;
  p.virtual_stages = 3;
  EXPECT_EQ(peak_in_flight_bytes(p, 0, {1, 1, 1}), 3 * 2 + 2 * 4 + 1);
}

}  // namespace
}  // namespace shardsim
