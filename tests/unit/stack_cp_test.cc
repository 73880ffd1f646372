// Context parallelism as the stacks run it (docs/model.md, section 1):
// Megatron's and PyTorch's all-gather, PyTorch's ring under SDPA, and
// DeepSpeed Ulysses' all-to-all. The other stack mechanisms are in
// stack_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "program_queries.h"
#include "shardsim/core/error.h"
#include "shardsim/workloads/lower.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

using testing::named;
using testing::stage0;

constexpr const char* kCp4 = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
    "plan": {"dp": 16, "cp": 4, "global_batch": 16, "seq_len": 8192}})";

TEST(StackMechanisms, CpAllGatherGathersKeysAndValuesOncePerAttention) {
  const int64_t S = 8192, cp = 4, kv = 8, d = 128, T = S / cp;
  for (const int64_t tp : {1, 2}) {
    const std::vector<Override> sets = {{"model.layers", "2"},
                                        {"plan.cp_comm", "all_gather"},
                                        {"plan.tp", std::to_string(tp)},
                                        {"plan.dp", std::to_string(16 / tp)},
                                        {"plan.global_batch", std::to_string(16 / tp)}};
    const Program p = stage0(testing::scenario(kCp4, sets));
    const int64_t mbs = 1;
    // Closed form: K and V of the whole sequence for this rank's KV heads.
    const int64_t kv_bytes = 2 * S * (kv / tp) * d * 2;
    const std::vector<OpId> ag = named(p, "cp kv all-gather"), rs = named(p, "cp dkv reduce-scatter");
    EXPECT_EQ(static_cast<int64_t>(ag.size()), 2 * mbs * 2) << "tp " << tp;  // forward and backward, 2 layers
    EXPECT_EQ(static_cast<int64_t>(rs.size()), 2 * mbs) << "tp " << tp;
    for (int32_t L = 0; L < 2; ++L) {
      const std::vector<OpId> f = named(p, "cp kv all-gather", L, 0, Pass::kForward);
      const std::vector<OpId> b = named(p, "cp kv all-gather", L, 0, Pass::kBackward);
      const std::vector<OpId> r = named(p, "cp dkv reduce-scatter", L, 0, Pass::kBackward);
      ASSERT_EQ(f.size(), 1u);
      ASSERT_EQ(b.size(), 1u);
      ASSERT_EQ(r.size(), 1u);
      for (OpId i : {f.front(), b.front(), r.front()}) {
        EXPECT_EQ(p.op(i).axes, axis_bit(MeshAxis::kCp));
        EXPECT_EQ(p.op(i).comm_bytes.value(), kv_bytes) << "tp " << tp;
      }
      EXPECT_EQ(p.op(f.front()).collective, CollectiveKind::kAllGather);
      EXPECT_EQ(p.op(r.front()).collective, CollectiveKind::kReduceScatter);
      // Transformer Engine (AttnFuncWithCPAndKVAllGather): one kernel per
      // local half-chunk of queries, the first after the gather, over s/2
      // keys on average; the halves copied into the output (no merge); the
      // reduce-scatter after the last backward kernel.
      const std::vector<OpId> steps = named(p, "cp attention", L, 0, Pass::kForward);
      ASSERT_EQ(steps.size(), 2u);
      const auto deps = p.deps(steps.front());
      EXPECT_NE(std::find(deps.begin(), deps.end(), f.front()), deps.end());
      EXPECT_EQ(p.op(steps.front()).m, T / 2);
      EXPECT_EQ(p.op(steps.front()).n, S / 2);
      EXPECT_TRUE(named(p, "cp merge", L, 0, Pass::kForward).empty());
      EXPECT_EQ(named(p, "cp out copy", L, 0, Pass::kForward).size(), 1u);
      const std::vector<OpId> bsteps = named(p, "cp attention", L, 0, Pass::kBackward);
      ASSERT_EQ(bsteps.size(), 2u);
      EXPECT_GT(r.front(), bsteps.back());
      // Backward holds dK, dV of the whole gathered sequence beside the
      // gathered keys and values but the half each kernel reads.
      const Op& back = p.op(bsteps.front());
      EXPECT_EQ(back.mem_transient.value() - back.bytes_read.value() - back.bytes_written.value(),
                kv_bytes / cp * (cp - 1) + kv_bytes);
    }
    // No ring: no point-to-point transfer on the cp axis.
    for (const Op& o : p.ops()) {
      if (o.kind == OpKind::kSend) {
        EXPECT_NE(o.peer_axis, MeshAxis::kCp);
      }
    }
    // The same attention FLOPs as the ring.
    const Program ring = stage0(testing::scenario(kCp4, {{"model.layers", "2"},
                                                         {"plan.tp", std::to_string(tp)},
                                                         {"plan.dp", std::to_string(16 / tp)},
                                                         {"plan.global_batch", std::to_string(16 / tp)}}));
    auto attn_flops = [](const Program& q) {
      double x = 0;
      for (const Op& o : q.ops()) {
        if (o.compute == ComputeKind::kAttention && o.kind == OpKind::kCompute) x += o.flops.value();
      }
      return x;
    };
    EXPECT_NEAR(attn_flops(p) / attn_flops(ring), 1.0, 1e-12);
    (void)T;
  }
}

