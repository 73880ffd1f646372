// The CPU backend's kernels against straightforward references, and the
// pieces of a real run that need no MPI: buffer sizing, fault parsing, the
// measured-run JSON.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "shardsim/realexec/kernels.h"
#include "shardsim/realexec/measured.h"
#include "shardsim/realexec/op_sizing.h"
#include "shardsim/realexec/rank.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::realexec {
namespace {

std::vector<float> random_values(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(static_cast<double>(g() >> 40) / static_cast<double>(1ull << 24)) - 0.5f;
  return v;
}

TEST(RealexecKernels, SelfCheckPasses) {
  set_blas_threads(1);
  const SelfCheck c = kernel_self_check();
  EXPECT_GT(c.checked, 10);
  EXPECT_EQ(c.mismatches, 0) << c.first_mismatch;
}

TEST(RealexecKernels, MatmulMatchesReferenceAcrossShapes) {
  set_blas_threads(1);
  for (const auto& [m, n, k] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 1, 1}, {7, 130, 65}, {64, 64, 64}}) {
    const auto a = random_values(static_cast<size_t>(m * k), 1), b = random_values(static_cast<size_t>(k * n), 2);
    std::vector<float> c(static_cast<size_t>(m * n)), r(c.size());
    matmul(a.data(), b.data(), c.data(), 1, m, n, k);
    matmul_reference(a.data(), b.data(), r.data(), 1, m, n, k);
    EXPECT_LT(max_relative_error(c.data(), r.data(), m * n), 1e-4) << m << "x" << n << "x" << k;
  }
}

TEST(RealexecKernels, CausalAttentionRowSumsToOneOverValues) {
  // With v = 1 everywhere, every output is exactly 1 (softmax rows sum to 1),
  // and query 0 of a causal mask attends to key 0 alone: lse = s(0,0).
  AttentionShape s;
  s.batch = 1;
  s.queries = s.keys = 130;  // crosses two 64-token blocks
  s.heads = 2;
  s.head_dim = 8;
  const size_t n = static_cast<size_t>(s.queries * s.heads * s.head_dim);
  const auto q = random_values(n, 3), k = random_values(n, 4);
  const std::vector<float> v(n, 1.0f);
  std::vector<float> o(n), lse(static_cast<size_t>(s.queries * s.heads));
  attention_forward(s, q.data(), k.data(), v.data(), o.data(), lse.data());
  for (float x : o) ASSERT_NEAR(x, 1.0f, 1e-5);
  double dot = 0;
  for (int d = 0; d < 8; ++d) dot += double{q[d]} * k[d];
  EXPECT_NEAR(lse[0], dot / std::sqrt(8.0), 1e-5);
}

TEST(RealexecKernels, ElementwiseFoldsInputsOntoOutputs) {
  const std::vector<float> in = {1, 2, 3, 4, 5};
  std::vector<float> out(2);
  elementwise(in.data(), 5, out.data(), 2);
  const float s = 1.0f + 1.0f / 256.0f;
  EXPECT_FLOAT_EQ(out[0], (1 + 3 + 5) * s);
  EXPECT_FLOAT_EQ(out[1], (2 + 4) * s);
}

TEST(RealexecSizing, FootprintsFollowShapesAndDeclaredBytes) {
  Op mm;
  mm.compute = ComputeKind::kMatmul;
  mm.m = 4;
  mm.n = 5;
  mm.k = 6;
  mm.batch = 2;
  const ComputeFootprint f = compute_footprint(mm, {});
  EXPECT_EQ(f.inputs, 2 * (4 * 6 + 6 * 5));
  EXPECT_EQ(f.outputs, 2 * 4 * 5);
  Op ew;
  ew.compute = ComputeKind::kElementwise;
  ew.bytes_read = Bytes(4000);
  ew.bytes_written = Bytes(2000);
  EXPECT_EQ(compute_footprint(ew, {}).inputs, 1000);
  EXPECT_EQ(compute_footprint(ew, {}).outputs, 500);

  Op ag;
  ag.kind = OpKind::kCollective;
  ag.collective = CollectiveKind::kAllGather;
  ag.dtype = DType::kBf16;
  ag.comm_bytes = Bytes(1000);  // 500 bf16 values: 125 per member of 4
  const CommFootprint c = comm_footprint(ag, 4);
  EXPECT_EQ(c.send_bytes, 250);
  EXPECT_EQ(c.recv_bytes, 1000);
  ag.collective = CollectiveKind::kReduceScatter;
  EXPECT_EQ(comm_footprint(ag, 4).send_bytes, 1000);
  EXPECT_EQ(comm_footprint(ag, 4).recv_bytes, 250);
}

