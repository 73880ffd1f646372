// The serving scheduler's benchmark modes and engine policies against what
// they promise: a burst queues every request before the first iteration, a
// closed loop never has more than its clients in flight, output reservation
// never preempts, inter-token latencies are the gaps a request sees, and the
// engines' defaults are their sources' (serving_engines.cc). Iteration times
// come from a linear toy model so the tests do not depend on the simulator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "shardsim/workloads/framework.h"
#include "shardsim/workloads/serving.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

std::string scenario_text(const std::string& serving, const std::string& chip = "h100-sxm", int tp = 1) {
  return R"({"model": "llama3-8b", "cluster": {"chip": ")" + chip + R"(", "devices": )" + std::to_string(tp) +
         R"(, "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": )" + std::to_string(tp) +
         R"(}}, "plan": {"phase": "decode", "tp": )" + std::to_string(tp) + R"(}, "serving": )" + serving + "}";
}

// A burst: every request arrives at 0 and the first iteration takes as many
// prompts as the token budget allows, not only the first request.
TEST(ServingModes, BurstQueuesEveryRequestBeforeTheFirstIteration) {
  const Scenario s = testing::scenario(scenario_text(
      R"({"arrivals": "burst", "requests": 40, "prompt_tokens": 100, "output_tokens": 20, "max_batched_tokens": 1000})"));
  const auto reqs = serving_requests(s);
  for (const auto& q : reqs) EXPECT_EQ(q.arrival_s, 0.0);
  const ServeResult r = simulate_serving(s, reqs, testing::serving_toy_iteration_s, testing::no_kv_transfer);
  ASSERT_FALSE(r.iterations.empty());
  EXPECT_EQ(r.iterations.front().start_s, 0.0);
  EXPECT_EQ(r.iterations.front().shape.prefill_tokens, 1000);  // 10 prompts of 100 fill the budget
  for (const auto& q : r.requests) EXPECT_GT(q.finish_s, 0.0);
}

// A closed loop of C clients: at most C requests between issue and finish at
// any time, each later request issued exactly when an earlier one finished.
TEST(ServingModes, ClosedLoopKeepsItsClientsBusy) {
  const Scenario s = testing::scenario(scenario_text(
      R"({"arrivals": "closed_loop", "concurrency": 4, "requests": 30, "prompt_tokens": {"dist": "uniform", "min": 10,
          "max": 300}, "output_tokens": {"dist": "uniform", "min": 5, "max": 50}})"));
  const ServeResult r =
      simulate_serving(s, serving_requests(s), testing::serving_toy_iteration_s, testing::no_kv_transfer);
  std::vector<double> finishes;
  for (const auto& q : r.requests) finishes.push_back(q.finish_s);
  for (size_t i = 0; i < r.requests.size(); ++i) {
    const double t = r.requests[i].arrival_s;
    if (i < 4) {
      EXPECT_EQ(t, 0.0);
    } else {
      EXPECT_NE(std::find(finishes.begin(), finishes.end(), t), finishes.end()) << "request " << i;
    }
    int in_flight = 0;  // requests issued at or before t and not finished by t
    for (const auto& q : r.requests) in_flight += q.arrival_s <= t && q.finish_s > t;
    EXPECT_LE(in_flight, 4);
  }
}

// GUARANTEED_NO_EVICT: a cache too small for the load admits fewer requests
// but never preempts; on demand, the same load preempts.
TEST(ServingModes, ReservingTheOutputNeverPreempts) {
  const std::string load =
      R"("requests": 200, "rate_per_s": 50, "seed": 3, "kv_memory_fraction": 0.22,
         "prompt_tokens": {"dist": "uniform", "min": 100, "max": 1000}, "output_tokens": {"dist": "uniform", "min": 100, "max": 600})";
  const Scenario on_demand = testing::scenario(scenario_text("{" + load + "}"));
  const Scenario reserve = testing::scenario(scenario_text(R"({"admission": "reserve_output", )" + load + "}"));
  const ServeResult a = simulate_serving(on_demand, serving_requests(on_demand), testing::serving_toy_iteration_s,
                                         testing::no_kv_transfer);
  const ServeResult b =
      simulate_serving(reserve, serving_requests(reserve), testing::serving_toy_iteration_s, testing::no_kv_transfer);
  EXPECT_GT(a.preemptions, 0);
  EXPECT_EQ(b.preemptions, 0);
  for (const auto& q : b.requests) EXPECT_GT(q.finish_s, 0.0);
}

