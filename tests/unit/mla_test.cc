// Multi-head latent attention (ModelSpec::mla): DeepSeek-V3's published
// parameter counts, the attention core's FLOPs over the query-key and value
// widths, conservation of the step's FLOPs, the latents' projections and
// what the loader refuses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "program_queries.h"
#include "shardsim/core/error.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"
#include "shardsim/workloads/model.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

using testing::named;
using testing::stage0;

// DeepSeek-V3 (arXiv 2412.19437, section 4.2 and its config.json): 128
// heads, query latent 1536, key-value latent 512, key heads of 128 + 64
// rotary, value heads of 128.
const std::string kModel = R"({"name": "deepseek-v3-mla", "layers": 61, "hidden": 7168, "ffn_hidden": 18432,
    "heads": 128, "head_dim": 128, "vocab": 129280, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope",
    "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "v_head_dim": 128},
    "moe": {"experts": 256, "top_k": 8, "shared_experts": 1, "expert_ffn_hidden": 2048, "first_dense_layers": 3}})";

std::string scenario_json(const std::string& plan) {
  return R"({"model": )" + kModel + R"(, "cluster": {"chip": "h100-sxm", "devices": 64,
      "fabric": {"kind": "nvswitch_fat_tree"}}, "plan": )" +
         plan + "}";
}

TEST(Mla, DeepSeekV3HasItsPublishedParameterCounts) {
  const Scenario s = testing::scenario(scenario_json(R"({"dp": 64, "global_batch": 64, "seq_len": 4096})"));
  const ParamCount c = count_params(s.model);
  // "671B total parameters with 37B activated for each token" (the MTP
  // module, which the count leaves out, adds 14B).
  EXPECT_NEAR(static_cast<double>(c.total()) / 671e9, 1.0, 0.005) << c.total();
  EXPECT_NEAR(static_cast<double>(c.matmul() + c.embedding) / 37e9, 1.0, 0.02) << c.matmul();
  // The figures docs/model.md quotes: 671.0B and 37.6B.
  EXPECT_EQ(c.total(), int64_t{671026404352});
  EXPECT_EQ(c.matmul() + c.embedding, int64_t{37551276032});
  // One layer's attention: q 7168x1536 + 1536x(128x192), kv 7168x576 +
  // 512x(128x256), o (128x128)x7168.
  EXPECT_EQ(c.attention, 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168);
}

TEST(Mla, AttentionRunsOverTheQueryKeyAndValueWidths) {
  const Scenario s = testing::scenario(scenario_json(R"({"dp": 64, "global_batch": 64, "seq_len": 4096})"),
                                       {{"model.layers", "4"}, {"model.moe.first_dense_layers", "1"}});
  EXPECT_EQ(s.model.qk_head_dim(), 192);
  EXPECT_EQ(s.model.v_head_dim(), 128);
  const Program p = stage0(s);
  const std::vector<OpId> fwd = named(p, "attention", 0, 0, Pass::kForward);
  ASSERT_EQ(fwd.size(), 1u);
  // 2 FLOPs per multiply-add over QK^T (192 wide) and AV (128 wide) for
  // each of 128 heads and 4096·4097/2 causal pairs.
  const double pairs = 4096.0 * 4097.0 / 2.0;
  EXPECT_DOUBLE_EQ(p.op(fwd.front()).flops.value(), 2.0 * 128 * (192 + 128) * pairs);
  const std::vector<OpId> bwd = named(p, "attention", 0, 0, Pass::kBackward);
  ASSERT_EQ(bwd.size(), 1u);
  EXPECT_DOUBLE_EQ(p.op(bwd.front()).flops.value(), 2 * p.op(fwd.front()).flops.value());
  // The output projection reads 128 value heads of 128.
  const std::vector<OpId> out = named(p, "attn out", 0, 0, Pass::kForward);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(p.op(out.front()).k, 128 * 128);
}

