// Prefix caching in the serving scheduler against closed forms: requests
// that arrive one at a time hit exactly their prefix's full blocks once the
// prefix has been prefilled, never the prompt's last token; every admitted
// prompt token is either found cached or prefilled; a cache under memory
// pressure evicts and still serves every request, deterministically.
// Iteration times come from a linear toy model (testing::serving_toy_iteration_s).
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "shardsim/core/error.h"
#include "shardsim/workloads/serving.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

std::string prefix_llama8b(const std::string& serving) {
  return R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 1, "fabric": {"kind":
    "nvswitch_fat_tree", "gpus_per_node": 1}}, "plan": {"phase": "decode", "tp": 1}, "serving": )" +
         serving + "}";
}

/// Writes a request trace of (arrival, prompt, output, prefix id, prefix
/// tokens) rows and returns its path.
std::string prefix_write_trace(const std::string& name, const std::vector<std::vector<int64_t>>& rows) {
  const std::string path = ::testing::TempDir() + name;
  std::string text = "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    text += (i ? ",\n" : "") + std::string("{\"arrival_s\": ") + std::to_string(r[0]) +
            ", \"prompt_tokens\": " + std::to_string(r[1]) + ", \"output_tokens\": " + std::to_string(r[2]);
    if (r[3] >= 0) text += ", \"prefix_id\": " + std::to_string(r[3]) + ", \"prefix_tokens\": " + std::to_string(r[4]);
    text += "}";
  }
  text += "]\n";
  std::FILE* f = std::fopen(path.c_str(), "w");
  EXPECT_NE(f, nullptr);
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

int64_t prefix_prefilled_tokens(const ServeResult& r) {
  int64_t n = 0;
  for (const ServeIteration& it : r.iterations) n += it.shape.prefill_tokens;
  return n;
}

// Requests 10 s apart (each done long before the next): a request hits its
// prefix's full blocks (100 tokens in blocks of 16: 96) when an earlier one
// of its group has prefilled it, and nothing otherwise; a prompt that is all
// prefix (160 tokens) recomputes its last block (vLLM's max_cache_hit_length
// = num_tokens - 1: 9 of its 10 blocks).
TEST(PrefixCache, SequentialRequestsHitTheirPrefixFullBlocks) {
  const std::string trace = prefix_write_trace("prefix_sequential.json", {{0, 150, 20, 0, 100},
                                                                          {10, 150, 20, 1, 100},
                                                                          {20, 130, 20, 0, 100},
                                                                          {30, 150, 20, 1, 100},
                                                                          {40, 150, 20, -1, 0},
                                                                          {50, 160, 20, 2, 160},
                                                                          {60, 160, 20, 2, 160}});
  const Scenario s = testing::scenario(prefix_llama8b(R"({"engine": "vllm", "trace_file": ")" + trace + R"("})"));
  ASSERT_EQ(s.serving.block_tokens, 16);
  const ServeResult r =
      simulate_serving(s, serving_requests(s), testing::serving_toy_iteration_s, testing::no_kv_transfer);
  const std::vector<int64_t> expect = {0, 0, 96, 96, 0, 0, 144};
  ASSERT_EQ(r.requests.size(), expect.size());
  int64_t hits = 0, prompts = 0;
  for (size_t i = 0; i < expect.size(); ++i) {
    EXPECT_EQ(r.requests[i].cached_prompt_tokens, expect[i]) << "request " << i;
    hits += expect[i];
    prompts += r.requests[i].prompt_tokens;
  }
  EXPECT_EQ(r.prefix_hit_tokens, hits);
  EXPECT_EQ(r.admitted_prompt_tokens, prompts);
  EXPECT_EQ(prefix_prefilled_tokens(r), prompts - hits);
  // A hit prefills less, so its first token comes sooner than its group's first.
  EXPECT_LT(r.requests[2].first_token_s - r.requests[2].arrival_s,
            r.requests[0].first_token_s - r.requests[0].arrival_s);

  // Off, the same trace prefills every prompt token.
  const Scenario off = testing::scenario(
      prefix_llama8b(R"({"engine": "vllm", "prefix_caching": false, "trace_file": ")" + trace + R"("})"));
  const ServeResult o =
      simulate_serving(off, serving_requests(off), testing::serving_toy_iteration_s, testing::no_kv_transfer);
  EXPECT_EQ(o.prefix_hit_tokens, 0);
  EXPECT_EQ(prefix_prefilled_tokens(o), prompts);
}

