// MaxText's kernels as its recipes run them (docs/model.md, section 1,
// "MaxText on TPUs"): splash attention's block-sparse work and its
// unfused backward, and the embedding as a one-hot matmul
// (use_iota_embed), against closed forms.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "program_queries.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/model.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

using testing::named;
using testing::stage0;

// Llama 3 8B cut to two layers, FSDP over a v5e-256 slice, one sequence of
// 8192 tokens a chip.
constexpr const char* kMaxtextTpu = R"({"model": "llama3-8b", "cluster": "tpu-v5e-256",
    "plan": {"framework": "maxtext", "dp": 256, "zero": 3, "global_batch": 256, "seq_len": 8192}})";
const std::vector<Override> kXlaTwoLayers{{"model.layers", "2"}};

std::vector<Override> xla_with(std::vector<Override> base, const std::vector<Override>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

// A block-sparse kernel computes every block that holds a pair in full: one
// token blocks give the exact causal count; 512-token blocks over 8192
// tokens the 16·17/2 blocks on and under the diagonal; a window of 1024
// in blocks of 1024 the first block and two key blocks for every later one.
TEST(XlaKernels, BlockPairsCoverTheMaskInWholeBlocks) {
  ModelSpec m;
  m.layers = 6;
  m.attention_window = 1024;
  m.global_every = 6;  // layer 5 global, 0-4 windowed
  const int64_t s = 8192;
  EXPECT_DOUBLE_EQ(m.attention_block_pairs(5, s, 1, 1), m.attention_pairs(5, s));
  EXPECT_DOUBLE_EQ(m.attention_block_pairs(0, s, 1, 1), m.attention_pairs(0, s));
  EXPECT_DOUBLE_EQ(m.attention_block_pairs(5, s, 512, 512), 16.0 * 17 / 2 * 512 * 512);
  EXPECT_DOUBLE_EQ(m.attention_block_pairs(0, s, 1024, 1024), 1024.0 * 1024 + 7.0 * 1024 * 2048);
  // Unequal blocks: 1024 queries against 512-key blocks sees 2(i+1) of them.
  EXPECT_DOUBLE_EQ(m.attention_block_pairs(5, s, 1024, 512), 1024.0 * 512 * 2 * (8.0 * 9 / 2));
  for (const int64_t layer : {0, 5}) {
    double last = m.attention_pairs(layer, s);
    for (int64_t b = 1; b <= 4096; b *= 2) {
      const double pairs = m.attention_block_pairs(layer, s, b, b);
      EXPECT_GE(pairs, last) << layer << " " << b;
      last = pairs;
    }
  }
}

// MaxText's "autoselected" attention is splash on TPUs (cuDNN through
// Transformer Engine on GPUs). Its ops carry the FLOPs it executes: the
// forward's two matmuls over whole blocks; the backward without the fused
// kernel seven (dkv: 4, dq: 3), with it five. Model FLOPs stay the causal
// count, 2 and 4 matmuls.
TEST(XlaKernels, MaxtextOnTpuRunsSplashAndCountsTheFlopsItExecutes) {
  const Scenario s = testing::scenario(kMaxtextTpu, kXlaTwoLayers);
  EXPECT_EQ(s.plan.attention_kernel, AttentionKernel::kSplash);
  const Program p = stage0(s);
  const double heads = 32, d = 128, seq = 8192;
  const double per_pair = 2.0 * heads * d;  // one matmul's FLOPs per query-key pair
  const double exact = seq * (seq + 1) / 2, blocks = 16.0 * 17 / 2 * 512 * 512;
  const std::vector<OpId> fwd = named(p, "attention", 0, 0, Pass::kForward);
  const std::vector<OpId> bwd = named(p, "attention", 0, 0, Pass::kBackward);
  ASSERT_FALSE(fwd.empty());
  ASSERT_FALSE(bwd.empty());
  EXPECT_EQ(p.op(fwd.front()).kernel, AttentionKernel::kSplash);
  EXPECT_DOUBLE_EQ(p.op(fwd.front()).flops.value(), 2 * per_pair * blocks);
  EXPECT_DOUBLE_EQ(p.op(fwd.front()).model_flops.value(), 2 * per_pair * exact);
  EXPECT_DOUBLE_EQ(p.op(bwd.back()).flops.value(), 7 * per_pair * blocks);
  EXPECT_DOUBLE_EQ(p.op(bwd.back()).model_flops.value(), 4 * per_pair * exact);

  const Scenario fused = testing::scenario(kMaxtextTpu, xla_with(kXlaTwoLayers, {{"plan.splash_fused_backward", "true"},
                                                                                 {"plan.splash_block_q_dkv", "1024"}}));
  const Program pf = stage0(fused);
  const double dkv_blocks = 1024.0 * 512 * 2 * (8.0 * 9 / 2);
  EXPECT_DOUBLE_EQ(pf.op(named(pf, "attention", 0, 0, Pass::kBackward).back()).flops.value(),
                   5 * per_pair * dkv_blocks);

  const Scenario gpu = testing::scenario(R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
      "plan": {"framework": "maxtext", "dp": 64, "zero": 3, "global_batch": 64, "seq_len": 8192}})",
                                         kXlaTwoLayers);
  EXPECT_EQ(gpu.plan.attention_kernel, AttentionKernel::kCudnn);
}

