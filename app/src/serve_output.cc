// The faces of a serving run: its JSON, its summary text and its trace.
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "output.h"
#include "shardsim/app/serve.h"
#include "shardsim/core/error.h"

namespace shardsim {
namespace {

nlohmann::json percentiles(const LatencyPercentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"mean", p.mean}};
}

bool write_trace(std::FILE* f, const ServeResult& r, int64_t replicas) {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (int64_t i = 0; i < replicas; ++i) {
    detail::appendf(out,
                    "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRId64 ",\"args\":{\"name\":\"replica %" PRId64
                    "\"}},\n",
                    i, i);
  }
  for (const ServeIteration& it : r.iterations) {
    const char* name = it.shape.prefill_tokens > 0 && it.shape.decode_sequences > 0 ? "mixed"
                       : it.shape.prefill_tokens > 0                                ? "prefill"
                                                                                    : "decode";
    detail::appendf(out,
                    "{\"ph\":\"X\",\"name\":\"%s\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,\"dur\":%.3f,\"args\":{"
                    "\"prefill_tokens\":%" PRId64 ",\"decode_sequences\":%" PRId64 ",\"running\":%" PRId64 "}},\n",
                    name, it.replica, it.start_s * 1e6, (it.end_s - it.start_s) * 1e6, it.shape.prefill_tokens,
                    it.shape.decode_sequences, it.running);
    detail::appendf(out,
                    "{\"ph\":\"C\",\"name\":\"kv cache used\",\"pid\":%d,\"ts\":%.3f,\"args\":{\"fraction\":%.4f}},\n",
                    it.replica, it.end_s * 1e6, it.kv_used);
    if (out.size() > (1u << 20)) {
      if (std::fwrite(out.data(), 1, out.size(), f) != out.size()) return false;
      out.clear();
    }
  }
  out += "{\"ph\":\"M\",\"name\":\"trace_end\",\"pid\":0,\"args\":{}}\n]}\n";
  return std::fwrite(out.data(), 1, out.size(), f) == out.size();
}

}  // namespace

std::string serve_json(const Scenario& s, const ServeSummary& sum) {
  const ServeResult& r = sum.result;
  nlohmann::json j;
  j["scenario"] = s.file;
  j["scenario_hash"] = s.config_hash;
  j["model"] = s.model.name;
  j["chip"] = s.cluster.chip.name;
  j["devices"] = s.cluster.devices;
  j["replicas"] = sum.replicas;
  j["engine"] = s.serving.engine;
  j["requests"] = r.requests.size();
  j["duration_s"] = sum.duration_s;
  j["output_tokens_per_s"] = sum.output_tokens_per_s;
  j["total_tokens_per_s"] = sum.total_tokens_per_s;
  j["output_tokens_per_s_per_device"] = sum.output_tokens_per_s_per_device;
  j["ttft_s"] = percentiles(sum.ttft_s);
  j["tpot_s"] = percentiles(sum.tpot_s);
  j["itl_s"] = percentiles(sum.itl_s);
  j["e2e_s"] = percentiles(sum.e2e_s);
  j["preemptions"] = r.preemptions;
  j["kv_cache"] = {{"blocks_per_replica", r.kv_blocks_per_replica},
                   {"block_tokens", r.block_tokens},
                   {"mean_used", sum.kv_mean_used},
                   {"max_used", sum.kv_max_used}};
  // Prompt tokens to prefill at admissions (a preempted request's again)
  // and how many of them the prefix cache held.
  j["prefix_cache"] = {{"enabled", s.serving.prefix_caching},
                       {"admitted_prompt_tokens", r.admitted_prompt_tokens},
                       {"hit_tokens", r.prefix_hit_tokens},
                       {"hit_rate", r.admitted_prompt_tokens > 0 ? static_cast<double>(r.prefix_hit_tokens) /
                                                                       static_cast<double>(r.admitted_prompt_tokens)
                                                                 : 0.0}};
  // Tokens a sequence's decode step made, on average: 1 without speculative
  // decoding; with it, (1 - a^(k+1)) / (1 - a) expected (Leviathan et al.).
  j["speculative"] = {
      {"draft_tokens", s.serving.speculative_tokens},
      {"acceptance", s.serving.speculative_acceptance},
      {"decode_steps", r.decode_steps},
      {"tokens_per_step",
       r.decode_steps > 0 ? static_cast<double>(r.decode_step_tokens) / static_cast<double>(r.decode_steps) : 0.0}};
  j["sim"] = {{"iterations", r.iterations.size()},
              {"distinct_iterations_simulated", sum.distinct_iterations_simulated},
              {"kv_transfers", r.kv_transfers},
              {"wall_s", sum.wall_s}};
  return j.dump(2) + "\n";
}

