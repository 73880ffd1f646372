// Low-precision GEMMs of the lowering, against closed forms and properties:
// which GEMMs of a layer run in fp8 or NVFP4 under each recipe, the
// backward's split accumulator, torchao's row-wise rescale, each recipe's
// quantisation kernels and bytes, and the quantised saved inputs.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "program_queries.h"
#include "shardsim/core/error.h"
#include "shardsim/sim/compute_model.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"
#include "shardsim/workloads/model.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

using testing::named;
using testing::stage0;

// fp8: linear layers' GEMMs run in fp8; the head, the router and
// attention's batched products stay bf16.
constexpr const char* kFp8Model = R"({"name": "fp8-test", "layers": 2, "hidden": 1536, "ffn_hidden": 6144,
    "heads": 12, "kv_heads": 4, "head_dim": 128, "vocab": 32000})";
/// The fp8 test model under `recipe` (nullptr: bf16 GEMMs; "nvfp4": fp4
/// GEMMs). The block-scaled recipes (mxfp8, nvfp4) run on 64 B200s, the
/// others on the H100 preset cluster.
std::string fp8_scenario(const char* recipe, const char* extra = "") {
  const std::string r = recipe ? recipe : "";
  const std::string dtype = r.empty()      ? R"("matmul_dtype": "bf16")"
                            : r == "nvfp4" ? R"("matmul_dtype": "fp4")"
                                           : R"("matmul_dtype": "fp8", "fp8_recipe": ")" + r + "\"";
  const bool blackwell = r == "mxfp8" || r == "nvfp4";
  const std::string cluster =
      blackwell ? R"({"chip": "b200", "devices": 64, "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}})"
                : R"("dgx-h100-64")";
  return std::string(R"({"model": )") + kFp8Model + R"(, "cluster": )" + cluster + R"(,
      "plan": {"dp": 64, "zero": 1, "global_batch": 128, "seq_len": 3072, )" +
         dtype + extra + "}}";
}

// torchao's row-wise recipes run each slow-accumulation (gradient) GEMM as
// a tensor-wise cuBLAS GEMM and rescale its bf16 output in a pass of its
// own (torchao/float8/float8_ops.py addmm_float8_unwrapped): one pass per
// fp8 gradient GEMM, reading and writing its output (2 + 2 bytes an element
// compiled); none after bf16 GEMMs (rowwise_gw_hp's wgrad), none for the
// tensor-wise recipe, and none where the gradient GEMMs accumulate fast.
TEST(StackMechanisms, RowwiseGradientGemmsRescaleTheirOutput) {
  auto count = [](const Program& p) {
    int gemms = 0, rescales = 0;
    for (const Op& o : p.ops()) {
      if (o.kind != OpKind::kCompute) continue;
      if (o.compute == ComputeKind::kMatmul && o.split_accumulator) ++gemms;
      if (p.name(o) != "fp8 rowwise rescale") continue;
      ++rescales;
      // Its GEMM, the op before it, wrote the output it rescales.
      const Op& gemm = p.ops()[&o - p.ops().data() - 1];
      EXPECT_EQ(o.bytes_read.value(), gemm.bytes_written.value());
      EXPECT_EQ(o.bytes_written.value(), gemm.bytes_written.value());
    }
    return std::make_pair(gemms, rescales);
  };
  const auto [rw_gemms, rw_rescales] = count(stage0(testing::scenario(fp8_scenario("rowwise"))));
  EXPECT_GT(rw_gemms, 0);
  EXPECT_EQ(rw_rescales, rw_gemms);
  // Two layers, two microbatches, 4 linear nodes: rowwise_gw_hp's dgrads only.
  const auto [hp_gemms, hp_rescales] = count(stage0(testing::scenario(fp8_scenario("rowwise_gw_hp"))));
  EXPECT_EQ(hp_rescales, hp_gemms);
  EXPECT_EQ(hp_rescales, 2 * 2 * 4);
  EXPECT_EQ(count(stage0(testing::scenario(fp8_scenario("tensorwise")))).second, 0);
  EXPECT_EQ(count(stage0(testing::scenario(fp8_scenario("rowwise", R"(, "fp8_backward_fast_accum": true)")))).second,
            0);
}

