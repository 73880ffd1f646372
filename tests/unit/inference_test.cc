// Inference steps against closed forms, and the serving simulation's
// invariants. The closed forms are derived here from the model's shape, not
// from the lowering: a decode step reads every weight of the replica's shard
// once and each sequence's KV cache once (Pope et al. 2022, "Efficiently
// Scaling Transformer Inference", section 2; the scaling book's inference
// chapter), so at small batch its time is those bytes over HBM bandwidth.
#include <gtest/gtest.h>

#include <cmath>
#include <string_view>

#include "shardsim/app/step.h"
#include "shardsim/core/error.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"
#include "shardsim/workloads/serving.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

const char* kDecode8b = R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 1,
  "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 1}},
  "plan": {"phase": "decode", "batch": 1, "context_tokens": 1024}})";

/// Weight bytes a decode step reads: every matmul weight (the embedding
/// table is a row lookup; the LM head is read whole), by the model's shape.
double decode_weight_bytes(const ModelSpec& m, int64_t tp, int bytes_per_weight) {
  const double h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const double q = static_cast<double>(m.heads * m.head_dim), kv = static_cast<double>(m.kv_heads * m.head_dim);
  const double per_layer = h * (q + 2 * kv) + q * h + 3 * h * f;  // qkv, out, SwiGLU gate/up/down
  const double head = static_cast<double>(m.vocab) * h;
  return bytes_per_weight * (static_cast<double>(m.layers) * per_layer + head) / static_cast<double>(tp);
}

/// Kernels of a dense decode step, each paying the chip's per-kernel time in
/// a CUDA graph: per layer two norms, QKV, RoPE + KV append, attention, the
/// output projection, MLP up, its activation and MLP down; then the
/// embedding, the final norm, the LM head and sampling. The matmuls (four a
/// layer and the head) and the attention, bound by the bytes they read, pay
/// the chip's extra for such kernels on top.
double decode_kernel_s(const ModelSpec& m, const ChipSpec& c) {
  return static_cast<double>(9 * m.layers + 4) * c.graph_launch_overhead.seconds() +
         static_cast<double>(4 * m.layers + 1) * c.memory_bound_matmul_extra.seconds() +
         static_cast<double>(m.layers) * c.memory_bound_attention_extra.seconds();
}

double kv_bytes(const ModelSpec& m, int64_t batch, int64_t positions, int64_t tp, int bytes_per_elem) {
  return static_cast<double>(bytes_per_elem) * static_cast<double>(m.layers * batch * positions) * 2.0 *
         static_cast<double>(m.kv_heads * m.head_dim) / static_cast<double>(tp);
}

// The issue's bar: a memory-bound decode within 5% of (weights + KV) / HBM
// bandwidth, with the chip's memory efficiency (its calibration factor)
// taken out, plus each kernel's fixed time in the CUDA graph.
TEST(Inference, SmallBatchDecodeTakesWeightsPlusKvOverHbmBandwidth) {
  for (int64_t ctx : {128, 1024, 8192}) {
    const Scenario s = testing::scenario(kDecode8b, {{"plan.context_tokens", std::to_string(ctx)}});
    const double t = run_training_step(s, {}).report.step_time_s;
    const ChipSpec& c = s.cluster.chip;
    const double bytes = decode_weight_bytes(s.model, 1, 2) + kv_bytes(s.model, 1, ctx + 1, 1, 2);
    const double expected = bytes / (c.hbm_bandwidth.value() * c.memory_efficiency) + decode_kernel_s(s.model, c);
    EXPECT_NEAR(t / expected, 1.0, 0.05) << "context " << ctx << ": " << t << " s against " << expected << " s";
  }
}

