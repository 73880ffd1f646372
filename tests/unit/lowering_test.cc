// Conservation of FLOPs: the lowered program's model FLOPs, summed over all
// devices, equal the closed form 6·N·tokens + causal attention term, for
// several models and plans.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "program_queries.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

using testing::component;

struct Case {
  const char* model;
  const char* cluster;
  const char* plan;
};

/// Model FLOPs of a step: each stage's program runs on devices / pp devices.
double step_model_flops(const ProgramSet& ps, int64_t devices) {
  double f = 0;
  for (const Program& p : ps.stages) {
    for (const Op& o : p.ops()) f += o.model_flops.value();
  }
  return f * static_cast<double>(devices) / static_cast<double>(ps.stages.size());
}

class FlopConservation : public ::testing::TestWithParam<Case> {};

TEST_P(FlopConservation, ProgramMatchesClosedForm) {
  const Case c = GetParam();
  const std::string json =
      std::string(R"({"model": ")") + c.model + R"(", "cluster": )" + c.cluster + R"(, "plan": )" + c.plan + "}";
  const Scenario s = testing::scenario(json);
  const double total = step_model_flops(lower_training_step(s), s.cluster.devices);
  const double expect = closed_form_model_flops(s.model, s.plan);
  EXPECT_NEAR(total / expect, 1.0, 1e-9) << c.model << " " << c.plan;
}

const char* kH100x64 = R"({"chip": "h100-sxm", "devices": 64, "fabric": {"kind": "nvswitch_fat_tree"}})";
const char* kH100x16 = R"({"chip": "h100-sxm", "devices": 16, "fabric": {"kind": "nvswitch_fat_tree"}})";
const char* kV5e = R"("tpu-v5e-256")";

INSTANTIATE_TEST_SUITE_P(
    Presets, FlopConservation,
    ::testing::Values(Case{"llama3-8b", kH100x64, R"({"dp": 64, "zero": 3, "global_batch": 128, "seq_len": 2048})"},
                      Case{"llama3-8b", kH100x64,
                           R"({"dp": 8, "tp": 8, "sequence_parallel": true, "global_batch": 16, "seq_len": 4096})"},
                      Case{"llama2-7b", kH100x64,
                           R"({"dp": 16, "tp": 4, "global_batch": 32, "seq_len": 4096, "microbatch_size": 2})"},
                      Case{"gpt3-175b", kH100x16, R"({"dp": 2, "tp": 8, "global_batch": 4, "seq_len": 2048})"},
                      Case{"llama3-405b", kH100x16, R"({"dp": 1, "tp": 16, "global_batch": 1, "seq_len": 1024})"},
                      Case{"llama2-70b", kV5e,
                           R"({"dp": 32, "tp": 8, "zero": 3, "global_batch": 32, "seq_len": 2048})"},
                      Case{"llama3-8b", kH100x64,
                           R"({"dp": 4, "tp": 4, "pp": 4, "zero": 1, "global_batch": 16, "seq_len": 2048,
                               "schedule": "interleaved", "virtual_stages": 2, "recompute": "full"})"},
                      Case{"gpt3-175b", kH100x64,
                           R"({"dp": 1, "tp": 8, "pp": 8, "global_batch": 8, "seq_len": 2048, "recompute": "selective",
                               "attention": "unfused", "sequence_parallel": true})"},
                      Case{"llama2-70b", kH100x16,
                           R"({"dp": 1, "tp": 4, "pp": 4, "zero": 2, "global_batch": 4, "seq_len": 1024,
                               "schedule": "gpipe", "layers_per_stage": [19, 21, 21, 19]})"},
                      Case{"llama3-8b", kH100x64,
                           R"({"dp": 2, "tp": 4, "pp": 2, "cp": 4, "zero": 3, "global_batch": 4, "seq_len": 32768,
                               "sequence_parallel": true})"},
                      Case{"mixtral-8x7b", kH100x64,
                           R"({"dp": 16, "tp": 2, "pp": 2, "ep": 8, "zero": 1, "global_batch": 32, "seq_len": 4096,
                               "sequence_parallel": true})"},
                      Case{"deepseek-v3", kH100x64,
                           R"({"dp": 32, "pp": 2, "ep": 32, "zero": 1, "global_batch": 32, "seq_len": 4096,
                               "layers_per_stage": [31, 30]})"},
                      Case{"llama3-8b", kH100x64,
                           R"({"dp": 64, "zero": 3, "fsdp_shard_size": 8, "global_batch": 64, "seq_len": 2048,
                               "master_weights_dtype": "bf16", "optimizer_state_dtype": "bf16"})"},
                      Case{"mixtral-8x22b", kH100x64,
                           R"({"dp": 8, "tp": 8, "ep": 8, "zero": 3, "global_batch": 8, "seq_len": 2048,
                               "sequence_parallel": true})"}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string n = std::string(info.param.model) + "_" + std::to_string(info.index);
      for (char& ch : n) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return n;
    });