// Inter-token latencies: one gap per token after the first, and with a
// single request decoding alone every gap is one decode iteration.
TEST(ServingModes, InterTokenLatenciesAreTheGapsARequestSees) {
  const Scenario s = testing::scenario(
      scenario_text(R"({"arrivals": "burst", "requests": 1, "prompt_tokens": 50, "output_tokens": 11})"));
  const ServeResult r =
      simulate_serving(s, serving_requests(s), testing::serving_toy_iteration_s, testing::no_kv_transfer);
  int64_t gaps = 0;
  for (const auto& [gap, count] : r.inter_token_s) {
    gaps += count;
    EXPECT_NEAR(gap, testing::serving_toy_iteration_s(IterationShape{0, 0, 0, 1, 0}), 1e-12);
  }
  EXPECT_EQ(gaps, 10);
}

TEST(ServingModes, CountedPercentilesEqualTheExpandedVector) {
  const std::vector<std::pair<double, int64_t>> counted = {{1.0, 3}, {2.0, 1}, {5.0, 2}};
  const std::vector<double> expanded = {1, 1, 1, 2, 5, 5};
  for (double p : {0.0, 10.0, 50.0, 60.0, 90.0, 99.0, 100.0}) {
    EXPECT_DOUBLE_EQ(percentile_counted(counted, p), percentile(expanded, p)) << p;
  }
  EXPECT_EQ(percentile_counted({}, 50), 0.0);
}

// The engines' defaults as their sources state them.
TEST(ServingEngines, DefaultsAreTheEnginesOwn) {
  const Scenario h100 = testing::scenario(scenario_text(R"({"engine": "vllm"})"));
  EXPECT_EQ(h100.serving.max_batched_tokens, 8192);  // vllm serve on >= 70 GiB, not A100
  EXPECT_EQ(h100.serving.max_batch, 1024);
  EXPECT_TRUE(h100.serving.chunked_prefill && h100.serving.mixed_batches);
  const Scenario a100 = testing::scenario(scenario_text(R"({"engine": "vllm"})", "a100-sxm-80g"));
  EXPECT_EQ(a100.serving.max_batched_tokens, 2048);
  EXPECT_EQ(a100.serving.max_batch, 256);
  // SGLang's mem_fraction_static on an H100 (81,559 MiB): reserved = 512 +
  // 1.5 x 8192 + 2 x 256 + 1024 x 1/8 = 13,440 MiB at tp 1 -> 0.835; with
  // tp 8 the CUDA graphs go to 512 and 1024 MiB for tp: 14,848 -> 0.818.
  const Scenario sg1 = testing::scenario(scenario_text(R"({"engine": "sglang"})"));
  EXPECT_DOUBLE_EQ(sg1.serving.kv_memory_fraction, 0.835);
  EXPECT_FALSE(sg1.serving.mixed_batches);
  EXPECT_EQ(sg1.serving.block_tokens, 1);
  const Scenario sg8 = testing::scenario(scenario_text(R"({"engine": "sglang"})", "h100-sxm", 8));
  EXPECT_DOUBLE_EQ(sg8.serving.kv_memory_fraction, 0.818);
  const Scenario trt = testing::scenario(scenario_text(R"({"engine": "trtllm", "max_batch": 512})"));
  EXPECT_EQ(trt.serving.admission, Admission::kReserveOutput);
  EXPECT_EQ(trt.serving.block_tokens, 32);
  EXPECT_EQ(trt.serving.max_batch, 512);  // a field the scenario sets wins
  // Prefix caching: on in vLLM V1, SGLang and TensorRT-LLM, off in the
  // generic (vLLM V0) policy.
  EXPECT_TRUE(h100.serving.prefix_caching && sg1.serving.prefix_caching && trt.serving.prefix_caching);
  EXPECT_FALSE(testing::scenario(scenario_text("{}")).serving.prefix_caching);
}