TEST(StackMechanisms, Fp8RunsLinearGemmsInFp8AndKeepsHeadRouterAndBmmInBf16) {
  const Program p = stage0(testing::scenario(fp8_scenario("delayed", R"(, "attention": "unfused")")));
  int linear = 0, head = 0, bmm = 0;
  for (const Op& o : p.ops()) {
    if (o.kind != OpKind::kCompute || o.compute != ComputeKind::kMatmul) continue;
    const std::string_view n = p.name(o);
    if (n.starts_with("qkv") || n.starts_with("attn out") || n.starts_with("mlp up") || n.starts_with("mlp down")) {
      EXPECT_EQ(o.dtype, DType::kFp8) << n;
      ++linear;
    } else if (n.starts_with("unembedding")) {
      EXPECT_EQ(o.dtype, DType::kBf16) << n;
      ++head;
    } else if (n.starts_with("attn scores") || n.starts_with("attn values")) {
      EXPECT_EQ(o.dtype, DType::kBf16) << n;
      ++bmm;
    }
  }
  // Two layers, two microbatches: 4 linear nodes x (fwd, dgrad, wgrad).
  EXPECT_EQ(linear, 2 * 2 * 4 * 3);
  EXPECT_EQ(head, 2 * 3);
  EXPECT_EQ(bmm, 2 * 2 * (2 + 4));  // scores, values; backward: four products
  // rowwise_gw_hp keeps the weight gradients in bf16.
  const Program g = stage0(testing::scenario(fp8_scenario("rowwise_gw_hp")));
  for (const Op& o : g.ops()) {
    const std::string_view n = g.name(o);
    if (o.compute != ComputeKind::kMatmul || o.kind != OpKind::kCompute || n.starts_with("unembedding")) continue;
    if (n.ends_with("wgrad")) {
      EXPECT_EQ(o.dtype, DType::kBf16) << n;
    }
    if (n.ends_with("dgrad")) {
      EXPECT_EQ(o.dtype, DType::kFp8) << n;
    }
  }
  // The MoE router stays bf16, the experts run in fp8.
  const Program moe = stage0(testing::scenario(R"({"model": "mixtral-8x7b", "cluster": "dgx-h100-64",
      "plan": {"dp": 64, "ep": 8, "global_batch": 64, "seq_len": 2048, "matmul_dtype": "fp8"}})",
                                               {{"model.layers", "1"}}));
  int routers = 0, experts = 0;
  for (const Op& o : moe.ops()) {
    const std::string_view n = moe.name(o);
    if (n.starts_with("router") && o.compute == ComputeKind::kMatmul) {
      EXPECT_EQ(o.dtype, DType::kBf16) << n;
      ++routers;
    }
    if (n.starts_with("experts") && o.compute == ComputeKind::kMatmul) {
      EXPECT_EQ(o.dtype, DType::kFp8) << n;
      ++experts;
    }
  }
  EXPECT_EQ(routers, 3);
  EXPECT_EQ(experts, 6);
}

// The backward's fp8 GEMMs promote partial sums to fp32 (Transformer
// Engine's dgrad and wgrad, torchao's grad GEMMs, Flax's gradients), the
// forward's fast-accumulate; bf16 GEMMs have nothing to choose. On H100 a
// compute-bound split-accumulator GEMM takes 1/0.87 the fast one's time.
TEST(StackMechanisms, Fp8BackwardGemmsUseTheSplitAccumulator) {
  auto count = [](const Program& p) {
    int split = 0, fast = 0;
    for (const Op& o : p.ops()) {
      if (o.kind != OpKind::kCompute || o.compute != ComputeKind::kMatmul || o.dtype != DType::kFp8) continue;
      EXPECT_EQ(o.split_accumulator, o.pass == Pass::kBackward) << p.name(o);
      (o.split_accumulator ? split : fast) += 1;
    }
    return std::pair{split, fast};
  };
  const auto [split, fast] = count(stage0(testing::scenario(fp8_scenario("delayed"))));
  EXPECT_EQ(split, 2 * fast);  // dgrad and wgrad for every forward GEMM
  const Program fast_all = stage0(testing::scenario(fp8_scenario("delayed", R"(, "fp8_backward_fast_accum": true)")));
  for (const Op& o : fast_all.ops()) EXPECT_FALSE(o.split_accumulator) << fast_all.name(o);
  const Program bf16 = stage0(testing::scenario(fp8_scenario(nullptr)));
  for (const Op& o : bf16.ops()) EXPECT_FALSE(o.split_accumulator) << bf16.name(o);

  const Scenario h100 = testing::scenario(fp8_scenario("delayed"));
  Op gemm;
  gemm.compute = ComputeKind::kMatmul;
  gemm.dtype = DType::kFp8;
  gemm.m = gemm.n = gemm.k = 8192;
  gemm.flops = Flops(2.0 * 8192 * 8192 * 8192);
  const double t_fast = (compute_time(gemm, h100.cluster.chip) - microseconds(2.5)).seconds();
  gemm.split_accumulator = true;
  const double t_split = (compute_time(gemm, h100.cluster.chip) - microseconds(2.5)).seconds();
  EXPECT_NEAR(t_split, t_fast / 0.87, 1e-6 * t_split);
}