// PyTorch's context_parallel (torchtitan) sits under SDPA: it gathers the
// keys and values torchtitan has already repeated for every query head, and
// its backward hands fp32 dk, dv accumulators round the ring after every
// block (torch/distributed/tensor/experimental/_attention.py) instead of
// reduce-scattering them.
TEST(StackMechanisms, CpAllGatherAsPyTorchRunsItPassesFp32KeyGradientsRoundTheRing) {
  const int64_t S = 8192, cp = 4, a = 32, d = 128, T = S / cp;
  const Program p = stage0(testing::scenario(
      kCp4, {{"model.layers", "2"}, {"plan.cp_comm", "all_gather"}, {"plan.framework", "torchtitan"}}));
  EXPECT_TRUE(named(p, "cp dkv reduce-scatter").empty());
  for (int32_t L = 0; L < 2; ++L) {
    for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
      const std::vector<OpId> ag = named(p, "cp kv all-gather", L, 0, pass);
      ASSERT_EQ(ag.size(), 1u);
      EXPECT_EQ(p.op(ag.front()).comm_bytes.value(), 2 * S * a * d * 2);  // 32 repeated heads, not 8
      EXPECT_EQ(named(p, "repeat kv", L, 0, pass).size(), 1u);
    }
    const std::vector<OpId> sends = named(p, "cp send dkv", L, 0, Pass::kBackward);
    const std::vector<OpId> adds = named(p, "cp grad accumulate", L, 0, Pass::kBackward);
    const std::vector<OpId> steps = named(p, "cp attention", L, 0, Pass::kBackward);
    ASSERT_EQ(static_cast<int64_t>(sends.size()), cp);
    ASSERT_EQ(static_cast<int64_t>(adds.size()), cp);
    ASSERT_EQ(static_cast<int64_t>(steps.size()), cp);
    for (int64_t i = 0; i < cp; ++i) {
      const Op& s = p.op(sends[static_cast<size_t>(i)]);
      EXPECT_EQ(s.peer_axis, MeshAxis::kCp);
      EXPECT_EQ(s.comm_bytes.value(), 2 * T * a * d * 4);  // dk and dv in fp32
      // Block i's accumulation waits for its SDPA backward and, after the
      // first, for the accumulators the previous rank sent on.
      const auto deps = p.deps(adds[static_cast<size_t>(i)]);
      EXPECT_NE(std::find(deps.begin(), deps.end(), steps[static_cast<size_t>(i)]), deps.end());
      EXPECT_EQ(deps.size(), i == 0 ? 1u : 2u);
    }
    EXPECT_EQ(named(p, "cp grad cast", L, 0, Pass::kBackward).size(), 1u);
    // Beside each block's kernel lie the gathered keys and values but its
    // own block, and the fp32 accumulators: dq, dk, dv and the received dk,
    // dv backward; the merged output forward.
    const int64_t block = 2 * T * a * d * 2;
    for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
      const int64_t acc = pass == Pass::kBackward ? 4 * (3 * T * a * d + 2 * T * a * d) : 4 * T * a * d;
      for (OpId i : named(p, "cp attention", L, 0, pass)) {
        const Op& o = p.op(i);
        EXPECT_EQ(o.mem_transient.value() - o.bytes_read.value() - o.bytes_written.value(), (cp - 1) * block + acc);
      }
    }
  }
  // Its ring (the alltoall rotation) carries the repeated heads too, cp - 1
  // bf16 blocks each way, merges each block's output forward, and in the
  // backward hands on the fp32 dk, dv accumulators after every block as the
  // all-gather rotation does, the last one before the final cast.
  const Program ring = stage0(
      testing::scenario(kCp4, {{"model.layers", "2"}, {"plan.cp_comm", "p2p"}, {"plan.framework", "torchtitan"}}));
  const int64_t block = 2 * T * a * d * 2;
  for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
    const std::vector<OpId> sends = named(ring, "cp send kv", 0, 0, pass);
    ASSERT_EQ(static_cast<int64_t>(sends.size()), cp - 1);
    for (OpId i : sends) EXPECT_EQ(ring.op(i).comm_bytes.value(), block);
  }
  EXPECT_EQ(static_cast<int64_t>(named(ring, "cp merge", 0, 0, Pass::kForward).size()), cp);
  const std::vector<OpId> dkv = named(ring, "cp send dkv", 0, 0, Pass::kBackward);
  ASSERT_EQ(static_cast<int64_t>(dkv.size()), cp);
  for (OpId i : dkv) EXPECT_EQ(ring.op(i).comm_bytes.value(), 2 * block);  // fp32
  const std::vector<OpId> cast = named(ring, "cp grad cast", 0, 0, Pass::kBackward);
  ASSERT_EQ(cast.size(), 1u);
  const auto cast_deps = ring.deps(cast.front());
  EXPECT_EQ(cast_deps.size(), 2u);  // the last accumulation and the last accumulators' arrival
}