// use_iota_embed: the lookup is dot(one_hot(ids), table), its gradient the
// transposed product: 2·T·V·h FLOPs each way, none of them model FLOPs.
TEST(XlaKernels, IotaEmbeddingIsAMatmulOfNoModelFlops) {
  const Scenario lookup = testing::scenario(kMaxtextTpu, kXlaTwoLayers);
  EXPECT_TRUE(named(stage0(lookup), "embedding one-hot").empty());
  const Scenario s = testing::scenario(kMaxtextTpu, xla_with(kXlaTwoLayers, {{"plan.embedding_matmul", "true"}}));
  const Program p = stage0(s);
  const double T = 8192, V = static_cast<double>(padded_vocab(s.model, 1)), h = 4096;
  const std::vector<OpId> fwd = named(p, "embedding one-hot");
  const std::vector<OpId> bwd = named(p, "embedding one-hot wgrad");
  ASSERT_EQ(fwd.size(), 1u);
  ASSERT_EQ(bwd.size(), 1u);
  for (const OpId i : {fwd.front(), bwd.front()}) {
    EXPECT_EQ(p.op(i).compute, ComputeKind::kMatmul);
    EXPECT_DOUBLE_EQ(p.op(i).flops.value(), 2 * T * V * h);
    EXPECT_DOUBLE_EQ(p.op(i).model_flops.value(), 0.0);
  }
  EXPECT_EQ(p.op(fwd.front()).pass, Pass::kForward);
  EXPECT_EQ(p.op(bwd.front()).pass, Pass::kBackward);
  EXPECT_EQ(p.op(fwd.front()).bytes_read.value(), static_cast<int64_t>(V * h * 2 + T * 4));
}

// MaxText tags query_proj and key_proj after the qk-norms and the rotary
// embedding (layers/attentions.py): a policy that keeps (or offloads) both
// holds the rotated queries and keys, so the backward does not rotate them
// again; naming only one of them holds that projection, and the rotation
// runs again.
TEST(XlaKernels, MaxtextKeepsQueriesAndKeysAfterTheRotation) {
  auto rope_again = [](const std::string& keep) {
    const Program p = stage0(testing::scenario(
        kMaxtextTpu, xla_with(kXlaTwoLayers, {{"plan.recompute", "custom"}, {"plan.recompute_keep", keep}})));
    return named(p, "rope", 1, 0, Pass::kRecompute).size();
  };
  EXPECT_EQ(rope_again(R"(["query_proj", "key_proj", "value_proj"])"), 0U);
  EXPECT_EQ(rope_again(R"(["query_proj", "value_proj"])"), 1U);
  EXPECT_EQ(rope_again(R"(["qkv_proj"])"), 1U);  // the fused projection, tagged before the rotation
  const Program offload = stage0(testing::scenario(
      kMaxtextTpu,
      xla_with(kXlaTwoLayers, {{"plan.recompute", "custom"},
                               {"plan.recompute_offload", R"(["query_proj", "key_proj", "value_proj"])"}})));
  EXPECT_TRUE(named(offload, "rope", 1, 0, Pass::kRecompute).empty());
}

// Vocabulary tiling adds each chunk's table gradient into an accumulator.
// MaxText's backward scan carries one of the gathered table in the
// parameters' dtype (fp32), read and written every chunk: 16 x V x h x (4 +
// 4) bytes. PyTorch's autograd adds each later chunk's bf16 gradient into
// the first: (16 - 1) x V x h x (2 + 2) read, as many written. Untiled,
// nothing is added.
TEST(XlaKernels, VocabularyTilingAccumulatesTheTablesGradientPerChunk) {
  for (const char* fw : {"maxtext", "torchtitan"}) {
    const Scenario s =
        testing::scenario(kMaxtextTpu, xla_with(kXlaTwoLayers, {{"plan.framework", fw}, {"plan.vocab_tiling", "16"}}));
    const Program p = stage0(s);
    const int64_t table = padded_vocab(s.model, 1) * 4096;
    const std::vector<OpId> acc = named(p, "vocab tile grad accumulate");
    ASSERT_EQ(acc.size(), 1u) << fw;
    const bool scan = std::string(fw) == "maxtext";
    const int64_t bytes = scan ? 16 * table * 4 : 15 * table * 4;
    EXPECT_EQ(p.op(acc.front()).bytes_read.value(), bytes) << fw;
    EXPECT_EQ(p.op(acc.front()).bytes_written.value(), bytes) << fw;
    EXPECT_EQ(p.op(acc.front()).pass, Pass::kBackward) << fw;
  }
  EXPECT_TRUE(named(stage0(testing::scenario(kMaxtextTpu, kXlaTwoLayers)), "vocab tile grad accumulate").empty());
}

}  // namespace
}  // namespace shardsim