// NVFP4 with a bf16 tail (torchtitan's mixed recipe): the linear GEMMs of
// the first layers run in fp4 and read half-byte operands with an E4M3
// scale per 16 elements; the last bf16_tail_layers run bf16 GEMMs and no
// quantisation kernels.
TEST(StackMechanisms, Nvfp4LayersAndTheBf16Tail) {
  const Program p = stage0(testing::scenario(fp8_scenario("nvfp4", R"(, "bf16_tail_layers": 1)")));
  int fp4 = 0, tail = 0;
  for (const Op& o : p.ops()) {
    if (o.kind != OpKind::kCompute) continue;
    const std::string_view n = p.name(o);
    if (n == "fp8 quantize") {
      EXPECT_EQ(o.layer, 0) << "a tail layer quantises";
    }
    if (o.compute != ComputeKind::kMatmul || !(n.starts_with("qkv") || n.starts_with("mlp down"))) continue;
    if (o.layer == 0) {
      EXPECT_EQ(o.dtype, DType::kFp4) << n;
      if (o.pass == Pass::kForward && n.starts_with("mlp down")) {
        // [T, f] x [f, h]: (T·f + f·h) elements at 9/16 bytes.
        const int64_t T = 3072, h = 1536, f = 6144;
        EXPECT_EQ(o.bytes_read.value(), (T * f + f * h) * 9 / 16);
      }
      ++fp4;
    } else {
      EXPECT_EQ(o.dtype, DType::kBf16) << n;
      ++tail;
    }
  }
  EXPECT_GT(fp4, 0);
  EXPECT_EQ(tail, fp4);
  // The whole model in fp4 quantises in both layers; bf16 in neither.
  const Program all = stage0(testing::scenario(fp8_scenario("nvfp4")));
  int layer1 = 0;
  for (OpId i : named(all, "fp8 quantize")) layer1 += all.op(i).layer == 1;
  EXPECT_GT(layer1, 0);
}

