// shardsim serve: a request stream on serving replicas (continuous batching,
// paged KV cache), each iteration timed by the simulator.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "serve_runner.h"
#include "shardsim/core/atomic_file.h"
#include "shardsim/core/error.h"
#include "shardsim/sim/engine.h"

namespace shardsim::cli {
namespace {

nlohmann::json pj(const LatencyPercentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"mean", p.mean}};
}

bool write_serve_trace(std::FILE* f, const ServeResult& r, int64_t replicas) {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  char buf[320];
  for (int64_t i = 0; i < replicas; ++i) {
    std::snprintf(buf, sizeof buf,
                  "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRId64 ",\"args\":{\"name\":\"replica %" PRId64
                  "\"}},\n",
                  i, i);
    out += buf;
  }
  for (const ServeIteration& it : r.iterations) {
    const char* name = it.shape.prefill_tokens > 0 && it.shape.decode_sequences > 0 ? "mixed"
                       : it.shape.prefill_tokens > 0                                ? "prefill"
                                                                                    : "decode";
    std::snprintf(buf, sizeof buf,
                  "{\"ph\":\"X\",\"name\":\"%s\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,\"dur\":%.3f,\"args\":{"
                  "\"prefill_tokens\":%" PRId64 ",\"decode_sequences\":%" PRId64 ",\"running\":%" PRId64 "}},\n",
                  name, it.replica, it.start_s * 1e6, (it.end_s - it.start_s) * 1e6, it.shape.prefill_tokens,
                  it.shape.decode_sequences, it.running);
    out += buf;
    std::snprintf(buf, sizeof buf,
                  "{\"ph\":\"C\",\"name\":\"kv cache used\",\"pid\":%d,\"ts\":%.3f,\"args\":{\"fraction\":%.4f}},\n",
                  it.replica, it.end_s * 1e6, it.kv_used);
    out += buf;
    if (out.size() > (1u << 20)) {
      if (std::fwrite(out.data(), 1, out.size(), f) != out.size()) return false;
      out.clear();
    }
  }
  out += "{\"ph\":\"M\",\"name\":\"trace_end\",\"pid\":0,\"args\":{}}\n]}\n";
  return std::fwrite(out.data(), 1, out.size(), f) == out.size();
}

}  // namespace

int cmd_serve(const std::vector<std::string>& args) {
  std::string file, trace;
  std::vector<Override> sets;
  bool json = false, no_timing = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--no-timing") {
      no_timing = true;
    } else if (a == "--set") {
      sets.push_back(parse_set(take_value(args, i)));
    } else if (a == "--trace") {
      trace = take_value(args, i);
    } else {
      take_scenario_file("serve", a, file);
    }
  }
  if (file.empty()) throw UsageError("serve: expected a scenario file (shardsim --help)");
  const Scenario s = load_scenario(file, sets);
  if (!s.serving.present) {
    throw InputError(file, "/serving", "missing: shardsim serve needs a \"serving\" object (see docs/inference.md)");
  }
  const auto t0 = std::chrono::steady_clock::now();
  const ServeSummary sum = run_serving(s);
  const ServeResult& r = sum.result;
  const double wall = no_timing ? 0 : std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const LatencyPercentiles &T = sum.ttft_s, &P = sum.tpot_s, &I = sum.itl_s, &E = sum.e2e_s;
  const int64_t replicas = sum.replicas;
  if (!trace.empty()) {
    std::string err;
    if (!write_file_atomic(
            trace, [&](std::FILE* f) { return write_serve_trace(f, r, replicas); }, err)) {
      throw UsageError(err);
    }
  }
  if (json) {
    nlohmann::json j;
    j["scenario"] = file;
    j["scenario_hash"] = s.config_hash;
    j["model"] = s.model.name;
    j["chip"] = s.cluster.chip.name;
    j["devices"] = s.cluster.devices;
    j["replicas"] = replicas;
    j["engine"] = s.serving.engine;
    j["requests"] = r.requests.size();
    j["duration_s"] = sum.duration_s;
    j["output_tokens_per_s"] = sum.output_tokens_per_s;
    j["total_tokens_per_s"] = sum.total_tokens_per_s;
    j["output_tokens_per_s_per_device"] = sum.output_tokens_per_s_per_device;
    j["ttft_s"] = pj(T);
    j["tpot_s"] = pj(P);
    j["itl_s"] = pj(I);
    j["e2e_s"] = pj(E);
    j["preemptions"] = r.preemptions;
    j["kv_cache"] = {{"blocks_per_replica", r.kv_blocks_per_replica},
                     {"block_tokens", r.block_tokens},
                     {"mean_used", sum.kv_mean_used},
                     {"max_used", sum.kv_max_used}};
    j["sim"] = {{"iterations", r.iterations.size()},
                {"distinct_iterations_simulated", sum.distinct_iterations_simulated},
                {"kv_transfers", r.kv_transfers},
                {"wall_s", wall}};
    std::fputs((j.dump(2) + "\n").c_str(), stdout);
    return 0;
  }
  const ServingSpec& sv = s.serving;
  std::string policy = "engine " + sv.engine;
  if (sv.prefill_replicas > 0) policy += ", " + std::to_string(sv.prefill_replicas) + " prefill-only";
  if (sv.chunked_prefill) policy += ", chunked prefill";
  if (sv.mixed_batches) policy += ", mixed batches";
  if (sv.admission == Admission::kReserveOutput) policy += ", output reserved";
  const std::string arrivals = !sv.trace_file.empty()            ? "trace"
                               : sv.arrivals == Arrivals::kBurst ? "burst (all queued at 0)"
                               : sv.arrivals == Arrivals::kClosedLoop
                                   ? "closed loop of " + std::to_string(sv.concurrency)
                                   : "Poisson";
  std::printf("serve: %s on %lld x %s, %lld replicas of tp %lld x pp %lld (%s); %s arrivals\n", s.model.name.c_str(),
              static_cast<long long>(s.cluster.devices), s.cluster.chip.name.c_str(), static_cast<long long>(replicas),
              static_cast<long long>(s.plan.tp), static_cast<long long>(s.plan.pp), policy.c_str(), arrivals.c_str());
  std::printf("  requests         %zu over %.2f s; %.1f output tokens/s (%.2f per device), %.1f total tokens/s\n",
              r.requests.size(), sum.duration_s, sum.output_tokens_per_s, sum.output_tokens_per_s_per_device,
              sum.total_tokens_per_s);
  std::printf("  time to first token   p50 %.4f s   p90 %.4f s   p99 %.4f s\n", T.p50, T.p90, T.p99);
  std::printf("  time per output token p50 %.4f s   p90 %.4f s   p99 %.4f s\n", P.p50, P.p90, P.p99);
  std::printf("  inter-token latency   p50 %.4f s   p90 %.4f s   p99 %.4f s\n", I.p50, I.p90, I.p99);
  std::printf("  end to end            p50 %.4f s   p90 %.4f s   p99 %.4f s\n", E.p50, E.p90, E.p99);
  std::printf(
      "  kv cache         %lld blocks of %lld tokens per replica; used %.1f%% on average, %.1f%% at most; "
      "%lld preemptions\n",
      static_cast<long long>(r.kv_blocks_per_replica), static_cast<long long>(r.block_tokens), 100 * sum.kv_mean_used,
      100 * sum.kv_max_used, static_cast<long long>(r.preemptions));
  std::printf("  simulation       %zu iterations, %zu distinct shapes simulated, %.3f s wall\n", r.iterations.size(),
              sum.distinct_iterations_simulated, wall);
  return 0;
}

}  // namespace shardsim::cli