TEST(Params, MatchPublishedSizes) {
  // Llama 3 8B has 8.03B parameters, 70B 70.6B, 405B 405.9B; GPT-3 175B.
  auto total = [](const char* name) {
    const Scenario s =
        testing::scenario(std::string(R"({"model": ")") + name +
                          R"(", "cluster": "dgx-h100-64", "plan": {"dp": 64, "global_batch": 64, "seq_len": 2048}})");
    return static_cast<double>(count_params(s.model).total());
  };
  EXPECT_NEAR(total("llama3-8b") / 1e9, 8.03, 0.01);
  EXPECT_NEAR(total("llama3-70b") / 1e9, 70.55, 0.05);
  EXPECT_NEAR(total("llama3-405b") / 1e9, 405.8, 0.2);
  EXPECT_NEAR(total("gpt3-175b") / 1e9, 174.6, 0.3);
  // Mixtral 8x7B: 46.7B parameters, 12.9B active; DeepSeek-V3: 671B, 37B.
  EXPECT_NEAR(total("mixtral-8x7b") / 1e9, 46.7, 0.1);
  EXPECT_NEAR(total("deepseek-v3") / 1e9, 671.0, 3.0);
  auto active = [](const char* name) {
    const Scenario s =
        testing::scenario(std::string(R"({"model": ")") + name +
                          R"(", "cluster": "dgx-h100-64", "plan": {"dp": 64, "global_batch": 64, "seq_len": 2048}})");
    const ParamCount pc = count_params(s.model);
    return static_cast<double>(pc.matmul() + pc.embedding);
  };
  EXPECT_NEAR(active("mixtral-8x7b") / 1e9, 12.9, 0.1);
  EXPECT_NEAR(active("deepseek-v3") / 1e9, 37.0, 1.0);
}

TEST(Memory, HybridFsdpShardsWithinItsGroup) {
  const std::string base =
      R"({"model": "llama3-8b", "cluster": "dgx-h100-64", "plan": {"dp": 64, "zero": 3, "global_batch": 64, "seq_len": 2048}})";
  auto opt = [&](const std::vector<Override>& sets) {
    return component(training_memory(testing::scenario(base, sets)), "optimizer_state");
  };
  const int64_t full = opt({});
  const int64_t hybrid = opt({{"plan.fsdp_shard_size", "8"}});
  EXPECT_NEAR(static_cast<double>(hybrid) / static_cast<double>(full), 8.0, 0.01);
  // bf16 optimizer copies halve the optimizer state.
  EXPECT_NEAR(static_cast<double>(
                  opt({{"plan.master_weights_dtype", "\"bf16\""}, {"plan.optimizer_state_dtype", "\"bf16\""}})) /
                  static_cast<double>(full),
              0.5, 0.01);
}