// TensorRT-LLM sizes its cache from the memory free once the engine is
// loaded, which the CUDA context has taken: 0.9 of the context's bytes fewer
// for the cache, in blocks of 32 positions of Llama 3 8B's 131,072 bytes of
// K and V each (4 MiB). Engines whose fraction is of the whole memory are
// not affected by it.
TEST(ServingEngines, TrtllmCacheExcludesTheCudaContext) {
  const std::string serving = R"({"engine": "trtllm", "requests": 2, "max_batch": 64, "max_batched_tokens": 4096)";
  const Scenario with = testing::scenario(scenario_text(serving + "}"));
  const Scenario without = testing::scenario(scenario_text(serving + R"(, "runtime_reserved_bytes": 0})"));
  EXPECT_EQ(with.serving.runtime_reserved_bytes, cuda_context_bytes());
  EXPECT_EQ(cuda_context_bytes(), 470 << 20);
  auto blocks = [](const Scenario& s) {
    return simulate_serving(s, serving_requests(s), testing::serving_toy_iteration_s, testing::no_kv_transfer)
        .kv_blocks_per_replica;
  };
  const double block_bytes = 32.0 * 131072;
  const double expected = 0.9 * static_cast<double>(cuda_context_bytes()) / block_bytes;  // 105.75 blocks
  EXPECT_NEAR(static_cast<double>(blocks(without) - blocks(with)), expected, 1.0);
  const std::string vllm = R"({"engine": "vllm", "requests": 2, "runtime_reserved_bytes": 1073741824})";
  const Scenario v0 = testing::scenario(scenario_text(R"({"engine": "vllm", "requests": 2})"));
  EXPECT_EQ(v0.serving.runtime_reserved_bytes, 0);
  EXPECT_EQ(blocks(testing::scenario(scenario_text(vllm))), blocks(v0));
}

// trtllm-bench's heuristic by hand for Llama 3 8B (32 layers, 8 KV heads of
// 128, 8,030,261,248 parameters) with fp8 weights and a bf16 cache on one
// H100 (85,520,809,984 bytes) at 128 in / 128 out, fraction 0.9: K and V of
// a token are 2 x 32 x 8 x 128 x 2 = 131,072 bytes; 0.9 of what the weights
// leave holds 2078.5 requests of 256 tokens -> max batch 2304 (steps of 256
// from 1024); tokens 2078.5 x (1 + 128/128) = 4157 -> 4608 (steps of 512
// from 4096).
TEST(ServingEngines, TrtllmBenchHeuristicByHand) {
  const Scenario s = testing::scenario(scenario_text(R"({"engine": "trtllm"})"));
  ASSERT_EQ(count_params(s.model).total(), 8030261248);
  ASSERT_EQ(s.cluster.chip.hbm_capacity.value(), 85520809984);
  const TrtllmLimits lim =
      trtllm_bench_limits(s.model, s.cluster.chip, s.plan, DType::kFp8, DType::kBf16, 128, 128, 0.9);
  EXPECT_EQ(lim.max_batch, 2304);
  EXPECT_EQ(lim.max_batched_tokens, 4608);
  // The cap: an fp8 cache fits 4157 requests, more than 4096.
  const TrtllmLimits capped =
      trtllm_bench_limits(s.model, s.cluster.chip, s.plan, DType::kFp8, DType::kFp8, 128, 128, 0.9);
  EXPECT_EQ(capped.max_batch, 4096);
  EXPECT_EQ(capped.max_batched_tokens, 8192);
}

}  // namespace
}  // namespace shardsim
