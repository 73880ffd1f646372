// Reading the "serving" object of a scenario (see ServingSpec).
#include <algorithm>

#include "loader_parts.h"
#include "shardsim/workloads/serving.h"

namespace shardsim::detail {

LengthDistribution parse_length(const Json& j, const std::string& file, const std::string& ptr) {
  LengthDistribution d;
  if (j.is_number_integer()) {
    const int64_t v = j.get<int64_t>();
    if (v < 1 || v > (int64_t{1} << 20)) {
      throw InputError(file, ptr, "expected a token count from 1 to 1048576, got " + detail::describe(j));
    }
    d.mean = static_cast<double>(v);
    d.min = d.max = v;
    return d;
  }
  if (!j.is_object()) {
    throw InputError(
        file, ptr,
        "expected a token count or {\"dist\": \"fixed|uniform|lognormal\", ...}, got " + detail::describe(j));
  }
  ObjectReader r(j, file, ptr);
  const std::string kind = r.choice("dist", {"fixed", "uniform", "lognormal"}, "fixed");
  d.kind = kind == "uniform"     ? LengthDistribution::Kind::kUniform
           : kind == "lognormal" ? LengthDistribution::Kind::kLognormal
                                 : LengthDistribution::Kind::kFixed;
  constexpr int64_t kMaxLen = int64_t{1} << 20;
  if (d.kind == LengthDistribution::Kind::kFixed) {
    d.min = d.max = r.int_in("tokens", 1, kMaxLen, 1);
    d.mean = static_cast<double>(d.min);
  } else {
    d.min = r.int_in("min", 1, kMaxLen, 1);
    d.max = r.int_in("max", 1, kMaxLen, kMaxLen);
    if (d.max < d.min) r.fail("max", "max must be at least min");
    d.mean = d.kind == LengthDistribution::Kind::kUniform
                 ? (static_cast<double>(d.min) + static_cast<double>(d.max)) / 2
                 : r.number_in("mean", 1, static_cast<double>(kMaxLen), 512);
    if (d.kind == LengthDistribution::Kind::kLognormal) d.sigma = r.number_in("sigma", 0, 4, 0.5);
  }
  r.done();
  return d;
}

ServingSpec parse_serving(const Json& j, const std::string& file, const Scenario& sc) {
  const Plan& plan = sc.plan;
  if (!j.is_object()) throw InputError(file, "/serving", "expected an object, got " + detail::describe(j));
  ObjectReader r(j, file, "/serving");
  const std::string engine = r.choice("engine", {"generic", "vllm", "sglang", "trtllm"}, "generic");
  // The engine's policy gives every scheduler field its default.
  ServingSpec s = serving_engine_defaults(engine, sc.cluster.chip, plan);
  s.present = true;
  s.trace_file = r.string("trace_file", "");
  if (s.trace_file.empty()) {
    s.requests = r.int_in("requests", 1, 1'000'000, 1000);
    const std::string arrivals = r.choice("arrivals", {"poisson", "burst", "closed_loop"}, "poisson");
    s.arrivals = arrivals == "burst"         ? Arrivals::kBurst
                 : arrivals == "closed_loop" ? Arrivals::kClosedLoop
                                             : Arrivals::kPoisson;
    if (s.arrivals == Arrivals::kPoisson) {
      s.rate_per_s = r.number_in("rate_per_s", 1e-6, 1e9, 1.0);
    } else if (r.has("rate_per_s")) {
      r.fail("rate_per_s", "only Poisson arrivals have a rate (arrivals is \"" + arrivals + "\")");
    }
    if (s.arrivals == Arrivals::kClosedLoop) {
      if (!r.has("concurrency")) r.fail("concurrency", "missing: a closed loop needs its number of clients");
      s.concurrency = r.int_in("concurrency", 1, 1'000'000, 1);
    } else if (r.has("concurrency")) {
      r.fail("concurrency", "only a closed loop (\"arrivals\": \"closed_loop\") has a concurrency");
    }
    s.seed = static_cast<uint64_t>(r.int_in("seed", 0, INT64_MAX, 1));
    s.prompt =
        parse_length(r.has("prompt_tokens") ? r.raw("prompt_tokens") : Json(512), file, "/serving/prompt_tokens");
    s.output =
        parse_length(r.has("output_tokens") ? r.raw("output_tokens") : Json(128), file, "/serving/output_tokens");
    if (r.has("shared_prefix")) {
      // vLLM's prefix_repetition dataset, SGLang's generated-shared-prefix:
      // groups of prompts that begin with the same system prompt.
      const Json& sp = r.raw("shared_prefix");
      if (!sp.is_object()) {
        throw InputError(file, "/serving/shared_prefix",
                         "expected {\"tokens\": N, \"groups\": G}, got " + detail::describe(sp));
      }
      ObjectReader pr(sp, file, "/serving/shared_prefix");
      s.shared_prefix_tokens = pr.int_in("tokens", 1, int64_t{1} << 20, 1);
      s.shared_prefix_groups = pr.int_in("groups", 1, 1'000'000, 1);
      pr.done();
    }
  } else {
    for (const char* k : {"requests", "arrivals", "rate_per_s", "concurrency", "seed", "prompt_tokens", "output_tokens",
                          "shared_prefix"}) {
      if (r.has(k)) r.fail(k, "a trace file gives the requests and their arrivals; remove this field or the trace");
    }
  }
  s.block_tokens = r.int_in("block_tokens", 1, 1 << 16, s.block_tokens);
  s.kv_memory_fraction = r.number_in("kv_memory_fraction", 0.01, 1.0, s.kv_memory_fraction);
  s.kv_memory_of_free = r.boolean("kv_memory_of_free", s.kv_memory_of_free);
  s.activation_workspace = r.boolean("activation_workspace", s.activation_workspace);
  s.runtime_reserved_bytes = r.int_in("runtime_reserved_bytes", 0, int64_t{1} << 50, s.runtime_reserved_bytes);
  s.chunked_prefill = r.boolean("chunked_prefill", s.chunked_prefill);
  if (engine == "trtllm" && !r.has("max_batch") && !r.has("max_batched_tokens") && s.trace_file.empty()) {
    // trtllm-bench sizes the engine from the dataset's mean lengths.
    // (A shared prefix is part of every prompt it sees.)
    const auto prefix = static_cast<double>(s.shared_prefix_tokens);
    const TrtllmLimits lim = trtllm_bench_limits(sc.model, sc.cluster.chip, plan, plan.weight_dtype, plan.kv_dtype,
                                                 s.prompt.mean + prefix, s.output.mean, s.kv_memory_fraction);
    s.max_batch = lim.max_batch;
    s.max_batched_tokens = lim.max_batched_tokens;
    // Without chunked context a whole prompt must fit with a full batch of decodes.
    if (!s.chunked_prefill) {
      s.max_batched_tokens = std::max(s.max_batched_tokens, s.prompt.max + s.shared_prefix_tokens + s.max_batch);
    }
  }
  s.max_batch = r.int_in("max_batch", 1, 1 << 20, s.max_batch);
  s.max_batched_tokens = r.int_in("max_batched_tokens", 1, 1 << 24, s.max_batched_tokens);
  // The generic policy mixes exactly when it chunks (Sarathi-Serve).
  s.mixed_batches = r.boolean("mixed_batches", engine == "generic" ? s.chunked_prefill : s.mixed_batches);
  const std::string admission = r.choice("admission", {"on_demand", "reserve_output"},
                                         s.admission == Admission::kReserveOutput ? "reserve_output" : "on_demand");
  s.admission = admission == "reserve_output" ? Admission::kReserveOutput : Admission::kOnDemand;
  s.iteration_overhead_us = r.number_in("iteration_overhead_us", 0, 1e6, s.iteration_overhead_us);
  s.prefill_replicas = r.int_in("prefill_replicas", 0, 1 << 20, 0);
  s.prefix_caching = r.boolean("prefix_caching", s.prefix_caching);
  s.routing = r.choice("routing", {"least_loaded", "cache_aware"}, "least_loaded") == "cache_aware"
                  ? ServingSpec::Routing::kCacheAware
                  : ServingSpec::Routing::kLeastLoaded;
  if (r.has("speculative")) {
    const Json& sp = r.raw("speculative");
    if (!sp.is_object()) {
      throw InputError(file, "/serving/speculative",
                       "expected {\"tokens\": K, \"acceptance\": A, \"draft_model\" or \"draft_layers\"}, got " +
                           detail::describe(sp));
    }
    ObjectReader pr(sp, file, "/serving/speculative");
    s.speculative_tokens = pr.int_in("tokens", 1, 64, 1);
    if (!pr.has("acceptance")) pr.fail("acceptance", "missing: the probability a draft token is accepted");
    s.speculative_acceptance = pr.number_in("acceptance", 0, 1, 0);
    if (pr.has("draft_model") && pr.has("draft_layers")) {
      pr.fail("draft_layers", "a draft model has its own layers; give draft_model or draft_layers, not both");
    }
    if (pr.has("draft_model")) {
      s.draft_model = model_preset(pr.string("draft_model", ""), file, "/serving/speculative/draft_model");
      if (s.draft_model.vocab != sc.model.vocab) {
        pr.fail("draft_model", "the draft model's vocabulary (" + std::to_string(s.draft_model.vocab) +
                                   ") differs from the target's (" + std::to_string(sc.model.vocab) +
                                   "): its tokens could not be verified");
      }
      if (const auto issue = check_plan(plan, s.draft_model, sc.cluster)) {
        pr.fail("draft_model",
                "the draft model does not fit the replica's plan: " + issue->field + ": " + issue->message);
      }
    }
    s.draft_layers = pr.int_in("draft_layers", 1, sc.model.layers, 1);
    pr.done();
    if (s.prefill_replicas > 0) {
      r.fail("speculative", "speculative decoding with disaggregation is not modelled; remove one of them");
    }
    if (plan.pp > 1) r.fail("speculative", "speculative decoding on a pipeline (plan.pp > 1) is not modelled");
  }
  r.done();
  // Serving replicas are dp / ep (an expert-parallel group serves one batch).
  const int64_t replicas = plan.dp / std::max<int64_t>(1, plan.ep);
  if (s.prefill_replicas > 0 && s.prefill_replicas >= replicas) {
    r.fail("prefill_replicas", "disaggregation needs fewer prefill replicas (" + std::to_string(s.prefill_replicas) +
                                   ") than serving replicas (plan.dp / plan.ep = " + std::to_string(replicas) +
                                   ") so some replicas decode");
  }
  if (s.prefill_replicas > 0 && s.routing == ServingSpec::Routing::kCacheAware) {
    r.fail("routing", "cache-aware routing with disaggregation is not modelled; use \"least_loaded\"");
  }
  if (s.prefill_replicas > 0 && s.mixed_batches) {
    if (r.has("mixed_batches")) {
      r.fail("mixed_batches", "mixed batches put prefill and decode on one replica; disaggregation separates them");
    }
    if (engine == "generic") {  // the generic policy mixes because it chunks
      r.fail("chunked_prefill",
             "chunked prefill mixes prefill and decode on one replica; disaggregation separates them");
    }
    // An engine's default: disaggregated, its prefill replicas only prefill
    // and its decode replicas only decode, so nothing is left to mix.
    s.mixed_batches = false;
  }
  return s;
}

}  // namespace shardsim::detail