TEST(Lowering, HybridFsdpAllReducesShardsAcrossReplicas) {
  const Scenario s = testing::scenario(
      R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
          "plan": {"dp": 64, "zero": 3, "fsdp_shard_size": 8, "global_batch": 128, "seq_len": 2048}})");
  const Program p = std::move(lower_training_step(s).stages[0]);
  int gathers_in_group = 0, replica_reduces = 0;
  for (const Op& o : p.ops()) {
    if (o.kind != OpKind::kCollective) continue;
    if (o.collective == CollectiveKind::kAllGather && !(o.axes & axis_bit(MeshAxis::kDp))) ++gathers_in_group;
    if (o.collective == CollectiveKind::kAllReduce && o.axes == axis_bit(MeshAxis::kDp)) ++replica_reduces;
  }
  EXPECT_GT(gathers_in_group, 0);
  EXPECT_EQ(replica_reduces, 32 + 2);  // every layer, the embedding and the head, once per step
}

TEST(Memory, GradientBucketsNeverExceedTheGradients) {
  // Two buckets in flight hold at most the gradients once: a bucket larger
  // than every gradient (Megatron 2021's "reduce after the backward", written
  // as a huge bucket) is not counted at its nominal size.
  const char* base = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
      "plan": {"dp": 64, "zero": 1, "global_batch": 64, "seq_len": 4096}})";
  auto comm = [&](const char* bucket) {
    const MemoryReport r = training_memory(testing::scenario(base, {{"plan.grad_bucket_bytes", bucket}}));
    for (const auto& c : r.components) {
      if (c.name == "comm_buffers") return c.bytes;
    }
    return int64_t{-1};
  };
  const int64_t small = comm("25000000"), huge = comm("1000000000000000");
  EXPECT_EQ(small, 2 * 25'000'000);
  EXPECT_GT(huge, small);
  const MemoryReport r = training_memory(testing::scenario(base));
  EXPECT_EQ(huge, component(r, "gradients"));  // the gradients, once
}

TEST(Memory, ExpertParallelismSplitsExpertWeights) {
  const std::string base =
      R"({"model": "mixtral-8x7b", "cluster": "dgx-h100-64", "plan": {"dp": 64, "global_batch": 64, "seq_len": 4096}})";
  auto weights = [&](const char* ep) {
    const MemoryReport r = training_memory(testing::scenario(base, {{"plan.ep", ep}}));
    return component(r, "weights");
  };
  const ParamCount pc = count_params(testing::scenario(base).model);
  // Going from ep 1 to ep 8 leaves one of the eight experts per device.
  EXPECT_EQ(weights("1") - weights("8"), 2 * 32 * 7 * pc.expert);
}

TEST(Memory, GptLayerActivationsAreKorthikanti34sbh) {
  // GPT with dropout, without tensor parallelism, fused attention: 34·s·b·h
  // bytes per layer (plus the 4-byte log-sum-exp per head and token).
  const std::vector<Override> dropout{{"model.dropout", "true"}};
  const Scenario s = testing::scenario(
      R"({"model": "gpt3-175b", "cluster": "dgx-h100-64", "plan": {"dp": 64, "global_batch": 64, "seq_len": 2048}})",
      dropout);
  const double sbh = 2048.0 * 12288;
  const double lse = 4.0 * 2048 * 96;
  EXPECT_DOUBLE_EQ(static_cast<double>(layer_activation_bytes(s.model, s.plan)), 34 * sbh + lse);
  // With tp = 8 and no sequence parallelism: (10 + 24/t)·s·b·h.
  const Scenario t = testing::scenario(
      R"({"model": "gpt3-175b", "cluster": "dgx-h100-64", "plan": {"dp": 8, "tp": 8, "global_batch": 64, "seq_len": 2048}})",
      dropout);
  EXPECT_DOUBLE_EQ(static_cast<double>(layer_activation_bytes(t.model, t.plan)), (10 + 24.0 / 8) * sbh + lse / 8);
  // With sequence parallelism everything is split: 34/t.
  const Scenario u = testing::scenario(
      R"({"model": "gpt3-175b", "cluster": "dgx-h100-64", "plan": {"dp": 8, "tp": 8, "sequence_parallel": true, "global_batch": 64, "seq_len": 2048}})",
      dropout);
  EXPECT_DOUBLE_EQ(static_cast<double>(layer_activation_bytes(u.model, u.plan)), 34.0 / 8 * sbh + lse / 8);
}