TEST(StackMechanisms, CpAllToAllExchangesAroundAttentionAndNeedsHeadsDivisible) {
  const int64_t S = 8192, cp = 4, T = S / cp, a = 32, kv = 8, d = 128;
  const Program p = stage0(testing::scenario(kCp4, {{"model.layers", "2"}, {"plan.cp_comm", "a2a"}}));
  const int64_t qkv = T * (a + 2 * kv) * d * 2, out = T * a * d * 2;
  for (int32_t L = 0; L < 2; ++L) {
    const std::vector<OpId> f = named(p, "cp all-to-all", L, 0, Pass::kForward);
    const std::vector<OpId> b = named(p, "cp all-to-all", L, 0, Pass::kBackward);
    ASSERT_EQ(f.size(), 2u);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(p.op(f[0]).comm_bytes.value(), qkv);
    EXPECT_EQ(p.op(f[1]).comm_bytes.value(), out);
    EXPECT_EQ(p.op(b[0]).comm_bytes.value(), out);
    EXPECT_EQ(p.op(b[1]).comm_bytes.value(), qkv);
    for (OpId i : {f[0], f[1], b[0], b[1]}) {
      EXPECT_EQ(p.op(i).collective, CollectiveKind::kAllToAll);
      EXPECT_EQ(p.op(i).axes, axis_bit(MeshAxis::kCp));
    }
    // Attention runs between them over the whole sequence, a/cp heads.
    const std::vector<OpId> at = named(p, "attention", L, 0, Pass::kForward);
    ASSERT_EQ(at.size(), 1u);
    EXPECT_GT(at.front(), f[0]);
    EXPECT_LT(at.front(), f[1]);
    EXPECT_EQ(p.op(at.front()).m, S);
    EXPECT_EQ(p.op(at.front()).k, a * d / cp);
  }
  // heads / tp = 32 / 8 = 4 heads per rank cannot split over cp = 8.
  const std::string bad = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
      "plan": {"dp": 1, "tp": 8, "cp": 8, "sequence_parallel": true, "global_batch": 1, "seq_len": 8192,
               "cp_comm": "a2a"}})";
  try {
    testing::scenario(bad);
    ADD_FAILURE() << "cp 8 over 4 heads per rank was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/plan/cp_comm"), std::string::npos) << e.what();
  }
  // The same plan with the ring is fine.
  EXPECT_NO_THROW(testing::scenario(bad, {{"plan.cp_comm", "p2p"}}));
}

}  // namespace
}  // namespace shardsim
