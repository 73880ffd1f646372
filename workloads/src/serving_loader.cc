// Reading the "serving" object of a scenario (see ServingSpec).
#include "loader_parts.h"

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

ServingSpec parse_serving(const Json& j, const std::string& file, const Plan& plan) {
  if (!j.is_object()) throw InputError(file, "/serving", "expected an object, got " + detail::describe(j));
  ObjectReader r(j, file, "/serving");
  ServingSpec s;
  s.present = true;
  s.trace_file = r.string("trace_file", "");
  if (s.trace_file.empty()) {
    s.requests = r.int_in("requests", 1, 1'000'000, 1000);
    s.rate_per_s = r.number_in("rate_per_s", 1e-6, 1e9, 1.0);
    s.seed = static_cast<uint64_t>(r.int_in("seed", 0, INT64_MAX, 1));
    s.prompt =
        parse_length(r.has("prompt_tokens") ? r.raw("prompt_tokens") : Json(512), file, "/serving/prompt_tokens");
    s.output =
        parse_length(r.has("output_tokens") ? r.raw("output_tokens") : Json(128), file, "/serving/output_tokens");
  }
  s.max_batch = r.int_in("max_batch", 1, 1 << 20, 256);
  s.max_batched_tokens = r.int_in("max_batched_tokens", 1, 1 << 24, 8192);
  s.block_tokens = r.int_in("block_tokens", 1, 1 << 16, 16);
  s.kv_memory_fraction = r.number_in("kv_memory_fraction", 0.01, 1.0, 0.9);
  s.chunked_prefill = r.boolean("chunked_prefill", false);
  s.prefill_replicas = r.int_in("prefill_replicas", 0, 1 << 20, 0);
  r.done();
  if (s.prefill_replicas > 0 && s.prefill_replicas >= plan.dp) {
    r.fail("prefill_replicas", "disaggregation needs fewer prefill replicas (" + std::to_string(s.prefill_replicas) +
                                   ") than plan.dp (" + std::to_string(plan.dp) + ") so some replicas decode");
  }
  if (s.prefill_replicas > 0 && s.chunked_prefill) {
    r.fail("chunked_prefill", "chunked prefill mixes prefill and decode on one replica; disaggregation separates them");
  }
  return s;
}

}  // namespace shardsim::detail
