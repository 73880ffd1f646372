// Post-norms (ModelSpec::post_norms: Gemma 2 and 3, MaxText's
// use_post_attn_norm and use_post_ffw_norm): a norm of each block's output
// before its residual add. Against closed forms: two more norm kernels a
// layer each way, their inputs (the attention output projection's and the
// MLP down projection's outputs) kept for the norms' backward, two more norm
// gains a layer, and under a JAX policy that keeps only the layer input the
// down projection recomputed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "program_queries.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"
#include "shardsim/workloads/model.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

using testing::named;
using testing::stage0;

// Llama 3 8B cut to two layers on one H100 node, FSDP, nothing recomputed.
constexpr const char* kPostNormNode =
    R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 8, "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
    "plan": {"framework": "torchtitan", "dp": 8, "zero": 3, "global_batch": 8, "seq_len": 4096,
             "recompute": "none"}})";
const std::vector<Override> kPostNormTwoLayers{{"model.layers", "2"}};

std::vector<Override> post_norm_with(std::vector<Override> base, const std::vector<Override>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

TEST(PostNorms, TwoNormsEachWayWhoseInputsAreKept) {
  const Scenario pre = testing::scenario(kPostNormNode, kPostNormTwoLayers);
  const Scenario post =
      testing::scenario(kPostNormNode, post_norm_with(kPostNormTwoLayers, {{"model.post_norms", "true"}}));
  const Program a = stage0(pre), b = stage0(post);
  for (const char* name : {"attn post norm", "mlp post norm"}) {
    for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
      EXPECT_TRUE(named(a, name, 1, 0, pass).empty()) << name;
      EXPECT_EQ(named(b, name, 1, 0, pass).size(), 1U) << name;
    }
  }
  // The norms' backward reads their inputs: the attention output
  // projection's and the down projection's outputs, T·h bf16 each, a layer.
  const int64_t T = 4096, h = post.model.hidden, layers = 2;
  EXPECT_EQ(testing::component(training_memory(post, lower_training_step(post)), "activations") -
                testing::component(training_memory(pre, lower_training_step(pre)), "activations"),
            layers * 2 * T * h * 2);
  // The program-free estimate agrees.
  EXPECT_EQ(testing::component(training_memory(post), "activations") -
                testing::component(training_memory(pre), "activations"),
            layers * 2 * T * h * 2);
  // Two more RMSNorm gains a layer.
  EXPECT_EQ(count_params(post.model).total() - count_params(pre.model).total(), layers * 2 * h);
}

// MaxText keeping only the layer input (remat "custom", decoder_layer_input):
// XLA rebuilds what the backward reads. The MLP norm reads the first
// residual sum, so the attention output projection (and, with post-norms,
// its norm) runs again either way; the MLP post-norm's input is the down
// projection's output, which nothing else reads: with post-norms that GEMM
// runs again too.
TEST(PostNorms, JaxRematRecomputesTheDownProjectionForItsNorm) {
  const std::vector<Override> maxtext =
      post_norm_with(kPostNormTwoLayers, {{"plan.framework", "maxtext"},
                                          {"plan.recompute", "custom"},
                                          {"plan.recompute_keep", "[\"decoder_layer_input\"]"}});
  const Program a = stage0(testing::scenario(kPostNormNode, maxtext));
  const Program b = stage0(testing::scenario(kPostNormNode, post_norm_with(maxtext, {{"model.post_norms", "true"}})));
  EXPECT_EQ(named(a, "attn out", 1, 0, Pass::kRecompute).size(), 1U);
  EXPECT_EQ(named(b, "attn out", 1, 0, Pass::kRecompute).size(), 1U);
  EXPECT_TRUE(named(a, "mlp down", 1, 0, Pass::kRecompute).empty());
  EXPECT_EQ(named(b, "mlp down", 1, 0, Pass::kRecompute).size(), 1U);
  EXPECT_EQ(named(b, "attn post norm", 1, 0, Pass::kRecompute).size(), 1U);
  EXPECT_TRUE(named(b, "mlp post norm", 1, 0, Pass::kRecompute).empty());  // its output is not read
}

// An inference step norms both blocks' outputs too, every token's.
TEST(PostNorms, InferenceNormsBothBlocksOutputs) {
  const Scenario s = testing::scenario(
      R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 1,
          "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 1}}, "plan": {"phase": "decode", "batch": 16,
          "context_tokens": 1024}})",
      post_norm_with(kPostNormTwoLayers, {{"model.post_norms", "true"}}));
  const Program p = std::move(lower_inference_step(s).stages[0]);
  for (const char* name : {"attn post norm", "mlp post norm"}) {
    const std::vector<OpId> ops = named(p, name);
    ASSERT_EQ(ops.size(), 2U) << name;
    EXPECT_EQ(p.op(ops.front()).bytes_read.value(), 16 * s.model.hidden * 2);
  }
}

}  // namespace
}  // namespace shardsim