TEST(Memory, ContextParallelismSplitsActivations) {
  const std::string base =
      R"({"model": "llama3-8b", "cluster": "dgx-h100-64", "plan": {"dp": 64, "global_batch": 64, "seq_len": 32768}})";
  const Scenario one = testing::scenario(base);
  const Scenario four = testing::scenario(base, {{"plan.cp", "4"}, {"plan.dp", "16"}, {"plan.global_batch", "16"}});
  EXPECT_EQ(layer_activation_bytes(one.model, one.plan), 4 * layer_activation_bytes(four.model, four.plan));
}

// Transformer Engine's ring (AttnFuncWithCPAndKVP2P), cp = 4, per layer and
// microbatch: forward, 3 sends of a KV block (8192 tokens x 8 KV heads x
// (128 + 128) x 2 bytes = 33,554,432); backward, 4 sends: the KV block, then
// KV with the dK, dV partial sums twice, then the sums alone (2·(cp - 1)
// blocks in all), each after the first waiting for the previous step's
// accumulation; the forward ends with one output correction. One microbatch.
TEST(Lowering, RingAttentionPassesEveryKvBlockAround) {
  const Scenario s = testing::scenario(
      R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
          "plan": {"dp": 16, "cp": 4, "global_batch": 16, "seq_len": 32768}})");
  const Program p = std::move(lower_training_step(s).stages[0]);
  constexpr int64_t kBlock = 8192LL * 8 * 256 * 2;
  int fwd = 0, bwd = 0, after_accumulate = 0, corrections = 0;
  int64_t fwd_bytes = 0, bwd_bytes = 0;
  for (OpId id = 0; id < p.size(); ++id) {
    const Op& o = p.op(id);
    if (o.kind == OpKind::kCompute && p.label(id).find("cp out correction") != std::string::npos) ++corrections;
    if (o.kind != OpKind::kSend || o.peer_axis != MeshAxis::kCp) continue;
    if (o.pass == Pass::kForward) {
      ++fwd;
      fwd_bytes += o.comm_bytes.value();
    } else {
      ++bwd;
      bwd_bytes += o.comm_bytes.value();
      for (OpId d : p.deps(id)) after_accumulate += p.label(d).find("cp grad accumulate") != std::string::npos;
    }
  }
  // 32 layers, one microbatch.
  EXPECT_EQ(fwd, 32 * 3);
  EXPECT_EQ(fwd_bytes, 32 * 3 * kBlock);
  EXPECT_EQ(bwd, 32 * 4);
  EXPECT_EQ(bwd_bytes, 32 * 6 * kBlock);
  EXPECT_EQ(after_accumulate, 32 * 3);
  EXPECT_EQ(corrections, 32);
}

TEST(Lowering, TensorParallelAddsFourCollectivesPerLayerAndMicrobatch) {
  const Scenario s = testing::scenario(
      R"({"model": "llama3-8b", "cluster": "dgx-h100-64", "plan": {"dp": 8, "tp": 8, "global_batch": 16, "seq_len": 2048}})");
  const Program p = std::move(lower_training_step(s).stages[0]);
  int tp_collectives = 0;
  for (const Op& o : p.ops()) {
    if (o.kind == OpKind::kCollective && o.axes == axis_bit(MeshAxis::kTp) && o.layer >= 0) ++tp_collectives;
  }
  EXPECT_EQ(tp_collectives, 4 * 32 * 2);  // 2 forward + 2 backward, 32 layers, 2 microbatches
}

TEST(Lowering, DependenciesPointBackwards) {
  const Scenario s = testing::scenario(
      R"({"model": "llama3-8b", "cluster": "dgx-h100-64", "plan": {"dp": 64, "zero": 3, "global_batch": 128, "seq_len": 2048}})");
  const Program p = std::move(lower_training_step(s).stages[0]);
  for (OpId i = 0; i < p.size(); ++i) {
    for (OpId d : p.deps(i)) EXPECT_LT(d, i);
    for (OpId n : p.succs(i)) EXPECT_GT(n, i);
  }
}