// SGLang's radix cache matches token by token (page size 1): the whole
// prefix hits.
TEST(PrefixCache, TokenGranularCacheHitsTheWholePrefix) {
  const std::string trace = prefix_write_trace("prefix_sglang.json", {{0, 150, 20, 0, 100}, {10, 150, 20, 0, 100}});
  const Scenario s = testing::scenario(prefix_llama8b(R"({"engine": "sglang", "trace_file": ")" + trace + R"("})"));
  const ServeResult r =
      simulate_serving(s, serving_requests(s), testing::serving_toy_iteration_s, testing::no_kv_transfer);
  EXPECT_EQ(r.requests[1].cached_prompt_tokens, 100);
}

// A generated stream: every prompt is its group's prefix plus its own
// tokens, and with memory to spare every admitted prompt token is either
// found cached or prefilled once. Under a burst, requests admitted before
// their prefix is prefilled cannot hit, so fewer hit than arrive after it.
TEST(PrefixCache, EveryAdmittedTokenIsCachedOrPrefilled) {
  const Scenario s = testing::scenario(prefix_llama8b(
      R"({"engine": "vllm", "requests": 300, "rate_per_s": 20, "seed": 5, "shared_prefix": {"tokens": 1000,
          "groups": 3}, "prompt_tokens": {"dist": "uniform", "min": 10, "max": 200}, "output_tokens": 30})"));
  const auto reqs = serving_requests(s);
  for (const ServeRequest& q : reqs) {
    EXPECT_EQ(q.prefix_tokens, 1000);
    EXPECT_GE(q.prompt_tokens, 1010);
    EXPECT_GE(q.prefix_id, 0);
    EXPECT_LT(q.prefix_id, 3);
  }
  const ServeResult r = simulate_serving(s, reqs, testing::serving_toy_iteration_s, testing::no_kv_transfer);
  ASSERT_EQ(r.preemptions, 0);
  EXPECT_EQ(prefix_prefilled_tokens(r), r.admitted_prompt_tokens - r.prefix_hit_tokens);
  // A hit is the prefix's 62 full blocks; each group's first request misses,
  // and so may one that arrives while its group's prefix is being prefilled
  // (at 20 requests/s and iterations of tens of ms, a few).
  int64_t misses = 0;
  for (const auto& q : r.requests) {
    EXPECT_TRUE(q.cached_prompt_tokens == 0 || q.cached_prompt_tokens == 992);
    misses += q.cached_prompt_tokens == 0;
  }
  EXPECT_GE(misses, 3);
  EXPECT_LT(misses, 30);
  EXPECT_EQ(r.prefix_hit_tokens, (300 - misses) * 992);

  const Scenario burst = testing::scenario(prefix_llama8b(
      R"({"engine": "vllm", "arrivals": "burst", "requests": 64, "shared_prefix": {"tokens": 1000, "groups": 2},
          "prompt_tokens": 100, "output_tokens": 30})"));
  const ServeResult b =
      simulate_serving(burst, serving_requests(burst), testing::serving_toy_iteration_s, testing::no_kv_transfer);
  EXPECT_GT(b.prefix_hit_tokens, 0);
  EXPECT_LT(b.prefix_hit_tokens, (64 - 2) * 992);
  EXPECT_EQ(prefix_prefilled_tokens(b), b.admitted_prompt_tokens - b.prefix_hit_tokens);
}