// Weight-only int8 halves the decoder's weight bytes (the LM head stays in
// bf16, as quantized checkpoints keep it); an fp8 KV cache halves the KV
// bytes: both show in a memory-bound step.
TEST(Inference, QuantisedWeightsAndCacheReadFewerBytes) {
  const Scenario bf16 = testing::scenario(kDecode8b, {{"plan.context_tokens", "32768"}, {"plan.batch", "8"}});
  const Scenario int8 = testing::scenario(
      kDecode8b, {{"plan.context_tokens", "32768"}, {"plan.batch", "8"}, {"plan.weight_dtype", "int8"}});
  const Scenario fp8kv =
      testing::scenario(kDecode8b, {{"plan.context_tokens", "32768"}, {"plan.batch", "8"}, {"plan.kv_dtype", "fp8"}});
  const double t_bf16 = run_training_step(bf16, {}).report.step_time_s;
  const double t_int8 = run_training_step(int8, {}).report.step_time_s;
  const double t_fp8kv = run_training_step(fp8kv, {}).report.step_time_s;
  const ChipSpec& c = bf16.cluster.chip;
  const double bw = c.hbm_bandwidth.value() * c.memory_efficiency;
  const double head = 2.0 * static_cast<double>(bf16.model.vocab * bf16.model.hidden);
  const double w = decode_weight_bytes(bf16.model, 1, 2) - head, kv = kv_bytes(bf16.model, 8, 32769, 1, 2);
  EXPECT_NEAR(t_bf16 - t_int8, w / 2 / bw, 0.05 * w / 2 / bw);
  EXPECT_NEAR(t_bf16 - t_fp8kv, kv / 2 / bw, 0.05 * kv / 2 / bw);
}

// Tensor parallelism splits the bytes: with 8 GPUs each reads an eighth, so
// the compute part of the step is bounded below by a shard's bytes over the
// raw HBM bandwidth, and the all-reduces add to it.
TEST(Inference, TensorParallelDecodeIsBoundedByTheShardsBytes) {
  const Scenario s = testing::scenario(
      R"({"model": "llama3-70b", "cluster": {"chip": "h100-sxm", "devices": 8, "fabric": {"kind":
      "nvswitch_fat_tree", "gpus_per_node": 8}}, "plan": {"phase": "decode", "tp": 8, "batch": 4,
      "context_tokens": 4096}})");
  const StepRun run = run_training_step(s, {});
  const double bytes = decode_weight_bytes(s.model, 8, 2) + kv_bytes(s.model, 4, 4097, 8, 2);
  EXPECT_GE(run.report.breakdown.compute_s, bytes / s.cluster.chip.hbm_bandwidth.value());
  EXPECT_NEAR(run.report.breakdown.compute_s,
              bytes / (s.cluster.chip.hbm_bandwidth.value() * s.cluster.chip.memory_efficiency) +
                  decode_kernel_s(s.model, s.cluster.chip),
              0.05 * run.report.breakdown.compute_s);
  EXPECT_GT(run.report.breakdown.exposed_comm_s, 0.0);  // 160 all-reduces on the critical path
}

// A mixture-of-experts decode step makes the passes of every MoE kernel
// around its experts, per layer: top-k over the router's logits, the
// permutation of each token's k copies into per-expert rows (reads T·h,
// writes T·k·h) and the weighted un-permutation (reads T·k·h and the k
// weights, writes T·h), in bf16 and over the whole batch on every tp rank
// (TensorRT-LLM's expandInputRows and finalizeMoeRouting kernels).
TEST(Inference, MoeDecodePermutesEveryTokensCopiesOnEveryTpRank) {
  const Scenario s = testing::scenario(
      R"({"model": "mixtral-8x7b", "cluster": {"chip": "h200-sxm", "devices": 2, "fabric": {"kind":
      "nvswitch_fat_tree", "gpus_per_node": 2}}, "plan": {"phase": "decode", "tp": 2, "batch": 256,
      "context_tokens": 1024}})");
  const int64_t T = 256, h = s.model.hidden, k = s.model.moe.top_k;
  const ProgramSet ps = lower_inference_step(s);
  int permutes = 0, unpermutes = 0, topks = 0;
  const Program& p = ps.stages[0];
  for (const Op& o : p.ops()) {
    const std::string_view name = p.name(o);
    if (name == "moe permute") {
      ++permutes;
      EXPECT_EQ(o.bytes_read.value(), T * h * 2);
      EXPECT_EQ(o.bytes_written.value(), T * k * h * 2);
    } else if (name == "moe unpermute") {
      ++unpermutes;
      EXPECT_EQ(o.bytes_read.value(), T * k * h * 2 + T * k * 4);
      EXPECT_EQ(o.bytes_written.value(), T * h * 2);
    } else if (name == "router top-k") {
      ++topks;
    }
  }
  EXPECT_EQ(permutes, s.model.layers);
  EXPECT_EQ(unpermutes, s.model.layers);
  EXPECT_EQ(topks, s.model.layers);
}

