// Recomputation policies on the lowered program: which forward ops run again
// before a layer's backward under each framework's semantics, what they cost
// in FLOPs, and the activation memory the program walk finds against the
// closed forms (Korthikanti et al. 2022) and the schedule walk.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

const char* kLlama = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
    "plan": {"dp": 16, "tp": 4, "global_batch": 16, "seq_len": 2048}})";

/// Names of the recomputed ops of layer 3, microbatch 0, with their counts.
std::map<std::string, int> recomputed(const Scenario& s) {
  const Program p = std::move(lower_training_step(s).stages[0]);
  std::map<std::string, int> out;
  for (const Op& o : p.ops()) {
    if (o.pass == Pass::kRecompute && o.layer == 3 && o.microbatch == 0) ++out[std::string(p.name(o))];
  }
  return out;
}

TEST(Recompute, NoneRerunsOnlyTheSequenceParallelGathers) {
  // Megatron keeps the sharded norm outputs and all-gathers them again for
  // the weight gradients (Korthikanti et al. 2022, section 4.2.2).
  EXPECT_TRUE(recomputed(testing::scenario(kLlama)).empty());
  const auto sp = recomputed(testing::scenario(kLlama, {{"plan.sequence_parallel", "true"}}));
  EXPECT_EQ(sp, (std::map<std::string, int>{{"attn all-gather", 1}, {"mlp all-gather", 1}}));
  // A framework that keeps the gathered tensor does not.
  EXPECT_TRUE(
      recomputed(testing::scenario(kLlama, {{"plan.sequence_parallel", "true"}, {"plan.framework", "torchtitan"}}))
          .empty());
}

TEST(Recompute, FullRerunsTheWholeLayer) {
  const Scenario s = testing::scenario(kLlama, {{"plan.recompute", "full"}});
  const Program p = std::move(lower_training_step(s).stages[0]);
  int forward = 0, again = 0;
  for (const Op& o : p.ops()) {
    if (o.layer != 3 || o.microbatch != 0) continue;
    forward += o.pass == Pass::kForward;
    again += o.pass == Pass::kRecompute;
  }
  EXPECT_EQ(again, forward);
}

TEST(Recompute, SelectiveRerunsTheAttentionCore) {
  const auto unfused = recomputed(testing::scenario(
      kLlama, {{"plan.recompute", "selective"}, {"plan.attention", "unfused"}, {"model.dropout", "true"}}));
  EXPECT_EQ(unfused, (std::map<std::string, int>{
                         {"attn scores", 1}, {"attn softmax", 1}, {"attn dropout", 1}, {"attn values", 1}}));
  // With flash attention Megatron still checkpoints the core: it re-runs.
  EXPECT_EQ(recomputed(testing::scenario(kLlama, {{"plan.recompute", "selective"}})),
            (std::map<std::string, int>{{"attention", 1}}));
}

TEST(Recompute, TorchtitanOpSacRerunsTheUnkeptMatmulsAndTheElementwiseOps) {
  // torchtitan keeps attention and the 1st, 3rd, 5th and 7th matmul outputs
  // (wq, wv, w1, w2); PyTorch re-runs the block from its start up to the
  // last tensor the backward needs, skipping what was kept.
  const auto r = recomputed(testing::scenario(kLlama, {{"plan.recompute", "op_sac"},
                                                       {"plan.framework", "torchtitan"},
                                                       {"plan.tp", "1"},
                                                       {"plan.dp", "64"},
                                                       {"plan.global_batch", "64"}}));
  EXPECT_EQ(r, (std::map<std::string, int>{{"attn norm", 1},
                                           {"k proj", 1},
                                           {"rope", 1},
                                           {"attn out", 1},
                                           {"residual", 1},
                                           {"mlp norm", 1},
                                           {"mlp up", 1},
                                           {"swiglu", 1}}));
}