std::string serve_summary_text(const Scenario& s, const ServeSummary& sum) {
  const ServeResult& r = sum.result;
  const LatencyPercentiles &T = sum.ttft_s, &P = sum.tpot_s, &I = sum.itl_s, &E = sum.e2e_s;
  const ServingSpec& sv = s.serving;
  std::string policy = "engine " + sv.engine;
  if (sv.prefill_replicas > 0) policy += ", " + std::to_string(sv.prefill_replicas) + " prefill-only";
  if (sv.chunked_prefill) policy += ", chunked prefill";
  if (sv.mixed_batches) policy += ", mixed batches";
  if (sv.admission == Admission::kReserveOutput) policy += ", output reserved";
  if (sv.prefix_caching) policy += ", prefix caching";
  if (sv.speculative_tokens > 0) {
    policy += ", speculating " + std::to_string(sv.speculative_tokens) + " tokens with " +
              (sv.draft_model.layers > 0 ? sv.draft_model.name : std::to_string(sv.draft_layers) + "-layer draft head");
  }
  const std::string arrivals = !sv.trace_file.empty()            ? "trace"
                               : sv.arrivals == Arrivals::kBurst ? "burst (all queued at 0)"
                               : sv.arrivals == Arrivals::kClosedLoop
                                   ? "closed loop of " + std::to_string(sv.concurrency)
                                   : "Poisson";
  std::string o;
  detail::appendf(o, "serve: %s on %lld x %s, %lld replicas of tp %lld x pp %lld (%s); %s arrivals\n",
                  s.model.name.c_str(), static_cast<long long>(s.cluster.devices), s.cluster.chip.name.c_str(),
                  static_cast<long long>(sum.replicas), static_cast<long long>(s.plan.tp),
                  static_cast<long long>(s.plan.pp), policy.c_str(), arrivals.c_str());
  detail::appendf(o,
                  "  requests         %zu over %.2f s; %.1f output tokens/s (%.2f per device), %.1f total tokens/s\n",
                  r.requests.size(), sum.duration_s, sum.output_tokens_per_s, sum.output_tokens_per_s_per_device,
                  sum.total_tokens_per_s);
  detail::appendf(o, "  time to first token   p50 %.4f s   p90 %.4f s   p99 %.4f s\n", T.p50, T.p90, T.p99);
  detail::appendf(o, "  time per output token p50 %.4f s   p90 %.4f s   p99 %.4f s\n", P.p50, P.p90, P.p99);
  detail::appendf(o, "  inter-token latency   p50 %.4f s   p90 %.4f s   p99 %.4f s\n", I.p50, I.p90, I.p99);
  detail::appendf(o, "  end to end            p50 %.4f s   p90 %.4f s   p99 %.4f s\n", E.p50, E.p90, E.p99);
  detail::appendf(o,
                  "  kv cache         %lld blocks of %lld tokens per replica; used %.1f%% on average, %.1f%% at most; "
                  "%lld preemptions\n",
                  static_cast<long long>(r.kv_blocks_per_replica), static_cast<long long>(r.block_tokens),
                  100 * sum.kv_mean_used, 100 * sum.kv_max_used, static_cast<long long>(r.preemptions));
  if (sv.speculative_tokens > 0 && r.decode_steps > 0) {
    detail::appendf(o, "  speculative      %.3f tokens per decode step (%lld steps; acceptance %.2f of %lld drafts)\n",
                    static_cast<double>(r.decode_step_tokens) / static_cast<double>(r.decode_steps),
                    static_cast<long long>(r.decode_steps), sv.speculative_acceptance,
                    static_cast<long long>(sv.speculative_tokens));
  }
  if (sv.prefix_caching && r.prefix_hit_tokens > 0) {
    detail::appendf(o, "  prefix cache     %lld of %lld prompt tokens found cached (%.1f%%)\n",
                    static_cast<long long>(r.prefix_hit_tokens), static_cast<long long>(r.admitted_prompt_tokens),
                    100.0 * static_cast<double>(r.prefix_hit_tokens) / static_cast<double>(r.admitted_prompt_tokens));
  }
  detail::appendf(o, "  simulation       %zu iterations, %zu distinct shapes simulated, %.3f s wall\n",
                  r.iterations.size(), sum.distinct_iterations_simulated, sum.wall_s);
  return o;
}

void write_serve_trace(const std::string& file, const ServeSummary& sum) {
  detail::write_output_file(file, [&](std::FILE* f) { return write_trace(f, sum.result, sum.replicas); });
}

}  // namespace shardsim