// Every backend lays a compute op's operands out in the two arenas as
// kernel_call says; the arenas are sized by compute_footprint. Property: for
// every compute op of real scenarios (training with tp, pp, cp and experts,
// and inference decode), every operand ends inside its arena.
TEST(RealexecSizing, KernelOperandsFitTheArenas) {
  using K = KernelCall::Kernel;
  const std::string dir = SHARDSIM_EXAMPLES_DIR;
  const std::vector<std::pair<std::string, std::vector<Override>>> cases = {
      {"/realexec/tiny-gpt-cpu2.json", {}},
      {"/realexec/tiny-gpt-cpu2-tp2.json", {}},
      {"/realexec/tiny-gpt-cpu2-pp2.json", {}},
      {"/llama3-8b-h100x64.json", {{"plan.cp", "2"}, {"plan.tp", "2"}, {"plan.pp", "2"}, {"plan.dp", "8"}}},
      {"/mixtral-8x7b-h100x64.json", {}},
      {"/llama3-70b-h100x8-decode.json", {}},
  };
  int64_t checked = 0;
  for (const auto& [file, sets] : cases) {
    const Scenario s = load_scenario(dir + file, sets);
    KernelContext ctx;
    ctx.head_dim = s.model.head_dim;
    for (const Program& p : lower_step(s).stages) {
      for (OpId id = 0; id < p.size(); ++id) {
        const Op& op = p.op(id);
        if (op.kind != OpKind::kCompute) continue;
        const KernelCall c = kernel_call(op, ctx, p.name(op).find("ring") != std::string_view::npos);
        const ComputeFootprint f = compute_footprint(op, ctx);
        int64_t in_end = 0, out_end = 0;
        const AttentionShape& a = c.attention;
        const int64_t kv = a.batch * a.keys * a.heads * a.head_dim;
        const int64_t lse = a.batch * a.queries * a.heads;
        switch (c.kernel) {
          case K::kMatmul:
            in_end = c.in[1] + c.batch * c.k * c.n;
            out_end = c.batch * c.m * c.n;
            EXPECT_GE(c.in[1], c.batch * c.m * c.k) << file << ": " << p.label(id);
            break;
          case K::kAttentionForward:
            in_end = c.in[2] + kv;
            out_end = c.out[1] + lse;
            break;
          case K::kAttentionBackward:
            in_end = c.in[5] + lse;
            out_end = c.out[2] + kv;
            break;
          case K::kRmsnorm:
            in_end = std::max(c.in[1] + c.row, c.with_grad ? c.in[2] + c.n_out : c.n_out);
            out_end = c.n_out;
            break;
          case K::kSoftmax:
            in_end = c.with_grad ? c.in[1] + c.n_out : c.n_out;
            out_end = c.n_out;
            break;
          case K::kCrossEntropy:
            in_end = c.n_out * c.row;
            out_end = c.n_out;
            break;
          case K::kEmbeddingLookup:
          case K::kEmbeddingScatterAdd:
            ASSERT_GE(c.row, 1);
            in_end = c.n_in / c.row * c.row;
            out_end = c.n_out / c.row * c.row;
            break;
          case K::kAdam:
            in_end = c.n_in;
            out_end = c.out[2] + c.n_out;
            break;
          case K::kElementwise:
            in_end = c.n_in;
            out_end = c.n_out;
            break;
        }
        EXPECT_LE(in_end, f.inputs) << file << ": " << p.label(id);
        EXPECT_LE(out_end, f.outputs) << file << ": " << p.label(id);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(RealexecFault, ParsesAndRejects) {
  EXPECT_EQ(parse_fault("").kind, FaultSpec::Kind::kNone);
  const FaultSpec k = parse_fault("kill:rank=1:op=10");
  EXPECT_EQ(k.kind, FaultSpec::Kind::kKill);
  EXPECT_EQ(k.rank, 1);
  EXPECT_EQ(k.op, 10);
  const FaultSpec d = parse_fault("delay:rank=0:op=3:s=2.5");
  EXPECT_EQ(d.kind, FaultSpec::Kind::kDelay);
  EXPECT_DOUBLE_EQ(d.delay_s, 2.5);
  EXPECT_EQ(parse_fault("corrupt:rank=0:op=0").kind, FaultSpec::Kind::kCorrupt);
  for (const char* bad : {"explode:rank=1:op=1", "kill:rank=x:op=1", "kill:op=1", "delay:rank=1:op=1", "kill:rank"}) {
    EXPECT_THROW(parse_fault(bad), std::invalid_argument) << bad;
  }
}

TEST(RealexecMeasured, JsonRoundTripAndMedian) {
  MeasuredRun r;
  r.ranks = 2;
  r.warmup_steps = 1;
  r.step_times_s = {0.3, 0.1, 0.2};
  r.trace_step = 2;
  r.timeline.spans.push_back({1, 0, 3, 7, SimTime::from_ps(5), SimTime::from_ps(9)});
  r.verify.enabled = true;
  r.verify.collectives_checked = 4;
  const MeasuredRun back = parse_measured_run(measured_run_json(r), "x.json");
  EXPECT_EQ(back.ranks, 2);
  ASSERT_EQ(back.timeline.spans.size(), 1u);
  EXPECT_EQ(back.timeline.spans[0].op, 7u);
  EXPECT_EQ(back.timeline.spans[0].end.ps(), 9);
  EXPECT_EQ(back.timeline.devices.size(), 2u);
  EXPECT_EQ(back.verify.collectives_checked, 4);
  EXPECT_DOUBLE_EQ(median(back.step_times_s), 0.2);
  EXPECT_DOUBLE_EQ(median({1, 2, 3, 4}), 2.5);
  EXPECT_THROW(parse_measured_run("{", "x.json"), std::runtime_error);
}

}  // namespace
}  // namespace shardsim::realexec