// A cache that cannot keep every prefix: prefixes no request holds are
// evicted to make room, every request still finishes, the cache never holds
// more than it has, fewer tokens hit than with room to spare, and two runs
// agree exactly.
TEST(PrefixCache, MemoryPressureEvictsAndStillServesEveryRequest) {
  const std::string load =
      R"("requests": 200, "rate_per_s": 40, "seed": 9, "shared_prefix": {"tokens": 2048, "groups": 12},
         "prompt_tokens": {"dist": "uniform", "min": 50, "max": 500}, "output_tokens": {"dist": "uniform", "min": 20,
         "max": 300})";
  const Scenario tight =
      testing::scenario(prefix_llama8b(R"({"engine": "vllm", "kv_memory_fraction": 0.215, )" + load + "}"));
  const Scenario ample = testing::scenario(prefix_llama8b(R"({"engine": "vllm", )" + load + "}"));
  const ServeResult t =
      simulate_serving(tight, serving_requests(tight), testing::serving_toy_iteration_s, testing::no_kv_transfer);
  const ServeResult a =
      simulate_serving(ample, serving_requests(ample), testing::serving_toy_iteration_s, testing::no_kv_transfer);
  ASSERT_LT(t.kv_blocks_per_replica * 16, 12 * 2048 + 40 * 2500);  // not every prefix fits beside the load
  for (const auto& q : t.requests) EXPECT_GT(q.finish_s, 0.0);
  for (const auto& it : t.iterations) EXPECT_LE(it.kv_used, 1.0 + 1e-12);
  EXPECT_GT(t.prefix_hit_tokens, 0);
  EXPECT_LT(t.prefix_hit_tokens, a.prefix_hit_tokens);
  const ServeResult again =
      simulate_serving(tight, serving_requests(tight), testing::serving_toy_iteration_s, testing::no_kv_transfer);
  ASSERT_EQ(again.requests.size(), t.requests.size());
  for (size_t i = 0; i < t.requests.size(); ++i) {
    EXPECT_EQ(again.requests[i].finish_s, t.requests[i].finish_s);
    EXPECT_EQ(again.requests[i].cached_prompt_tokens, t.requests[i].cached_prompt_tokens);
  }
  EXPECT_EQ(again.preemptions, t.preemptions);
}

// TensorRT-LLM reserves the prompt and the whole output at admission; a hit
// takes its prefix's blocks from the cache instead, and nothing is preempted.
TEST(PrefixCache, ReservedOutputHitsToo) {
  const Scenario s = testing::scenario(prefix_llama8b(
      R"({"engine": "trtllm", "max_batch": 64, "max_batched_tokens": 4096, "requests": 100, "rate_per_s": 10,
          "seed": 2, "shared_prefix": {"tokens": 512, "groups": 2}, "prompt_tokens": 64, "output_tokens": 64})"));
  const ServeResult r =
      simulate_serving(s, serving_requests(s), testing::serving_toy_iteration_s, testing::no_kv_transfer);
  EXPECT_EQ(r.preemptions, 0);
  EXPECT_GT(r.prefix_hit_tokens, 90 * 512);  // blocks of 32: the whole 512-token prefix
  EXPECT_EQ(prefix_prefilled_tokens(r), r.admitted_prompt_tokens - r.prefix_hit_tokens);
}

std::string prefix_two_replicas(const std::string& serving) {
  return R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 2, "fabric": {"kind":
    "nvswitch_fat_tree", "gpus_per_node": 2}}, "plan": {"phase": "decode", "tp": 1, "dp": 2}, "serving": )" +
         serving + "}";
}