// torchao's NVFP4 GEMM is a custom autograd Function of Triton kernels,
// not an op of torchtitan's save list: under per-op SAC the NVFP4 layers
// keep none of their matmul outputs and re-run them all; the bf16 tail
// layers keep every other one as before. The activations held drop by the
// kept outputs of the NVFP4 layers.
TEST(Recompute, TorchtitanOpSacRecomputesNvfp4Gemms) {
  const char* base = R"({"model": "llama3-8b", "cluster": "dgx-b200-64",
      "plan": {"framework": "torchtitan", "dp": 64, "zero": 3, "global_batch": 64, "seq_len": 2048,
               "recompute": "op_sac"}})";
  auto layer = [](const Scenario& s, int32_t L) {
    const Program p = std::move(lower_training_step(s).stages[0]);
    std::set<std::string> out;
    for (const Op& o : p.ops()) {
      if (o.pass == Pass::kRecompute && o.layer == L && o.microbatch == 0) out.insert(std::string(p.name(o)));
    }
    return out;
  };
  const Scenario bf16 = testing::scenario(base);
  const Scenario fp4 = testing::scenario(base, {{"plan.matmul_dtype", "\"fp4\""}, {"plan.bf16_tail_layers", "4"}});
  const Scenario mx = testing::scenario(base, {{"plan.matmul_dtype", "\"fp8\""}, {"plan.fp8_recipe", "\"mxfp8\""}});
  for (const char* kept : {"q proj", "v proj", "mlp gate"}) {
    EXPECT_EQ(layer(bf16, 3).count(kept), 0u) << kept;
    EXPECT_EQ(layer(mx, 3).count(kept), 0u) << kept;  // aten._scaled_mm: saved
    EXPECT_EQ(layer(fp4, 3).count(kept), 1u) << kept;
    EXPECT_EQ(layer(fp4, 31).count(kept), 0u) << kept;  // a bf16 tail layer
  }
  auto activations = [](const Scenario& s) { return testing::component(training_memory(s), "activations"); };
  EXPECT_LT(activations(fp4), activations(bf16));
  EXPECT_EQ(activations(mx), activations(bf16));
}

TEST(Recompute, JaxClosureRerunsOnlyWhatIsNeeded) {
  // Keeping every matmul output leaves norms, rope and the activation to
  // re-run; XLA drops recomputation nothing reads (the last residual).
  const auto r = recomputed(testing::scenario(kLlama, {{"plan.recompute", "save_dots"},
                                                       {"plan.framework", "maxtext"},
                                                       {"plan.tp", "1"},
                                                       {"plan.dp", "64"},
                                                       {"plan.global_batch", "64"}}));
  EXPECT_EQ(
      r, (std::map<std::string, int>{{"attn norm", 1}, {"rope", 1}, {"residual", 1}, {"mlp norm", 1}, {"swiglu", 1}}));
  // Keeping only q, k, v re-runs the rest of the layer but not them.
  const auto qkv = recomputed(testing::scenario(kLlama, {{"plan.recompute", "save_qkv_proj"},
                                                         {"plan.framework", "maxtext"},
                                                         {"plan.tp", "1"},
                                                         {"plan.dp", "64"},
                                                         {"plan.global_batch", "64"}}));
  EXPECT_EQ(qkv.count("q proj"), 0u);
  EXPECT_EQ(qkv.count("attention"), 1u);
  EXPECT_EQ(qkv.count("mlp down"), 0u);  // nothing reads its output in backward
  EXPECT_EQ(qkv.count("mlp gate"), 1u);
}

// The policy on some layers only: torchtitan's selective layer
// checkpointing wraps one block in k (layers k-1, 2k-1, ... from 0), and
// Megatron-LM's block method the first n layers of each pipeline chunk; the
// others keep everything. The recomputed forward is that share of a full
// policy's, model FLOPs do not change, and activations lie between none and
// every layer recomputed.
TEST(Recompute, SomeLayersOnly) {
  auto recomputed_layers = [](const Scenario& s) {
    std::set<int32_t> layers;
    for (const Program& p : lower_training_step(s).stages) {
      for (const Op& o : p.ops()) {
        if (o.pass == Pass::kRecompute && o.kind == OpKind::kCompute) layers.insert(o.layer);
      }
    }
    return layers;
  };
  auto activations = [](const Scenario& s) { return testing::component(training_memory(s), "activations"); };
  const Scenario every = testing::scenario(kLlama, {{"plan.recompute", "full"}, {"plan.recompute_every", "4"}});
  EXPECT_EQ(recomputed_layers(every), (std::set<int32_t>{3, 7, 11, 15, 19, 23, 27, 31}));
  // Two stages of 16 layers, interleaved in 4 chunks of 4: the first layer of each.
  const Scenario block = testing::scenario(kLlama, {{"plan.recompute", "full"},
                                                    {"plan.recompute_layers", "1"},
                                                    {"plan.pp", "2"},
                                                    {"plan.dp", "8"},
                                                    {"plan.schedule", "\"interleaved\""},
                                                    {"plan.virtual_stages", "4"}});
  EXPECT_EQ(recomputed_layers(block), (std::set<int32_t>{0, 4, 8, 12, 16, 20, 24, 28}));
  const Scenario none = testing::scenario(kLlama);
  const Scenario all = testing::scenario(kLlama, {{"plan.recompute", "full"}});
  EXPECT_LT(activations(all), activations(every));
  EXPECT_LT(activations(every), activations(none));
  // One layer in one is every layer, in the program and in memory.
  const Scenario every1 = testing::scenario(kLlama, {{"plan.recompute", "full"}, {"plan.recompute_every", "1"}});
  EXPECT_EQ(activations(every1), activations(all));
  EXPECT_EQ(recomputed_layers(every1).size(), 32u);
}