// The residual stream and the sampler, from the model's shape: every pre-norm
// after the model's first also adds the branch into the residual (vLLM's
// fused_add_rms_norm reads the branch and the residual, writes the residual
// and its norm: 2·T·h each way in bf16, where layer 0's first norm reads and
// writes T·h), and the tp ranks' logit shards are gathered so that the
// sampler reads every row's whole (padded) vocabulary in fp32.
TEST(Inference, PreNormsAddTheResidualAndTheSamplerReadsTheWholeVocabulary) {
  const Scenario s = testing::scenario(
      R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 4, "fabric": {"kind":
      "nvswitch_fat_tree", "gpus_per_node": 4}}, "plan": {"phase": "decode", "tp": 4, "batch": 64,
      "context_tokens": 1024}})");
  const int64_t T = 64, h = s.model.hidden, V = padded_vocab(s.model, 4);
  const ProgramSet ps = lower_inference_step(s);
  const Program& p = ps.stages[0];
  int64_t norm_read = 0, norm_written = 0;
  int gathers = 0, samples = 0;
  for (const Op& o : p.ops()) {
    const std::string_view name = p.name(o);
    if (name == "attn norm" || name == "mlp norm") {
      norm_read += o.bytes_read.value();
      norm_written += o.bytes_written.value();
    } else if (name == "logits gather") {
      ++gathers;
      EXPECT_EQ(o.kind, OpKind::kCollective);
      EXPECT_EQ(o.collective, CollectiveKind::kAllGather);
      EXPECT_EQ(o.comm_bytes.value(), T * V * 2);
    } else if (name == "sample") {
      ++samples;
      EXPECT_EQ(o.bytes_read.value(), T * V * 4);
    }
  }
  const int64_t passes = 2 * (2 * s.model.layers - 1) + 1;
  EXPECT_EQ(norm_read, passes * T * h * 2);
  EXPECT_EQ(norm_written, passes * T * h * 2);
  EXPECT_EQ(gathers, 1);
  EXPECT_EQ(samples, 1);
}

// plan.custom_all_reduce_kernels names whose thresholds the loader sets: vLLM's
// by default, TensorRT-LLM's engine plugin's with "trtllm" (topology.h
// CustomAllReduce); any other name is an input error naming the field.
TEST(Inference, AllReduceKernelsSetTheEnginesThresholds) {
  const std::string base =
      R"({"model": "llama3-70b", "cluster": {"chip": "h100-sxm", "devices": 8, "fabric": {"kind":
      "nvswitch_fat_tree", "gpus_per_node": 8}}, "plan": {"phase": "decode", "tp": 8, "batch": 64,
      "context_tokens": 1024}})";
  const CustomAllReduce vllm = testing::scenario(base).cluster.collective.custom_all_reduce;
  EXPECT_EQ(vllm.max_bytes, int64_t{8} << 20);
  EXPECT_TRUE(vllm.two_shot);
  const CustomAllReduce trt =
      testing::scenario(base, {{"plan.custom_all_reduce_kernels", "trtllm"}}).cluster.collective.custom_all_reduce;
  EXPECT_EQ(trt.max_bytes, 8'000'000);
  EXPECT_EQ(trt.pair_max_bytes, 16'000'000);
  EXPECT_EQ(trt.one_shot_small_max_bytes, 1'000'000);
  EXPECT_EQ(trt.one_shot_max_bytes, 500'000);
  EXPECT_FALSE(trt.two_shot);
  try {
    testing::scenario(base, {{"plan.custom_all_reduce_kernels", "nccl"}});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("custom_all_reduce_kernels"), std::string::npos) << e.what();
  }
}

// A long prefill is compute-bound: never faster than its FLOPs at peak, and
// the KV cache it leaves is the model's per-token KV size times the tokens.
TEST(Inference, PrefillIsComputeBound) {
  const Scenario s = testing::scenario(
      R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 1, "fabric": {"kind": "nvswitch_fat_tree",
      "gpus_per_node": 1}}, "plan": {"phase": "prefill", "batch": 2, "prompt_tokens": 8192}})");
  const StepRun run = run_training_step(s, {});
  // 2 FLOPs per weight per token, plus causal attention 2·2·L·q·s(s+1)/2 per prompt.
  const ModelSpec& m = s.model;
  const double tokens = 2.0 * 8192;
  const double weights = decode_weight_bytes(m, 1, 1) - static_cast<double>(m.vocab * m.hidden);
  const double attn = 2.0 * 2.0 * static_cast<double>(m.layers * m.heads * m.head_dim) * 8192.0 * 8193.0;
  const double flops = 2.0 * weights * tokens + attn;
  EXPECT_GE(run.report.step_time_s, flops / s.cluster.chip.bf16_peak.value());
  EXPECT_LT(run.report.step_time_s, 2.5 * flops / s.cluster.chip.bf16_peak.value());
  const MemoryReport mem = step_memory(s);
  for (const auto& c : mem.components) {
    if (c.name == "kv_cache") {
      EXPECT_EQ(c.bytes, static_cast<int64_t>(kv_bytes(m, 2, 8192, 1, 2)));
    }
  }
}

