// Speculative decoding against closed forms: a step makes the drafts
// accepted before the first rejection plus one, so with certain acceptance
// a request needs ceil((output - 1) / (k + 1)) decode steps and with none
// output - 1; over many steps the mean is Leviathan et al.'s
// (1 - a^(k+1)) / (1 - a); a verification step of t tokens costs the
// target's GEMMs t tokens per sequence and its attention t·context +
// t(t+1)/2 pairs; the drafter's KV and weights come out of the cache.
// Iteration times come from a linear toy model (testing::serving_toy_iteration_s).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "shardsim/core/error.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/serving.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

std::string spec_llama8b(const std::string& serving, const std::string& plan = R"({"phase": "decode", "tp": 1})") {
  return R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 1, "fabric": {"kind":
    "nvswitch_fat_tree", "gpus_per_node": 1}}, "plan": )" +
         plan + R"(, "serving": )" + serving + "}";
}

ServeResult spec_serve(const std::string& serving) {
  const Scenario s = testing::scenario(spec_llama8b(serving));
  return simulate_serving(s, serving_requests(s), testing::serving_toy_iteration_s, testing::no_kv_transfer);
}

// One request at a time (closed loop of 1): the prefill makes the first
// token, then every step makes k + 1 with certain acceptance (the last
// step no more than are left) and 1 with none.
TEST(Speculative, StepsPerRequestByHand) {
  const std::string load = R"("arrivals": "closed_loop", "concurrency": 1, "requests": 5, "prompt_tokens": 100,
                              "output_tokens": 42)";
  const ServeResult all = spec_serve(R"({"speculative": {"tokens": 3, "acceptance": 1}, )" + load + "}");
  EXPECT_EQ(all.decode_steps, 5 * 11);  // 41 tokens after the first: 10 steps of 4, one of 1
  EXPECT_EQ(all.decode_step_tokens, 5 * 41);
  const ServeResult none = spec_serve(R"({"speculative": {"tokens": 3, "acceptance": 0}, )" + load + "}");
  EXPECT_EQ(none.decode_steps, 5 * 41);
  EXPECT_EQ(none.decode_step_tokens, 5 * 41);
  const ServeResult off = spec_serve("{" + load + "}");
  EXPECT_EQ(off.decode_steps, 5 * 41);
  for (const auto& q : all.requests) EXPECT_GT(q.finish_s, 0.0);
  // Verifying 4 tokens a step with nothing accepted only costs more.
  EXPECT_GT(none.requests.back().finish_s, off.requests.back().finish_s);
  EXPECT_LT(all.requests.back().finish_s, off.requests.back().finish_s);
}

// The mean tokens per step over tens of thousands of steps is the expected
// (1 - a^(k+1)) / (1 - a), less a little for the capped last steps.
TEST(Speculative, MeanTokensPerStepIsTheClosedForm) {
  for (const auto& [k, a] : {std::pair{3, 0.7}, std::pair{5, 0.5}, std::pair{1, 0.9}}) {
    const ServeResult r =
        spec_serve(R"({"speculative": {"tokens": )" + std::to_string(k) + R"(, "acceptance": )" + std::to_string(a) +
                   R"(}, "requests": 200, "rate_per_s": 50, "seed": 4, "prompt_tokens": 64,
                                "output_tokens": 501})");
    const double expected = (1 - std::pow(a, k + 1)) / (1 - a);
    const double mean = static_cast<double>(r.decode_step_tokens) / static_cast<double>(r.decode_steps);
    EXPECT_EQ(r.decode_step_tokens, 200 * 500);
    EXPECT_NEAR(mean, expected, 0.02 * expected) << "k " << k << " a " << a;
  }
}

// Same seed, same acceptances.
TEST(Speculative, Deterministic) {
  const std::string sv = R"({"speculative": {"tokens": 4, "acceptance": 0.6}, "requests": 50, "rate_per_s": 20})";
  const ServeResult a = spec_serve(sv), b = spec_serve(sv);
  ASSERT_EQ(a.requests.size(), b.requests.size());
  for (size_t i = 0; i < a.requests.size(); ++i) EXPECT_EQ(a.requests[i].finish_s, b.requests[i].finish_s);
  EXPECT_EQ(a.decode_step_tokens, b.decode_step_tokens);
  EXPECT_EQ(a.decode_steps, b.decode_steps);
}

double spec_sum_flops(const ProgramSet& ps, ComputeKind kind) {
  double f = 0;
  for (const Op& o : ps.stages[0].ops()) {
    if (o.kind == OpKind::kCompute && o.compute == kind) f += o.flops.value();
  }
  return f;
}