// Linears that keep their weight-gradient inputs quantised (Transformer
// Engine, torchao's NVFP4Linear): the attention and MLP norm outputs and the
// MLP activation are kept at q bytes per element instead of 2; attention's
// output is kept in bf16 for the attention backward and again quantised for
// the output projection's. fp8: q = 1, so a layer keeps 2·T·h + T·f - T·a·d
// bytes less; NVFP4 (q = 9/16): (1 - 9/32) of those tensors less and 9/32 of
// the attention output more. The bf16 tail keeps bf16.
TEST(StackMechanisms, QuantisedSavedInputsShrinkTheKeptActivations) {
  const int64_t T = 3072, h = 1536, a = 12, d = 128, f = 6144;
  auto kept = [](const char* recipe, const char* extra) {
    const Scenario s = testing::scenario(fp8_scenario(recipe, extra));
    return layer_activation_bytes(s.model, s.plan);
  };
  const int64_t bf16 = kept("delayed", "");
  EXPECT_EQ(bf16, kept(nullptr, ""));  // off: the recipe does not change what is kept
  EXPECT_EQ(bf16 - kept("delayed", R"(, "low_precision_saved_inputs": true)"), 2 * T * h + T * f - T * a * d);
  const int64_t fp4 = kept("nvfp4", R"(, "low_precision_saved_inputs": true)");
  EXPECT_EQ(bf16 - fp4, (2 * T * h * 2 + T * f * 2) * 23 / 32 - T * a * d * 2 * 9 / 32);
  // Megatron-Core's default is on (Transformer Engine).
  const Scenario mc = testing::scenario(fp8_scenario("delayed", R"(, "framework": "megatron-core")"));
  EXPECT_TRUE(mc.plan.low_precision_saved_inputs);
  // The stage's walk of the program agrees with the table: a bf16 tail
  // layer (the second of two) keeps as much as a bf16 plan's.
  auto walked = [](const char* recipe, const char* extra) {
    return walk_program_memory(stage0(testing::scenario(fp8_scenario(recipe, extra)))).max_activations;
  };
  const int64_t w16 = walked(nullptr, "");
  const int64_t w4 = walked("nvfp4", R"(, "low_precision_saved_inputs": true)");
  const int64_t tail = walked("nvfp4", R"(, "low_precision_saved_inputs": true, "bf16_tail_layers": 1)");
  EXPECT_GT(w16, tail);
  EXPECT_GT(tail, w4);
}

// A bf16 GEMM reads bf16 operands whatever the plan's matmul dtype.
TEST(StackMechanisms, Fp8KeepsTheHeadGemmsBf16Traffic) {
  auto head_read = [](const Scenario& s) {
    const Program p = stage0(s);
    const std::vector<OpId> u = named(p, "unembedding", -1, 0, Pass::kForward);
    return u.empty() ? int64_t{-1} : p.op(u.front()).bytes_read.value();
  };
  const int64_t fp8 = head_read(testing::scenario(fp8_scenario("delayed")));
  const int64_t bf16 = head_read(testing::scenario(fp8_scenario(nullptr)));
  EXPECT_EQ(fp8, bf16);
}

/// Bytes of the fp8 quantisation kernels of layer 1, microbatch `mb`, in
/// `pass` (each kernel reads 2/3 and writes 1/3 of its bytes) and their
/// number.
std::pair<int64_t, int> quantize_bytes(const Program& p, int32_t mb, Pass pass) {
  int64_t b = 0;
  int n = 0;
  for (OpId i : named(p, "fp8 quantize", 1, mb, pass)) {
    b += p.op(i).bytes_read.value() + p.op(i).bytes_written.value();
    ++n;
  }
  return {b, n};
}