TEST(Mla, LatentsAreProjectedDownNormedAndUpAndBack) {
  // tp 2: the up and output projections split by head, the down ones run
  // whole on every rank (half of each is model work).
  const Scenario s =
      testing::scenario(scenario_json(R"({"dp": 32, "tp": 2, "sequence_parallel": true, "global_batch": 32,
                                          "seq_len": 4096})"),
                        {{"model.layers", "2"}, {"model.moe.first_dense_layers", "1"}});
  const Program p = stage0(s);
  struct Gemm {
    const char* name;
    int64_t n, k;
    double model_share;
  };
  for (const Gemm& g : {Gemm{"q down", 1536, 7168, 0.5}, Gemm{"q up", 64 * 192, 1536, 1.0},
                        Gemm{"kv down", 512 + 64, 7168, 0.5}, Gemm{"kv up", 64 * 256, 512, 1.0}}) {
    const std::vector<OpId> f = named(p, g.name, 0, 0, Pass::kForward);
    ASSERT_EQ(f.size(), 1u) << g.name;
    const Op& o = p.op(f.front());
    EXPECT_EQ(o.m, 4096) << g.name;  // the gathered sequence
    EXPECT_EQ(o.n, g.n) << g.name;
    EXPECT_EQ(o.k, g.k) << g.name;
    EXPECT_DOUBLE_EQ(o.model_flops.value() / o.flops.value(), g.model_share) << g.name;
    for (const char* grad : {" dgrad", " wgrad"}) {
      EXPECT_EQ(named(p, std::string(g.name) + grad, 0, 0, Pass::kBackward).size(), 1u) << g.name << grad;
    }
  }
  for (const char* norm : {"q latent norm", "kv latent norm"}) {
    EXPECT_EQ(named(p, norm, 0, 0, Pass::kForward).size(), 1u) << norm;
    EXPECT_EQ(named(p, norm, 0, 0, Pass::kBackward).size(), 1u) << norm;
  }
  // No GQA projections.
  EXPECT_TRUE(named(p, "k proj").empty());
  EXPECT_TRUE(named(p, "qkv").empty());
}

TEST(Mla, UnderUserbuffersTheAttentionGatherStaysACollective) {
  // The down projections read the plain gathered norm output; the dense
  // MLP's projections still gather theirs in a ring (t - 1 steps).
  const Scenario s =
      testing::scenario(scenario_json(R"({"dp": 32, "tp": 2, "sequence_parallel": true, "global_batch": 32,
                                          "seq_len": 4096, "tp_comm_overlap": true})"),
                        {{"model.layers", "2"}, {"model.moe.first_dense_layers", "1"}});
  const Program p = stage0(s);
  EXPECT_EQ(named(p, "attn all-gather", 0, 0, Pass::kForward).size(), 1u);
  EXPECT_EQ(named(p, "tp ring send", 0, 0, Pass::kForward).size(), 1u);
  EXPECT_TRUE(named(p, "mlp all-gather", 0, 0, Pass::kForward).empty());
}

TEST(Mla, StepFlopsMatchTheClosedForm) {
  for (const char* plan :
       {R"({"dp": 64, "global_batch": 64, "seq_len": 4096})",
        R"({"dp": 8, "tp": 4, "pp": 2, "ep": 8, "sequence_parallel": true, "global_batch": 16, "seq_len": 4096,
            "recompute": "full"})",
        R"({"dp": 16, "cp": 4, "ep": 8, "global_batch": 16, "seq_len": 16384})"}) {
    const Scenario s =
        testing::scenario(scenario_json(plan), {{"model.layers", "4"}, {"model.moe.first_dense_layers", "1"}});
    const ProgramSet ps = lower_training_step(s);
    double f = 0;
    for (const Program& p : ps.stages) {
      for (const Op& o : p.ops()) f += o.model_flops.value();
    }
    f *= static_cast<double>(s.cluster.devices) / static_cast<double>(ps.stages.size());
    EXPECT_NEAR(f / closed_form_model_flops(s.model, s.plan), 1.0, 1e-9) << plan;
  }
}

TEST(Mla, KeptLatentsCostTheirBytes) {
  // Keeping the latents (recompute_keep "mla_latents") over keeping only each
  // layer's input (full recomputation): each latent before and after its
  // norm and the shared rotary key, 2·1536 + 2·512 + 64 bf16 values a token,
  // released with each layer's backward.
  const std::vector<Override> small{{"model.layers", "2"}, {"model.moe.first_dense_layers", "1"}};
  auto released = [](const Program& p) {
    int64_t b = 0;
    for (const MemoryEvent& e : p.memory_events()) {
      if (e.kind == MemKind::kActivation && p.op(e.op).layer == 0 && p.op(e.op).pass == Pass::kBackward) b += e.free;
    }
    return b;
  };
  const std::string full = R"({"dp": 64, "global_batch": 64, "seq_len": 4096, "recompute": "full"})";
  const std::string keep =
      R"({"dp": 64, "global_batch": 64, "seq_len": 4096, "recompute": "custom", "recompute_keep": ["mla_latents"]})";
  const int64_t diff = released(stage0(testing::scenario(scenario_json(keep), small))) -
                       released(stage0(testing::scenario(scenario_json(full), small)));
  EXPECT_EQ(diff, int64_t{4096} * (2 * 1536 + 2 * 512 + 64) * 2);
}