// Verifying t tokens of S sequences runs the GEMMs of S·t tokens, and the
// attention of t·context + S·t(t+1)/2 query-key pairs at 4·heads·head_dim
// FLOPs each.
TEST(Speculative, VerificationStepCostsByHand) {
  const Scenario s = testing::scenario(spec_llama8b("{}"));
  IterationShape verify;
  verify.decode_sequences = 16;
  verify.decode_context = 16 * 1000;
  verify.decode_tokens = 4;
  IterationShape wide = verify;  // the same tokens as 64 one-token sequences
  wide.decode_sequences = 64;
  wide.decode_tokens = 1;
  const ProgramSet v = lower_iteration(s, verify), w = lower_iteration(s, wide);
  EXPECT_DOUBLE_EQ(spec_sum_flops(v, ComputeKind::kMatmul), spec_sum_flops(w, ComputeKind::kMatmul));
  const double q = static_cast<double>(s.model.heads * s.model.head_dim);
  const double pairs = 4.0 * 16 * 1000 + 16 * (4 * 5 / 2);
  EXPECT_DOUBLE_EQ(spec_sum_flops(v, ComputeKind::kAttention), 4.0 * q * pairs * s.model.layers);
}

// The drafter's memory comes out of the KV cache: a one-layer head on a
// 32-layer model adds a 32nd of the cache's bytes per position (and one
// layer's weights), so the cache holds about 32/33 of its blocks.
TEST(Speculative, DrafterMemoryComesOutOfTheCache) {
  const ServeResult off = spec_serve(R"({"requests": 1})");
  const ServeResult head = spec_serve(R"({"requests": 1, "speculative": {"tokens": 3, "acceptance": 0.5}})");
  const double ratio = static_cast<double>(head.kv_blocks_per_replica) / static_cast<double>(off.kv_blocks_per_replica);
  EXPECT_LT(ratio, 32.0 / 33.0);
  EXPECT_NEAR(ratio, 32.0 / 33.0, 0.015);
  // A draft model of its own is its weights and its KV per position.
  const Scenario big = testing::scenario(
      R"({"model": "llama3-70b", "cluster": {"chip": "h100-sxm", "devices": 8, "fabric": {"kind": "nvswitch_fat_tree",
      "gpus_per_node": 8}}, "plan": {"phase": "decode", "tp": 8}, "serving": {"requests": 1, "speculative":
      {"tokens": 4, "acceptance": 0.8, "draft_model": "llama3-8b"}}})");
  EXPECT_EQ(big.serving.draft_model.name, "llama3-8b");
  EXPECT_EQ(big.serving.draft_model.layers, 32);
}

TEST(Speculative, BadInputsNameTheirPath) {
  auto has = [](const std::string& msg, const std::string& part) { return msg.find(part) != std::string::npos; };
  EXPECT_TRUE(has(testing::input_error_of(spec_llama8b(R"({"speculative": 3})")), "/serving/speculative"));
  EXPECT_TRUE(has(testing::input_error_of(spec_llama8b(R"({"speculative": {"tokens": 3}})")),
                  "/serving/speculative/acceptance"));
  EXPECT_TRUE(has(testing::input_error_of(spec_llama8b(R"({"speculative": {"tokens": 0, "acceptance": 0.5}})")),
                  "/serving/speculative/tokens"));
  EXPECT_TRUE(has(testing::input_error_of(spec_llama8b(R"({"speculative": {"tokens": 2, "acceptance": 1.5}})")),
                  "/serving/speculative/acceptance"));
  EXPECT_TRUE(has(testing::input_error_of(
                      spec_llama8b(R"({"speculative": {"tokens": 2, "acceptance": 0.5, "draft_model": "nope"}})")),
                  "/serving/speculative/draft_model: unknown model preset"));
  // Llama 2's 32,000-token vocabulary cannot draft for Llama 3's.
  EXPECT_TRUE(has(testing::input_error_of(
                      spec_llama8b(R"({"speculative": {"tokens": 2, "acceptance": 0.5, "draft_model": "llama2-7b"}})")),
                  "vocabulary"));
  EXPECT_TRUE(
      has(testing::input_error_of(spec_llama8b(
              R"({"speculative": {"tokens": 2, "acceptance": 0.5, "draft_model": "llama3-8b", "draft_layers": 1}})")),
          "/serving/speculative/draft_layers"));
}

}  // namespace
}  // namespace shardsim