TEST(StackMechanisms, Fp8QuantisationBytesPerRecipeMatchTheClosedForms) {
  // Shapes of the fp8 test model at tp 1: T tokens, fused qkv and gate/up.
  const int64_t T = 3072, h = 1536, a = 12, kv = 4, d = 128, f = 6144;
  // The linear nodes: qkv and mlp up read a norm's output (TE's
  // LayerNormLinear quantises inside the norm), attn out and mlp down not.
  const int64_t X = T * h + T * a * d + T * h + T * f;                     // their inputs
  const int64_t Xnn = T * a * d + T * f;                                   // inputs not fed by a norm
  const int64_t Y = T * (a + 2 * kv) * d + T * h + T * 2 * f + T * h;      // their outputs
  const int64_t W = h * (a + 2 * kv) * d + a * d * h + h * 2 * f + f * h;  // their weights
  struct Expect {
    const char* recipe;
    int64_t fwd0, fwd1, bwd;  // forward of microbatch 0 and 1, backward
    int ops_fwd1, ops_bwd;
  };
  const Expect cases[] = {
      // Weights cast once per step (cached over microbatches); norm-fed
      // inputs cast by the norm; one cast-transpose per output gradient.
      {"delayed", 4 * Xnn + 4 * W, 4 * Xnn, 4 * Y, 2, 4},
      {"tensorwise", 5 * X + 5 * W, 5 * X + 5 * W, 5 * Y + 3 * X + 3 * W, 4, 4},
      {"rowwise", 3 * X + 3 * W, 3 * X + 3 * W, 6 * Y + 3 * X + 3 * W, 4, 4},
      // Block-scaled casts write their scales too: MXFP8 and blockwise fp8
      // 2 + 1 + 1/32 bytes per element (97/32).
      {"mxfp8", 97 * (X + W) / 32, 97 * (X + W) / 32, 97 * (2 * Y + X + W) / 32, 4, 4},
      {"rowwise_gw_hp", 3 * X + 3 * W, 3 * X + 3 * W, 3 * Y + 3 * W, 4, 4},
      {"blockwise", 97 * (X + W) / 32, 97 * (X + W) / 32, 97 * (2 * Y + X + W) / 32, 4, 4},
      // NVFP4: input and weight into both orientations in the forward (2 + 2
      // x 9/16 = 25/8), only the output gradient in the backward.
      {"nvfp4", 25 * (X + W) / 8, 25 * (X + W) / 8, 25 * Y / 8, 4, 4},
  };
  std::vector<int64_t> step_total;
  for (const Expect& c : cases) {
    const Program p = stage0(testing::scenario(fp8_scenario(c.recipe)));
    EXPECT_EQ(quantize_bytes(p, 0, Pass::kForward).first, c.fwd0) << c.recipe;
    EXPECT_EQ(quantize_bytes(p, 1, Pass::kForward), std::make_pair(c.fwd1, c.ops_fwd1)) << c.recipe;
    EXPECT_EQ(quantize_bytes(p, 1, Pass::kBackward), std::make_pair(c.bwd, c.ops_bwd)) << c.recipe;
    int64_t total = 0;
    for (const Op& o : p.ops()) {
      if (p.name(o) == "fp8 quantize") total += o.bytes_read.value() + o.bytes_written.value();
    }
    step_total.push_back(total);
  }
  // Ordering that holds for any shape: mxfp8 and blockwise cost the same,
  // rowwise a little less (no scales) and nvfp4 less still (half-byte
  // elements), rowwise_gw_hp less (no wgrad casts), delayed the least of
  // those (and for these shapes less than tensorwise).
  EXPECT_EQ(step_total[3], step_total[5]);
  EXPECT_LT(step_total[2], step_total[3]);
  EXPECT_LT(step_total[6], step_total[2]);
  EXPECT_LT(step_total[4], step_total[2]);
  EXPECT_LT(step_total[0], step_total[4]);
  EXPECT_LT(step_total[0], step_total[1]);
  // fp8 parameters drop the weight casts of delayed and tensorwise scaling.
  const Program dp8 = stage0(testing::scenario(fp8_scenario("delayed", R"(, "fp8_param_gather": true)")));
  EXPECT_EQ(quantize_bytes(dp8, 0, Pass::kForward).first, 4 * Xnn);
  const Program tp8 = stage0(testing::scenario(fp8_scenario("tensorwise", R"(, "fp8_param_gather": true)")));
  EXPECT_EQ(quantize_bytes(tp8, 1, Pass::kForward).first, 5 * X);
  EXPECT_EQ(quantize_bytes(tp8, 1, Pass::kBackward).first, 5 * Y + 3 * X);
  // XLA's fusion (fp8_casts_fused, MaxText's default): every producer
  // writes its fp8 copy (1 B an element); attention's output, made by a
  // library call, and the weights are converted by a pass of their own
  // (read 2, write 1); each output gradient's fusion writes its fp8 copy.
  const int64_t attn_out = T * a * d;
  const Program xla = stage0(testing::scenario(fp8_scenario("delayed", R"(, "fp8_casts_fused": true)")));
  EXPECT_EQ(quantize_bytes(xla, 0, Pass::kForward).first, X + 2 * attn_out + 3 * W);
  EXPECT_EQ(quantize_bytes(xla, 1, Pass::kForward), std::make_pair(X + 2 * attn_out, 4));
  EXPECT_EQ(quantize_bytes(xla, 1, Pass::kBackward), std::make_pair(Y, 4));
  EXPECT_TRUE(testing::scenario(fp8_scenario("delayed", R"(, "framework": "maxtext")")).plan.fp8_casts_fused);
  // bf16 runs none.
  const Program bf16 = stage0(testing::scenario(fp8_scenario(nullptr)));
  EXPECT_TRUE(named(bf16, "fp8 quantize").empty());
}

}  // namespace
}  // namespace shardsim