// Tied embeddings over pp > 1 (Megatron): the first stage holds the table
// as its own copy, beside the last stage's output layer, and the two sum
// their gradients before the step (_allreduce_word_embedding_grads): each
// end sends the other its whole gradient (fp32: grad_reduce_dtype), and
// Adam waits for it; the middle stages take no part, and with pp 1 the one
// table is counted once. GPT-3 175B at tp 8: 51200 / 8 x 12288 rows.
TEST(Lowering, TiedEmbeddingsOverPipelineStagesSumTheirGradients) {
  const std::string json = R"({"model": "gpt3-175b", "cluster": "dgx-h100-64",
      "plan": {"dp": 1, "tp": 8, "pp": 8, "sequence_parallel": true, "global_batch": 8, "seq_len": 2048}})";
  const Scenario s = testing::scenario(json);
  ASSERT_TRUE(s.model.tied_embeddings);
  constexpr int64_t kRows = 51200LL / 8 * 12288;
  const ProgramSet step = lower_training_step(s);
  for (size_t stage = 0; stage < step.stages.size(); ++stage) {
    const Program& p = step.stages[stage];
    int sends = 0, recvs = 0;
    OpId recv = kNoOp, adam = kNoOp;
    for (OpId i = 0; i < p.size(); ++i) {
      const std::string label = p.label(i);
      const Op& o = p.op(i);
      if (label.find("embedding grad send") != std::string::npos) {
        ++sends;
        EXPECT_EQ(o.comm_bytes.value(), kRows * 4);
        EXPECT_EQ(o.peer, stage == 0 ? -1 : 1);  // round the pp ring to the other end
      }
      if (label.find("embedding grad recv") != std::string::npos) {
        ++recvs;
        recv = i;
      }
      if (p.name(o) == "adam") adam = i;
    }
    const bool end = stage == 0 || stage + 1 == step.stages.size();
    EXPECT_EQ(sends, end ? 1 : 0) << stage;
    EXPECT_EQ(recvs, end ? 1 : 0) << stage;
    if (end) {
      ASSERT_NE(adam, kNoOp);
      const auto deps = p.deps(adam);
      EXPECT_NE(std::find(deps.begin(), deps.end(), recv), deps.end()) << stage;
    }
  }
  // The first stage's weights hold the copy: pp 8 against untied, whose
  // first stage holds its own (untied) table of the same size.
  auto first_stage_weights = [&](const std::vector<Override>& sets) {
    return component(training_memory(testing::scenario(json, sets)), "weights");
  };
  EXPECT_EQ(first_stage_weights({}), first_stage_weights({{"model.tied_embeddings", "false"}}));
}

// On one stage (pp 1) a tied table has two uses and one gradient, whole once
// the embedding's backward has added its part: its reduction waits for that.
// Untied, the head's gradient is reduced as soon as the head's backward
// ends, and the embedding's after its own. Llama 3 8B cut to two layers,
// FSDP over 64 H100s.
TEST(Lowering, ATiedTableIsReducedAfterTheEmbeddingsBackward) {
  const std::string json = R"({"model": "llama3-8b", "cluster": "dgx-h100-64",
      "plan": {"dp": 64, "zero": 3, "global_batch": 256, "seq_len": 2048}})";
  for (const bool tied : {true, false}) {
    const Program p = testing::stage0(
        testing::scenario(json, {{"model.layers", "2"}, {"model.tied_embeddings", tied ? "true" : "false"}}));
    const std::vector<OpId> emb = testing::named(p, "embedding grad", -1, 0, Pass::kBackward);
    ASSERT_EQ(emb.size(), 1u) << tied;
    const std::vector<OpId> rs = testing::named(p, "fsdp reduce-scatter", -1, 0, Pass::kBackward);
    ASSERT_EQ(rs.size(), tied ? 1u : 2u);
    int64_t after_embedding = 0;
    for (OpId r : rs) after_embedding += static_cast<int64_t>(testing::ancestors(p, r).count(emb.front()));
    EXPECT_EQ(after_embedding, 1) << tied;
  }
}

}  // namespace
}  // namespace shardsim