// SGLang's cache_aware router keeps each prefix on the replica it first sent
// it to while the loads are balanced, and spreads new prefixes to the
// replica whose record is smallest: at a light load every group lands on
// one replica and misses only there, where spreading by load puts groups on
// both replicas and misses more.
TEST(PrefixCache, CacheAwareRoutingKeepsAPrefixOnOneReplica) {
  const std::string load = R"("requests": 400, "rate_per_s": 40, "seed": 11, "shared_prefix": {"tokens": 1500,
      "groups": 6}, "prompt_tokens": {"dist": "uniform", "min": 20, "max": 200}, "output_tokens": 40})";
  const Scenario aware =
      testing::scenario(prefix_two_replicas(R"({"engine": "sglang", "routing": "cache_aware", )" + load));
  const Scenario spread = testing::scenario(prefix_two_replicas(R"({"engine": "sglang", )" + load));
  const auto reqs = serving_requests(aware);
  const ServeResult a = simulate_serving(aware, reqs, testing::serving_toy_iteration_s, testing::no_kv_transfer);
  const ServeResult b = simulate_serving(spread, reqs, testing::serving_toy_iteration_s, testing::no_kv_transfer);
  std::map<int64_t, std::set<int32_t>> where;
  std::set<int32_t> used;
  for (size_t i = 0; i < reqs.size(); ++i) {
    where[reqs[i].prefix_id].insert(a.requests[i].replica);
    used.insert(a.requests[i].replica);
  }
  for (const auto& [group, replicas] : where) EXPECT_EQ(replicas.size(), 1u) << "prefix " << group;
  EXPECT_EQ(used.size(), 2u);  // the groups are spread over both
  EXPECT_GT(a.prefix_hit_tokens, b.prefix_hit_tokens);
}

// When one replica holds more than 64 requests beyond the other and 1.5
// times as many, the router sends the next to the least loaded: a burst of
// one prefix goes to replica 0 until it holds 65, then the 66th goes to
// replica 1.
TEST(PrefixCache, CacheAwareRoutingBalancesAnImbalance) {
  const Scenario s = testing::scenario(prefix_two_replicas(
      R"({"engine": "sglang", "routing": "cache_aware", "arrivals": "burst", "requests": 200,
          "shared_prefix": {"tokens": 1000, "groups": 1}, "prompt_tokens": 50, "output_tokens": 10})"));
  const ServeResult r =
      simulate_serving(s, serving_requests(s), testing::serving_toy_iteration_s, testing::no_kv_transfer);
  for (size_t i = 0; i < 65; ++i) EXPECT_EQ(r.requests[i].replica, 0) << i;
  EXPECT_EQ(r.requests[65].replica, 1);
  int on_one = 0;
  for (const auto& q : r.requests) on_one += q.replica == 1;
  EXPECT_GT(on_one, 50);
}

TEST(PrefixCache, BadInputsNameTheirPath) {
  EXPECT_NE(testing::input_error_of(prefix_llama8b(R"({"shared_prefix": 100})")).find("/serving/shared_prefix"),
            std::string::npos);
  EXPECT_NE(testing::input_error_of(prefix_llama8b(R"({"shared_prefix": {"tokens": 0, "groups": 2}})"))
                .find("/serving/shared_prefix/tokens"),
            std::string::npos);
  EXPECT_NE(testing::input_error_of(prefix_llama8b(R"({"prefix_caching": "yes"})")).find("/serving/prefix_caching"),
            std::string::npos);
  EXPECT_NE(testing::input_error_of(prefix_llama8b(R"({"routing": "nearest"})")).find("/serving/routing"),
            std::string::npos);
  // A trace gives each request's prefix: the generator's is refused beside it.
  const std::string trace = prefix_write_trace("prefix_ok.json", {{0, 150, 20, 0, 100}});
  EXPECT_NE(testing::input_error_of(
                prefix_llama8b(R"({"trace_file": ")" + trace + R"(", "shared_prefix": {"tokens": 10, "groups": 1}})"))
                .find("/serving/shared_prefix"),
            std::string::npos);
  // In the trace: both fields or neither, and a prefix no longer than its prompt.
  auto trace_error = [](const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + name;
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
    try {
      const Scenario s = testing::scenario(prefix_llama8b(R"({"trace_file": ")" + path + R"("})"));
      serving_requests(s);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(trace_error("prefix_half.json", R"([{"arrival_s": 0, "prompt_tokens": 10, "output_tokens": 5,
    "prefix_id": 1}])")
                .find("/0/prefix_tokens"),
            std::string::npos);
  EXPECT_NE(trace_error("prefix_long.json", R"([{"arrival_s": 0, "prompt_tokens": 10, "output_tokens": 5,
    "prefix_id": 1, "prefix_tokens": 11}])")
                .find("/0/prefix_tokens"),
            std::string::npos);
}

}  // namespace
}  // namespace shardsim