TEST(Mla, TheLoaderRefusesWhatItCannotModel) {
  auto error_of = [](const std::string& json) {
    try {
      (void)testing::scenario(json);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // Keys and values come up per head: kv_heads is heads.
  std::string j = scenario_json(R"({"dp": 64, "global_batch": 64, "seq_len": 4096})");
  j.replace(j.find(R"("head_dim": 128)"), 15, R"("head_dim": 128, "kv_heads": 8)");
  EXPECT_NE(error_of(j).find("/model/kv_heads"), std::string::npos) << error_of(j);
  // head_dim (the keys' width without the rotary part) is not hidden/heads.
  j = scenario_json(R"({"dp": 64, "global_batch": 64, "seq_len": 4096})");
  j.replace(j.find(R"("head_dim": 128, )"), 17, "");
  EXPECT_NE(error_of(j).find("/model/head_dim"), std::string::npos) << error_of(j);
}

// Inference caches the latent and the rotary key (576 values a position and
// layer, whole on each tp rank, where the GQA stand-in caches 8 KV heads of
// 96 twice: 1536) and decodes in the latent's width.
TEST(Mla, DecodeCachesTheLatentAndAttendsInItsWidth) {
  const std::string plan = R"({"phase": "decode", "dp": 8, "tp": 8, "batch": 16, "context_tokens": 4096})";
  const Scenario s = testing::scenario(scenario_json(plan));
  const MemoryReport r = inference_memory(s);
  EXPECT_EQ(testing::component(r, "kv_cache"), int64_t{61} * 16 * 4097 * (512 + 64) * 2);
  const ProgramSet ps = lower_inference_step(s);
  const Program& p = ps.stages.front();
  const std::vector<OpId> att = named(p, "decode attention", 3, 0, Pass::kForward);
  ASSERT_EQ(att.size(), 1u);
  const Op& o = p.op(att.front());
  // 16 heads per rank, 2·((512 + 64) + 512) FLOPs a pair and head, 4097
  // pairs per sequence; the cache read once at 576 values a position.
  EXPECT_DOUBLE_EQ(o.flops.value(), 2.0 * 16 * (2 * 512 + 64) * 16 * 4097);
  EXPECT_EQ(o.bytes_read.value() - 16 * 16 * 576 * 2, int64_t{16} * 4097 * 576 * 2);
  // The key and value up projections fold into the queries and the output.
  EXPECT_EQ(named(p, "q absorb", 3, 0, Pass::kForward).size(), 1u);
  EXPECT_EQ(named(p, "v absorb", 3, 0, Pass::kForward).size(), 1u);
  EXPECT_TRUE(named(p, "kv up").empty());
}

TEST(Mla, PrefillBringsKeysAndValuesUpFromTheLatent) {
  const Scenario s = testing::scenario(scenario_json(R"({"phase": "prefill", "dp": 8, "tp": 8, "batch": 2,
                                                         "prompt_tokens": 2048})"));
  const ProgramSet ps = lower_inference_step(s);
  const Program& p = ps.stages.front();
  const std::vector<OpId> up = named(p, "kv up", 3, 0, Pass::kForward);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(p.op(up.front()).n, 16 * (128 + 128));
  EXPECT_EQ(p.op(up.front()).k, 512);
  const std::vector<OpId> att = named(p, "prefill attention", 3, 0, Pass::kForward);
  ASSERT_EQ(att.size(), 1u);
  EXPECT_DOUBLE_EQ(p.op(att.front()).flops.value(), 2.0 * 16 * (192 + 128) * 2 * (2048.0 * 2049 / 2));
  EXPECT_TRUE(named(p, "q absorb").empty());
}

}  // namespace
}  // namespace shardsim
