// Engine properties: critical path, determinism, overlap, breakdown.
#include <gtest/gtest.h>

#include "shardsim/app/step.h"
#include "shardsim/sim/compute_model.h"
#include "shardsim/sim/engine.h"
#include "shardsim/viz/chrome_trace.h"
#include "shardsim/viz/result_json.h"
#include "shardsim/workloads/lower.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

using testing::simple_chip;

/// Two devices in data parallel on a line of two chips (no wraparound) whose
/// one link runs at `link_GBps`.
struct TwoDevices {
  Mesh mesh{{1, 1, 1, 2}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp}};
  std::unique_ptr<Topology> topo;
  explicit TwoDevices(double link_GBps) {
    TorusSpec t;
    t.dims = {2};
    t.wraparound = {false};
    t.link_bandwidth = gbyte_per_s(link_GBps);
    topo = make_torus(t);
  }
};

// Compute beside communication, in closed form: a 4 ms op on a chip whose
// communication holds half of its SMs runs at half speed from the moment a
// collective starts beside it (1 ms in), so it ends at 1 + 3·2 = 7 ms; with
// no SMs held it ends at 4 ms.
TEST(Engine, ComputeSlowsFromTheMomentCommunicationStartsBesideIt) {
  ProgramBuilder b;
  b.add_stream("compute");
  b.add_stream("comm");
  Op a;
  a.compute = ComputeKind::kAttention;
  a.flops = Flops(4e9);  // 4 ms at 1e12 FLOP/s
  const OpId slow = b.add(a);
  Op x = a;
  x.stream = 1;
  x.flops = Flops(1e9);  // 1 ms, on the other stream: the collective waits for it
  const OpId first = b.add(x);
  Op ar;
  ar.kind = OpKind::kCollective;
  ar.collective = CollectiveKind::kAllReduce;
  ar.axes = axis_bit(MeshAxis::kDp);
  ar.stream = 1;
  ar.comm_bytes = Bytes(100'000'000);  // about 100 ms over 1 GB/s: outlasts the op
  b.add(ar, {first});
  ProgramSet p;
  p.stages.push_back(std::move(b).finish());
  const TwoDevices two(1);
  // The op's end, and what the step reports communication added to compute
  // (the 3 ms beyond the op's 4 ms alone; the 1 ms op ran before the
  // collective).
  auto end_of_slow_op = [&](int held) {
    ChipSpec chip = simple_chip();
    chip.compute_units = 4;
    chip.comm_compute_units = held;
    EngineOptions opt;
    opt.trace_devices = {0};
    const EngineResult r = simulate(p, two.mesh, *two.topo, chip, opt);
    for (const TimelineSpan& s : r.timeline.spans) {
      if (s.device == 0 && s.op == slow) return std::pair{s.end.ps(), r.compute_beside_comm_s};
    }
    return std::pair{int64_t{-1}, -1.0};
  };
  EXPECT_EQ(end_of_slow_op(0), std::pair(int64_t{4'000'000'000}, 0.0));
  EXPECT_EQ(end_of_slow_op(2).first, 7'000'000'000);
  EXPECT_NEAR(end_of_slow_op(2).second, 3e-3, 1e-12);
}

// A DAG of compute ops only takes exactly its critical path.
// ProgramBuilder::reserve is a hint: a program built with room reserved
// too small, too large or not at all is the same program.
TEST(Engine, ReservingRoomLeavesTheProgramAsItIs) {
  auto build = [](size_t reserve_at, size_t room) {
    ProgramBuilder b;
    b.add_stream("compute");
    b.add_stream("comm");
    for (size_t i = 0; i < 200; ++i) {
      if (i == reserve_at) b.reserve(room);
      Op o;
      o.stream = static_cast<StreamId>(i % 3 == 0 ? 1 : 0);
      o.layer = static_cast<int32_t>(i);
      const auto prev = static_cast<OpId>(i / 2);
      if (i == 0) {
        b.add(o);
      } else {
        b.add(o, {prev, kNoOp, prev});
      }
    }
    return std::move(b).finish();
  };
  const Program plain = build(1000, 0);
  for (const auto& [at, room] : std::vector<std::pair<size_t, size_t>>{{0, 10}, {1, 100000}, {50, 120}, {199, 1}}) {
    const Program p = build(at, room);
    ASSERT_EQ(p.size(), plain.size());
    for (OpId i = 0; i < p.size(); ++i) {
      EXPECT_EQ(p.op(i).layer, plain.op(i).layer);
      EXPECT_EQ(p.op(i).stream, plain.op(i).stream);
      const auto a = p.deps(i), e = plain.deps(i);
      EXPECT_TRUE(std::equal(a.begin(), a.end(), e.begin(), e.end())) << "op " << i;
    }
  }
}

TEST(Engine, ComputeOnlyDagTakesItsCriticalPath) {
  ProgramBuilder b;
  b.add_stream("a");
  b.add_stream("b");
  auto op = [&](StreamId s, double gflop) {
    Op o;
    o.compute = ComputeKind::kAttention;
    o.stream = s;
    o.flops = Flops(gflop * 1e9);
    return o;
  };
  const OpId x = b.add(op(0, 1));       // 1 ms
  const OpId y = b.add(op(1, 5), {});   // 5 ms on the other stream
  const OpId z = b.add(op(0, 2), {x});  // after x: 3 ms total
  b.add(op(0, 1), {y, z});              // after both: 6 ms
  ProgramSet p;
  p.stages.push_back(std::move(b).finish());
  const TwoDevices two(1);
  const EngineResult r = simulate(p, two.mesh, *two.topo, simple_chip(), EngineOptions{});
  EXPECT_EQ(r.step_time.ps(), 6'000'000'000);
}

const char* const kSmall = R"({"model": {"name": "tiny", "layers": 4, "hidden": 1024, "ffn_hidden": 4096, "heads": 16,
  "kv_heads": 4, "vocab": 32000}, "cluster": "dgx-h100-64",
  "plan": {"dp": 8, "tp": 8, "zero": 3, "sequence_parallel": true, "global_batch": 32, "seq_len": 2048}})";

TEST(Engine, SameScenarioGivesByteIdenticalResultAndTrace) {
  const Scenario s = testing::scenario(kSmall);
  StepRun a = run_training_step(s, {0, 1, 8});
  StepRun b = run_training_step(s, {0, 1, 8});
  a.report.sim.wall_s = b.report.sim.wall_s = 0;
  EXPECT_EQ(step_report_json(a.report), step_report_json(b.report));
  EXPECT_EQ(chrome_trace_json(a.programs, a.timeline), chrome_trace_json(b.programs, b.timeline));
  EXPECT_FALSE(a.timeline.flows.empty());
}

TEST(Engine, ResultDoesNotDependOnTheOrderOfSameInstantEvents) {
  // Devices start in shuffled orders; the result and trace stay the same.
  for (const char* extra : {"0", "1"}) {
    const Scenario s = testing::scenario(kSmall, {{"plan.zero", extra}});
    const ProgramSet programs = lower_training_step(s);
    const auto topo = build_topology(s.cluster);
    const Mesh mesh = build_mesh(s.plan);
    std::string first_trace;
    int64_t first_time = -1;
    for (uint64_t seed : {0, 1, 7, 12345}) {
      EngineOptions opt;
      opt.trace_devices = {0, 1, 8, 9};
      opt.collective = s.cluster.collective;
      opt.start_order_seed = seed;
      const EngineResult r = simulate(programs, mesh, *topo, s.cluster.chip, opt);
      const std::string trace = chrome_trace_json(programs, r.timeline);
      if (first_time < 0) {
        first_time = r.step_time.ps();
        first_trace = trace;
      }
      EXPECT_EQ(r.step_time.ps(), first_time) << "seed " << seed;
      EXPECT_EQ(trace, first_trace) << "seed " << seed;
    }
  }
}

TEST(Engine, BreakdownSumsToStepTime) {
  for (const char* zero : {"0", "3"}) {
    const Scenario s = testing::scenario(kSmall, {{"plan.zero", zero}});
    const StepRun r = run_training_step(s, {});
    const auto& b = r.report.breakdown;
    EXPECT_NEAR(b.compute_s + b.exposed_comm_s + b.bubble_s + b.other_s, r.report.step_time_s,
                1e-9 * r.report.step_time_s);
    EXPECT_GT(r.report.mfu, 0);
    EXPECT_LT(r.report.mfu, 1);
    // Compute by op kind adds up to the compute time (one compute stream).
    double by_kind = 0;
    for (const auto& [kind, seconds] : r.report.compute_by_kind_s) by_kind += seconds;
    EXPECT_NEAR(by_kind, b.compute_s, 1e-9 * b.compute_s);
    EXPECT_FALSE(r.report.comm_busy_by_stream_s.empty());
  }
}

TEST(Engine, BindingConstraintNamesWhatDominates) {
  EXPECT_EQ(run_training_step(testing::scenario(kSmall, {{"cluster.chip.hbm_bytes", "1000000"}}), {}).report.binding,
            "memory");
  // A fabric 1000x slower makes the step communication-bound.
  const StepRun slow = run_training_step(testing::scenario(kSmall, {{"cluster.fabric.nic_GBps_per_gpu", "0.05"},
                                                                    {"cluster.fabric.nvlink_GBps_per_gpu", "0.45"}}),
                                         {});
  EXPECT_EQ(slow.report.binding.rfind("communication (", 0), 0u) << slow.report.binding;
}

TEST(Engine, FsdpPrefetchIsNeverSlower) {
  for (const char* tp : {"1", "8"}) {
    for (const char* mb : {"1", "4"}) {
      const std::vector<Override> base{{"plan.tp", tp},
                                       {"plan.dp", tp[0] == '1' ? "64" : "8"},
                                       {"plan.microbatch_size", mb},
                                       {"plan.sequence_parallel", "false"},
                                       {"plan.global_batch", "256"}};
      auto with = base;
      with.push_back({"plan.fsdp_prefetch", "true"});
      auto without = base;
      without.push_back({"plan.fsdp_prefetch", "false"});
      const double t_with = run_training_step(testing::scenario(kSmall, with), {}).report.step_time_s;
      const double t_without = run_training_step(testing::scenario(kSmall, without), {}).report.step_time_s;
      EXPECT_LE(t_with, t_without) << "tp " << tp << " mb " << mb;
    }
  }
}

TEST(Engine, DataParallelGradientReductionOverlapsBackward) {
  // Buckets all-reduced during the backward pass leave less communication
  // exposed than one all-reduce of every gradient after it.
  const std::vector<Override> ddp{{"plan.zero", "0"},
                                  {"plan.tp", "1"},
                                  {"plan.dp", "64"},
                                  {"plan.sequence_parallel", "false"},
                                  {"plan.global_batch", "512"},
                                  {"plan.microbatch_size", "8"},
                                  {"plan.seq_len", "8192"}};
  auto exposed = [&](const char* bucket_bytes) {
    auto sets = ddp;
    sets.push_back({"plan.grad_bucket_bytes", bucket_bytes});
    return run_training_step(testing::scenario(kSmall, sets), {}).report.breakdown.exposed_comm_s;
  };
  EXPECT_LT(exposed("20000000"), 0.8 * exposed("1000000000000"));
}

/// 132 compute units with 128 x 256 tiles 64 deep (an H100's SMs and CUTLASS tile).
ChipSpec engine_hopper_tiles() {
  ChipSpec c;
  c.compute_units = 132;
  c.tile_m = 128;
  c.tile_n = 256;
  c.tile_k = 64;
  return c;
}

TEST(ComputeModel, WaveQuantizationPenalizesAPartialLastWave) {
  ChipSpec c = engine_hopper_tiles();
  // 132 tiles fill one wave exactly; 133 need a second, nearly empty one.
  EXPECT_DOUBLE_EQ(matmul_quantization_efficiency(128 * 12, 256 * 11, 4096, 1, c), 1.0);
  EXPECT_NEAR(matmul_quantization_efficiency(128 * 133, 256, 4096, 1, c), 133.0 / 264, 1e-12);
  // Large matmuls approach 1.
  EXPECT_GT(matmul_quantization_efficiency(16384, 16384, 16384, 1, c), 0.95);
}

// With stream-K the K iterations of all tiles are dealt out over the SMs: the
// 133-tile GEMM above loses one iteration per SM at most (133 · 64 = 8,512
// iterations on 132 SMs: 65 each), not a wave; 80 tiles (under one wave)
// likewise; a tile's K loop cut in pieces pays its fill on each piece.
TEST(ComputeModel, StreamKDealsAPartialWaveOut) {
  ChipSpec c = engine_hopper_tiles();
  c.matmul_stream_k = true;
  EXPECT_NEAR(matmul_quantization_efficiency(128 * 133, 256, 4096, 1, c), 8512.0 / (65 * 132), 1e-12);
  EXPECT_NEAR(matmul_quantization_efficiency(128 * 80, 256, 4096, 1, c), 5120.0 / (39 * 132), 1e-12);
  EXPECT_DOUBLE_EQ(matmul_quantization_efficiency(128 * 12, 256 * 11, 4096, 1, c), 1.0);
  // 33 tiles on 132 SMs: each K loop in 4 pieces of 16 iterations (1,024
  // elements), each paying a fill of 140: 1024 / 1164.
  EXPECT_NEAR(matmul_quantization_efficiency(128 * 33, 256, 4096, 1, c, 140), 1024.0 / 1164, 1e-12);
}

// Beside an NCCL kernel holding 24 of 132 SMs, a stream-K GEMM is still cut
// for 132 units (the library does not know of the kernel): its whole waves'
// tiles spread over the 108 free units and its partial wave's 132 shares run
// in two rounds. 96 tiles of 128 K iterations (one partial wave) take 94
// iterations per unit alone and 2 x 94 beside: twice the time (measured
// 1.6-1.8x on H100 and H200, bench/fit_comm_contention.py). 2048 tiles
// (8192^3): 15 whole waves, 1980 tiles' iterations over 108 units (2347
// each), then 68 tiles' shares twice (2 x 66). A kernel that tells the GEMM
// its margin (userbuffers, sms > 0) gets a plain stream-K cut for 116 units.
TEST(ComputeModel, BesideNcclAStreamKGemmRunsItsPartialWaveTwice) {
  ChipSpec c = engine_hopper_tiles();
  c.comm_compute_units = 24;
  c.matmul_stream_k = true;
  const ChipSpec nccl = chip_beside_communication(c);
  EXPECT_EQ(nccl.compute_units, 108);
  EXPECT_EQ(nccl.planned_compute_units, 132);
  EXPECT_NEAR(matmul_quantization_efficiency(1024, 3072, 8192, 1, c), 12288.0 / (94 * 132), 1e-12);
  EXPECT_NEAR(matmul_quantization_efficiency(1024, 3072, 8192, 1, nccl), 12288.0 / (2 * 94 * 108), 1e-12);
  EXPECT_NEAR(matmul_quantization_efficiency(8192, 8192, 8192, 1, nccl), 2048.0 * 128 / (2479 * 108), 1e-12);
  Op gemm;
  gemm.compute = ComputeKind::kMatmul;
  gemm.m = 1024;
  gemm.n = 3072;
  gemm.k = 8192;
  gemm.flops = Flops(2.0 * 1024 * 3072 * 8192);
  c.bf16_peak = FlopsPerSec(1e15);
  c.hbm_bandwidth = BytesPerSec(1e12);  // no bytes: compute-bound
  c.matmul_efficiency = 1.0;
  EXPECT_NEAR(compute_time(gemm, chip_beside_communication(c)).seconds() / compute_time(gemm, c).seconds(), 2.0,
              1e-6);  // times in whole picoseconds
  const ChipSpec margin = chip_beside_communication(c, 16);
  EXPECT_EQ(margin.planned_compute_units, 0);
  EXPECT_NEAR(compute_time(gemm, margin).seconds() / compute_time(gemm, c).seconds(), 106.0 / 94, 1e-6);
  // Whole waves: split-K is cut for the 132 units too. 60 tiles split in 2
  // make 120 pieces of 64 iterations: one wave alone, two on 108 units, each
  // piece paying its fill (K overhead 140 elements on 4096).
  c.matmul_stream_k = false;
  EXPECT_NEAR(matmul_quantization_efficiency(768, 2560, 8192, 1, chip_beside_communication(c), 140),
              60.0 * 128 / (2 * 108 * 64) * 4096 / 4236, 1e-12);
}

// A memory-bound op beside a communication kernel keeps 1 - weight x held /
// units of its bandwidth (the kernel's traffic takes the rest; measured
// weights 0.37 on H100, 0.35 on H200); a weight of 0 leaves it alone.
TEST(ComputeModel, BesideCommunicationAMemoryBoundOpSharesHbm) {
  ChipSpec c = simple_chip();  // 1 TB/s
  c.compute_units = 132;
  c.comm_compute_units = 24;
  Op add;
  add.compute = ComputeKind::kElementwise;
  add.bytes_read = Bytes(2'000'000'000);
  add.bytes_written = Bytes(1'000'000'000);
  const double alone = compute_time(add, c).seconds();
  EXPECT_DOUBLE_EQ(compute_time(add, chip_beside_communication(c)).seconds(), alone);
  c.comm_memory_weight = 0.35;
  EXPECT_NEAR(compute_time(add, chip_beside_communication(c)).seconds(), alone / (1 - 0.35 * 24 / 132.0), 1e-12);
  EXPECT_NEAR(compute_time(add, chip_beside_communication(c, 16)).seconds(), alone / (1 - 0.35 * 16 / 132.0), 1e-12);
}

// A large compute-bound GEMM takes flops / (peak of its format x that
// format's efficiency): fp4 at the fp4 peak; on a chip without fp4 tensor
// cores it falls back to the fp8 rate, and without fp8 to bf16.
TEST(ComputeModel, Fp4GemmsRunAtTheFp4PeakOrFallBack) {
  ChipSpec c = simple_chip();
  c.bf16_peak = FlopsPerSec(1e15);
  c.fp8_peak = FlopsPerSec(2e15);
  c.fp4_peak = FlopsPerSec(4e15);
  c.matmul_efficiency = 0.8;
  c.fp8_matmul_efficiency = 0.7;
  c.fp4_matmul_efficiency = 0.6;
  c.compute_units = 1;
  c.tile_m = c.tile_n = c.tile_k = 1;  // no wave quantisation
  Op o;
  o.compute = ComputeKind::kMatmul;
  o.m = o.n = o.k = 8192;
  o.flops = Flops(2.0 * 8192 * 8192 * 8192);
  auto seconds = [&](DType d) {
    o.dtype = d;
    return compute_time(o, c).seconds();
  };
  EXPECT_NEAR(seconds(DType::kFp4), o.flops.value() / (4e15 * 0.6), 1e-12);
  EXPECT_NEAR(seconds(DType::kFp8), o.flops.value() / (2e15 * 0.7), 1e-12);
  EXPECT_NEAR(seconds(DType::kBf16), o.flops.value() / (1e15 * 0.8), 1e-12);
  c.fp4_peak = FlopsPerSec(0);
  EXPECT_NEAR(seconds(DType::kFp4), o.flops.value() / (2e15 * 0.7), 1e-12);
  c.fp8_peak = FlopsPerSec(0);
  EXPECT_NEAR(seconds(DType::kFp4), o.flops.value() / (1e15 * 0.8), 1e-12);
}

// The power cap bounds a GEMM's fraction of its format's peak, whatever its
// shape: a long-K GEMM the tile form would run above it runs at the cap (fp8
// at the same fraction of its own peak), one the tile and wave terms already
// hold under it keeps its time, and a longer K never makes a GEMM slower per
// FLOP. The roofline bound of the search takes the same best rate.
TEST(ComputeModel, PowerCapBoundsLongGemmsNotShortOnes) {
  ChipSpec c = simple_chip();
  c.bf16_peak = FlopsPerSec(1e15);
  c.fp8_peak = FlopsPerSec(2e15);
  c.matmul_efficiency = 0.7;
  c.fp8_matmul_efficiency = 0.75;
  c.matmul_k_overhead = 120;
  c.compute_units = 1;
  c.tile_m = c.tile_n = c.tile_k = 1;
  Op o;
  o.compute = ComputeKind::kMatmul;
  o.m = o.n = 8192;
  auto seconds = [&](int64_t k, DType d) {
    o.k = k;
    o.dtype = d;
    o.flops = Flops(2.0 * 8192 * 8192 * static_cast<double>(k));
    return compute_time(o, c).seconds();
  };
  const double short_flops = 2.0 * 8192 * 8192 * 256, long_flops = 2.0 * 8192 * 8192 * 16384;
  const double short_uncapped = seconds(256, DType::kBf16);
  EXPECT_NEAR(short_uncapped, short_flops / (1e15 * 0.7 * 256 / 376), 1e-12);
  c.matmul_power_cap = 0.65;
  EXPECT_DOUBLE_EQ(seconds(256, DType::kBf16), short_uncapped);  // 0.7 x 256/376 = 0.48 < 0.65
  EXPECT_NEAR(seconds(16384, DType::kBf16), long_flops / (1e15 * 0.65), 1e-12);
  EXPECT_NEAR(seconds(16384, DType::kFp8), long_flops / (2e15 * 0.65), 1e-12);
  double per_flop = 1e300;
  for (int64_t k = 64; k <= 65536; k *= 2) {
    const double t = seconds(k, DType::kBf16) / o.flops.value();
    EXPECT_LE(t, per_flop * (1 + 1e-12)) << k;
    per_flop = t;
  }
  EXPECT_DOUBLE_EQ(c.best_matmul_efficiency(DType::kBf16), 0.65);
  c.matmul_power_cap = 1.0;
  EXPECT_DOUBLE_EQ(c.best_matmul_efficiency(DType::kFp8), 0.75);
  EXPECT_DOUBLE_EQ(c.best_matmul_efficiency(DType::kBf16), 0.7);
}

// A fused attention kernel's rate at n keys is E·n/(n + half), forward and
// backward each with its own E and half-rate length; the backward's E is in
// the benchmarks' convention (2.5 forwards), the lowering counts 2.
TEST(ComputeModel, AttentionRateFollowsEachPassItsOwnCurve) {
  ChipSpec chip;
  chip.attention_efficiency = 0.4;
  ChipSpec::AttentionRate& r = chip.attention_kernels[static_cast<size_t>(AttentionKernel::kCudnn)];
  r.forward = 0.6;
  r.backward = 0.5;
  r.half_tokens = 500;
  r.backward_half_tokens = 1500;
  Op op;
  op.compute = ComputeKind::kAttention;
  op.kernel = AttentionKernel::kCudnn;
  op.n = 1500;
  op.pass = Pass::kForward;
  EXPECT_DOUBLE_EQ(attention_efficiency(op, chip), 0.6 * 1500 / 2000);
  op.pass = Pass::kBackward;
  EXPECT_DOUBLE_EQ(attention_efficiency(op, chip), 0.5 * 0.8 * 0.5);  // half the rate at n = 1500
  op.kernel = AttentionKernel::kFlash3;                               // not measured on this chip
  EXPECT_DOUBLE_EQ(attention_efficiency(op, chip), 0.4);
}

TEST(ComputeModel, MemoryBoundOpsFollowHbmBandwidth) {
  ChipSpec c = simple_chip();
  c.memory_efficiency = 0.5;
  Op o;
  o.compute = ComputeKind::kElementwise;
  o.bytes_read = Bytes(1'000'000'000);
  o.bytes_written = Bytes(1'000'000'000);
  EXPECT_EQ(compute_time(o, c).ps(), 4'000'000'000);  // 2 GB at 0.5 TB/s: 4 ms
}

// A power-capped GPU (compute_clock_scale < 1) runs the FLOP term of its
// matmuls and attention at that fraction of the rate; a kernel bound by its
// HBM traffic keeps its time, since a power cap lowers the SM clock only.
TEST(ComputeModel, AClockBelowTheMeasuredOneSlowsOnlyTheFlopTerm) {
  ChipSpec c = simple_chip();  // 1 TFLOP/s, 1 TB/s, no launch overhead
  c.tile_m = c.tile_n = c.tile_k = 1;
  Op gemm;
  gemm.compute = ComputeKind::kMatmul;
  gemm.m = gemm.n = gemm.k = 1000;
  gemm.flops = Flops(2e9);             // 2 ms at 1 TFLOP/s
  gemm.bytes_read = Bytes(1'000'000);  // 1 us at 1 TB/s
  Op attn = gemm;
  attn.compute = ComputeKind::kAttention;
  Op gemv = gemm;
  gemv.flops = Flops(2e6);                 // 2 us of FLOPs
  gemv.bytes_read = Bytes(1'000'000'000);  // 1 ms of bytes
  const double gemm_s = compute_time(gemm, c).seconds(), attn_s = compute_time(attn, c).seconds();
  const double gemv_s = compute_time(gemv, c).seconds();
  EXPECT_NEAR(gemm_s, 2e-3, 1e-12);
  c.compute_clock_scale = 0.8;
  EXPECT_NEAR(compute_time(gemm, c).seconds(), gemm_s / 0.8, 1e-12);
  EXPECT_NEAR(compute_time(attn, c).seconds(), attn_s / 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(compute_time(gemv, c).seconds(), gemv_s);
  // Beside a collective the scale still holds (the chip is copied whole).
  c.compute_units = 132;
  c.comm_compute_units = 24;
  EXPECT_DOUBLE_EQ(chip_beside_communication(c).compute_clock_scale, 0.8);
}

// A decode-shaped matmul (one row against a weight read once) and decode
// attention are bound by their bytes and pay the chip's extra fixed time for
// such kernels; the same kinds bound by their FLOPs, and memory-bound ops of
// other kinds, do not.
TEST(ComputeModel, MemoryBoundMatmulAndAttentionPayTheirExtra) {
  ChipSpec c = simple_chip();  // 1 TFLOP/s, 1 TB/s
  c.graph_launch_overhead = microseconds(2);
  c.memory_bound_matmul_extra = microseconds(1.5);
  c.memory_bound_attention_extra = microseconds(3);
  c.tile_m = c.tile_n = c.tile_k = 1;  // no tile padding of the one row
  Op gemv;
  gemv.compute = ComputeKind::kMatmul;
  gemv.graphed = true;
  gemv.m = 1;
  gemv.n = gemv.k = 4096;
  gemv.flops = Flops(2.0 * 4096 * 4096);                        // 34 us at 1 TFLOP/s
  gemv.bytes_read = Bytes(int64_t{2} * 4096 * 4096 + 100'000);  // weight and rows: 34 us at 1 TB/s, the larger
  EXPECT_NEAR(compute_time(gemv, c).seconds(), 3.5e-6 + static_cast<double>(gemv.bytes_read.value()) / 1e12, 1e-11);
  // With SMs lent to a collective its FLOPs take longer than its bytes: it
  // turns compute-bound and never gets faster than alone.
  // (An extra of 10 us puts its FLOPs beside a collective, 41 us, between
  // its bytes, 34 us, and bytes + extra, 44 us: where charging the extra only
  // to memory-bound kernels would make the slower chip faster.)
  ChipSpec sms = c;
  sms.compute_units = 132;
  sms.comm_compute_units = 24;
  sms.memory_bound_matmul_extra = microseconds(10);
  EXPECT_GE(compute_time(gemv, chip_beside_communication(sms, 0)).ps(), compute_time(gemv, sms).ps());
  Op gemm = gemv;
  gemm.flops = Flops(2.0 * 1e9);  // 2 ms of FLOPs: compute-bound
  EXPECT_NEAR(compute_time(gemm, c).seconds(), 2e-6 + 2e-3, 1e-11);
  Op decode_attention;
  decode_attention.compute = ComputeKind::kAttention;
  decode_attention.graphed = true;
  decode_attention.flops = Flops(1e6);
  decode_attention.bytes_read = Bytes(10'000'000);  // 10 us of cache
  EXPECT_NEAR(compute_time(decode_attention, c).seconds(), 5e-6 + 10e-6, 1e-11);
  Op norm;
  norm.compute = ComputeKind::kNorm;
  norm.graphed = true;
  norm.bytes_read = Bytes(10'000'000);
  EXPECT_NEAR(compute_time(norm, c).seconds(), 2e-6 + 10e-6, 1e-11);
}

}  // namespace
}  // namespace shardsim

namespace shardsim {
namespace {

// With a calibration profile, a compute op takes its measured rate and a
// collective its fitted latency + bytes / bandwidth, not the flows.
TEST(Calibration, MeasuredRatesReplaceTheRooflineAndTheFlows) {
  CalibrationProfile prof;
  prof.matmul = {{1e6, 1e10}, {1e9, 1e11}};  // 10 GFLOP/s at 100^3, 100 GFLOP/s at 1000^3
  prof.attention_flops_per_s = 2e10;
  prof.memory_bytes_per_s = 1e10;
  prof.loss_values_per_s = 1e8;
  prof.collectives = {{"all-reduce", 2, 100e-6, 1e9}, {"all-reduce", 8, 300e-6, 5e8}};
  // Log-log interpolation: at 10^7.5 the rate is 10^10.5.
  EXPECT_NEAR(prof.matmul_flops_per_s(std::pow(10.0, 7.5)), std::pow(10.0, 10.5), 1e3);
  EXPECT_DOUBLE_EQ(prof.matmul_flops_per_s(1.0), 1e10);  // clamped
  EXPECT_EQ(prof.fit("all-reduce", 3)->group, 2);
  EXPECT_EQ(prof.fit("all-reduce", 6)->group, 8);
  EXPECT_FALSE(prof.fit("all-gather", 2).has_value());

  ChipSpec chip;
  chip.bf16_peak = FlopsPerSec(1e15);
  chip.hbm_bandwidth = BytesPerSec(1e15);
  Op mm;
  mm.compute = ComputeKind::kMatmul;
  mm.m = mm.n = mm.k = 1000;
  mm.flops = Flops(2e9);
  EXPECT_EQ(calibrated_compute_time(mm, chip, prof).ps(), to_sim_time(2e9 / 1e11).ps());
  // Without fp8 points an fp8 product takes the bf16 rate (as the backend ran it) ...
  mm.dtype = DType::kFp8;
  EXPECT_EQ(calibrated_compute_time(mm, chip, prof).ps(), to_sim_time(2e9 / 1e11).ps());
  // ... with them, its own; int8 and fp4 products still take the bf16 points.
  CalibrationProfile fp8 = prof;
  fp8.matmul_fp8 = {{1e6, 3e10}, {1e9, 3e11}};
  EXPECT_EQ(calibrated_compute_time(mm, chip, fp8).ps(), to_sim_time(2e9 / 3e11).ps());
  EXPECT_NEAR(fp8.matmul_flops_per_s(std::pow(10.0, 7.5), DType::kFp8), 3 * std::pow(10.0, 10.5), 1e4);
  EXPECT_DOUBLE_EQ(fp8.matmul_flops_per_s(1e9, DType::kBf16), 1e11);
  EXPECT_DOUBLE_EQ(fp8.matmul_flops_per_s(1e9, DType::kInt8), 1e11);
  EXPECT_DOUBLE_EQ(fp8.matmul_flops_per_s(1e9, DType::kFp4), 1e11);
  Op loss;
  loss.compute = ComputeKind::kLoss;
  loss.m = 1'000'000;
  EXPECT_EQ(calibrated_compute_time(loss, chip, prof).ps(), to_sim_time(1e6 / 1e8).ps());

  // A lone 1 MB all-reduce over 2 devices takes the fit, whatever the fabric.
  const TwoDevices two(1000);
  EngineOptions opt;
  opt.calibration = &prof;
  const EngineResult r =
      simulate(lone_collective_program(CollectiveKind::kAllReduce, Bytes(1'000'000), axis_bit(MeshAxis::kDp)), two.mesh,
               *two.topo, chip, opt);
  EXPECT_EQ(r.step_time.ps(), to_sim_time(100e-6 + 1e6 / 1e9).ps());
  EXPECT_EQ(r.flows, 0u);
}

}  // namespace
}  // namespace shardsim