TEST(Recompute, ExecutedFlopsAddTheRecomputedForward) {
  // Full recomputation repeats every forward matmul and attention: executed
  // FLOPs are 4/3 of the model FLOPs (the padded vocabulary aside: the
  // head is not recomputed).
  auto executed_over_model = [](const Scenario& s) {
    double model = 0, executed = 0;
    for (const Program& p : lower_training_step(s).stages) {
      for (const Op& o : p.ops()) {
        model += o.model_flops.value();
        if (o.kind == OpKind::kCompute && (o.compute == ComputeKind::kMatmul || o.compute == ComputeKind::kAttention)) {
          executed += o.flops.value();
        }
      }
    }
    return executed / model;
  };
  const double none = executed_over_model(testing::scenario(kLlama));
  const double full = executed_over_model(testing::scenario(kLlama, {{"plan.recompute", "full"}}));
  EXPECT_NEAR(full, none + 1.0 / 3.0 * (1.0 - 0.07), 0.03);
  const double sac =
      executed_over_model(testing::scenario(kLlama, {{"plan.recompute", "op_sac"}, {"plan.framework", "torchtitan"}}));
  EXPECT_GT(sac, none);
  EXPECT_LT(sac, full);
}

/// The program walk's most activations held at once against the schedule
/// walk over the layer graph's kept bytes (two independent accountings);
/// the estimate adds one layer's recomputation on top.
void expect_walk_matches_estimate(const std::string& json, const std::vector<Override>& sets) {
  const Scenario s = testing::scenario(json, sets);
  const ProgramSet ps = lower_training_step(s);
  int64_t act = 0;
  for (const auto& c : training_memory(s).components) {
    if (c.name == "activations") act = c.bytes;
  }
  int64_t walked = 0;
  for (const Program& p : ps.stages) walked = std::max(walked, walk_program_memory(p).max_activations);
  EXPECT_LE(walked, act) << json;
  EXPECT_GE(walked, act - act / 10) << json;
}

TEST(Memory, ProgramWalkMatchesTheScheduleEstimate) {
  const std::string pp = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
      "plan": {"dp": 4, "tp": 4, "pp": 4, "global_batch": 32, "seq_len": 2048, "sequence_parallel": true,
               "schedule": "interleaved", "virtual_stages": 2}})";
  expect_walk_matches_estimate(pp, {});
  expect_walk_matches_estimate(pp, {{"plan.recompute", "selective"}});
  // The policy on some layers only (Recompute.SomeLayersOnly).
  expect_walk_matches_estimate(pp, {{"plan.recompute", "full"}, {"plan.recompute_every", "2"}});
  expect_walk_matches_estimate(pp, {{"plan.recompute", "full"}, {"plan.recompute_layers", "1"}});
  expect_walk_matches_estimate(pp, {{"plan.schedule", "\"1f1b\""}, {"plan.virtual_stages", "1"}});
  expect_walk_matches_estimate(pp, {{"plan.schedule", "\"gpipe\""}, {"plan.virtual_stages", "1"}});
  expect_walk_matches_estimate(R"({"model": "mixtral-8x7b", "cluster": "dgx-h100-64",
      "plan": {"dp": 16, "tp": 2, "pp": 2, "ep": 8, "global_batch": 32, "seq_len": 4096, "sequence_parallel": true}})",
                               {});
}

TEST(Memory, ProgramWalkKeepsExactlyTheScheduleInFlight) {
  // Without recomputation the estimate is the schedule walk of kept bytes
  // alone, so the program walk must equal it exactly.
  const Scenario s = testing::scenario(R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
      "plan": {"dp": 4, "tp": 4, "pp": 4, "global_batch": 32, "seq_len": 2048,
               "schedule": "interleaved", "virtual_stages": 2}})");
  const ProgramSet ps = lower_training_step(s);
  int64_t walked = 0;
  for (const Program& p : ps.stages) walked = std::max(walked, walk_program_memory(p).max_activations);
  int64_t act = 0;
  for (const auto& c : training_memory(s).components) {
    if (c.name == "activations") act = c.bytes;
  }
  EXPECT_EQ(walked, act);
}

}  // namespace
}  // namespace shardsim