const char* kServe = R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 1,
  "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 1}},
  "plan": {"phase": "decode"},
  "serving": {"requests": 200, "rate_per_s": 2, "seed": 3, "prompt_tokens": {"dist": "uniform", "min": 100,
              "max": 1000}, "output_tokens": {"dist": "lognormal", "mean": 100, "sigma": 0.6, "min": 1, "max": 600}}})";

/// Iteration time by a simple linear model, so scheduling tests do not
/// depend on the simulator.
double toy_iteration_s(const IterationShape& sh) {
  return 0.01 + 1e-5 * static_cast<double>(sh.prefill_tokens) + 1e-4 * static_cast<double>(sh.decode_sequences);
}

TEST(Serving, SameSeedSameResult) {
  const Scenario s = testing::scenario(kServe);
  const auto reqs = serving_requests(s);
  const ServeResult a = simulate_serving(s, reqs, toy_iteration_s, [](int64_t) { return 0.0; });
  const ServeResult b = simulate_serving(s, serving_requests(s), toy_iteration_s, [](int64_t) { return 0.0; });
  ASSERT_EQ(a.requests.size(), b.requests.size());
  for (size_t i = 0; i < a.requests.size(); ++i) {
    EXPECT_EQ(a.requests[i].finish_s, b.requests[i].finish_s);
    EXPECT_EQ(a.requests[i].first_token_s, b.requests[i].first_token_s);
  }
  const Scenario other = testing::scenario(kServe, {{"serving.seed", "4"}});
  EXPECT_NE(serving_requests(other).front().arrival_s, reqs.front().arrival_s);
}

// Every request is served: its first token comes after its arrival, it ends
// after its first token, and at light load the replica keeps up with the
// arrivals (output tokens per second = arrival rate x mean output length).
TEST(Serving, EveryRequestCompletesAndLightLoadKeepsUp) {
  const Scenario s = testing::scenario(kServe);
  const auto reqs = serving_requests(s);
  const ServeResult r = simulate_serving(s, reqs, toy_iteration_s, [](int64_t) { return 0.0; });
  double out = 0, first = 1e300, last = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const ServeRequestResult& q = r.requests[i];
    EXPECT_GT(q.first_token_s, q.arrival_s);
    EXPECT_GE(q.finish_s, q.first_token_s);
    // A request generating n tokens needs at least n - 1 decode iterations.
    EXPECT_GE(q.finish_s - q.first_token_s, (static_cast<double>(q.output_tokens) - 1) * 0.01 - 1e-9);
    out += static_cast<double>(q.output_tokens);
    first = std::min(first, q.arrival_s);
    last = std::max(last, q.finish_s);
  }
  const double offered = s.serving.rate_per_s * out / static_cast<double>(reqs.size());
  EXPECT_NEAR(out / (last - first), offered, 0.1 * offered);
}

// A KV cache too small for the offered load forces preemptions, and the
// preempted requests still produce all their tokens.
TEST(Serving, FullCachePreemptsAndRecovers) {
  const Scenario s = testing::scenario(kServe, {{"serving.kv_memory_fraction", "0.22"}, {"serving.rate_per_s", "50"}});
  const auto reqs = serving_requests(s);
  const ServeResult r = simulate_serving(s, reqs, toy_iteration_s, [](int64_t) { return 0.0; });
  EXPECT_GT(r.preemptions, 0);
  for (const ServeRequestResult& q : r.requests) EXPECT_GT(q.finish_s, 0.0);
  double peak = 0;
  for (const ServeIteration& it : r.iterations) peak = std::max(peak, it.kv_used);
  EXPECT_LE(peak, 1.0);
  EXPECT_GT(peak, 0.9);
}

TEST(Serving, PercentilesInterpolate) {
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({5}, 99), 5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 90), 4.6);
}

}  // namespace
}  // namespace shardsim
