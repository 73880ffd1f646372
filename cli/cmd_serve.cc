// shardsim serve: a request stream on serving replicas (continuous batching,
// paged KV cache), each iteration timed by the simulator.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/core/atomic_file.h"
#include "shardsim/core/error.h"
#include "shardsim/sim/engine.h"
#include "shardsim/workloads/serving.h"
#include "step_runner.h"

namespace shardsim::cli {
namespace {

/// Rounds a count to one of 64 steps per octave above 64 (about 1.1%), so
/// iterations of nearly the same shape share one simulation.
int64_t bucket(int64_t x) {
  if (x <= 64) return x;
  const double e = std::round(std::log2(static_cast<double>(x)) * 64.0) / 64.0;
  return static_cast<int64_t>(std::llround(std::exp2(e)));
}

/// Times iterations by lowering and simulating them on one replica, once per
/// bucketed shape.
class IterationTimer {
 public:
  explicit IterationTimer(const Scenario& s) : s_(s) {
    replica_ = s;
    replica_.plan.dp = s.plan.ep;
    replica_.cluster.devices = s.plan.tp * s.plan.pp * s.plan.ep;
    if (replica_.cluster.fabric == FabricKind::kTorus && replica_.cluster.devices != s.cluster.devices) {
      // A torus replica keeps the slice's shape only when the slice is one
      // replica; otherwise time it on the whole slice with dp replicas.
      replica_ = s;
    }
    topo_ = build_topology(replica_.cluster);
    mesh_ = std::make_unique<Mesh>(build_mesh(replica_.plan));
  }

  double operator()(IterationShape shape) {
    const int64_t ep = s_.plan.ep;
    if (ep > 1) {  // each ep rank takes its share of the batch
      shape.prefill_tokens = (shape.prefill_tokens + ep - 1) / ep;
      shape.prefill_pairs = (shape.prefill_pairs + ep - 1) / ep;
      shape.prefill_completing = (shape.prefill_completing + ep - 1) / ep;
      shape.decode_sequences = (shape.decode_sequences + ep - 1) / ep;
      shape.decode_context = (shape.decode_context + ep - 1) / ep;
    }
    shape.prefill_tokens = bucket(shape.prefill_tokens);
    shape.prefill_pairs = bucket(shape.prefill_pairs);
    shape.decode_context = bucket(shape.decode_context);
    const auto key = std::make_tuple(shape.prefill_tokens, shape.prefill_pairs, shape.prefill_completing,
                                     shape.decode_sequences, shape.decode_context);
    auto [it, fresh] = cache_.try_emplace(key, 0.0);
    if (fresh) {
      const ProgramSet programs = lower_iteration(replica_, shape);
      const EngineOptions opt = step_engine_options(replica_, {}, replica_.plan.dp > 1);
      it->second = simulate(programs, *mesh_, *topo_, replica_.cluster.chip, opt).step_time.seconds();
      events_ += 1;
    }
    return it->second;
  }
  size_t simulations() const { return cache_.size(); }

 private:
  const Scenario& s_;
  Scenario replica_;
  std::unique_ptr<Topology> topo_;
  std::unique_ptr<Mesh> mesh_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>, double> cache_;
  int64_t events_ = 0;
};

/// Moving one request's KV cache from a prefill replica to a decode replica:
/// every layer's K and V of each prompt position, sent by the replica's
/// tp·pp devices in parallel over their NICs (or torus links).
double kv_transfer_s(const Scenario& s, int64_t prompt_tokens) {
  const ModelSpec& m = s.model;
  const double bytes = static_cast<double>(prompt_tokens) * static_cast<double>(m.layers) * 2.0 *
                       static_cast<double>(m.kv_heads * m.head_dim) * dtype_bytes(s.plan.kv_dtype);
  const double senders = static_cast<double>(s.plan.tp * s.plan.pp);
  if (s.cluster.fabric == FabricKind::kTorus) {
    return bytes / (senders * s.cluster.torus.link_bandwidth.value() * s.cluster.torus.link_efficiency) +
           s.cluster.torus.hop_latency.seconds();
  }
  const FatTreeSpec& f = s.cluster.fat_tree;
  return bytes / (senders * f.nic_bandwidth.value() * f.nic_efficiency) +
         2 * (f.nic_latency + f.switch_latency).seconds();
}

struct Pcts {
  double p50, p90, p99, mean;
};
Pcts pcts(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return {percentile(v, 50), percentile(v, 90), percentile(v, 99), v.empty() ? 0 : sum / static_cast<double>(v.size())};
}
nlohmann::json pj(const Pcts& p) {
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
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("serve: unknown option " + a);
    } else if (file.empty()) {
      file = a;
    } else {
      throw UsageError("serve: one scenario file expected, got a second: " + a);
    }
  }
  if (file.empty()) throw UsageError("serve: expected a scenario file (shardsim --help)");
  const Scenario s = load_scenario(file, sets);
  if (!s.serving.present) {
    throw InputError(file, "/serving", "missing: shardsim serve needs a \"serving\" object (see docs/inference.md)");
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<ServeRequest> reqs = serving_requests(s);
  IterationTimer timer(s);
  const ServeResult r = simulate_serving(
      s, reqs, [&](const IterationShape& sh) { return timer(sh); },
      [&](int64_t prompt) { return kv_transfer_s(s, prompt); });
  const double wall = no_timing ? 0 : std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::vector<double> ttft, tpot, e2e;
  double first = 1e300, last = 0;
  int64_t out_tokens = 0, in_tokens = 0;
  for (const ServeRequestResult& q : r.requests) {
    ttft.push_back(q.first_token_s - q.arrival_s);
    e2e.push_back(q.finish_s - q.arrival_s);
    if (q.output_tokens > 1) tpot.push_back((q.finish_s - q.first_token_s) / static_cast<double>(q.output_tokens - 1));
    first = std::min(first, q.arrival_s);
    last = std::max(last, q.finish_s);
    out_tokens += q.output_tokens;
    in_tokens += q.prompt_tokens;
  }
  const double span = std::max(1e-12, last - first);
  // KV use, time-weighted over each replica's iterations.
  double kv_area = 0, kv_time = 0, kv_max = 0;
  for (const ServeIteration& it : r.iterations) {
    kv_area += it.kv_used * (it.end_s - it.start_s);
    kv_time += it.end_s - it.start_s;
    kv_max = std::max(kv_max, it.kv_used);
  }
  const Pcts T = pcts(ttft), P = pcts(tpot), E = pcts(e2e);
  const int64_t replicas = s.plan.dp / s.plan.ep;
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
    j["requests"] = r.requests.size();
    j["duration_s"] = span;
    j["output_tokens_per_s"] = static_cast<double>(out_tokens) / span;
    j["total_tokens_per_s"] = static_cast<double>(out_tokens + in_tokens) / span;
    j["output_tokens_per_s_per_device"] =
        static_cast<double>(out_tokens) / span / static_cast<double>(s.cluster.devices);
    j["ttft_s"] = pj(T);
    j["tpot_s"] = pj(P);
    j["e2e_s"] = pj(E);
    j["preemptions"] = r.preemptions;
    j["kv_cache"] = {{"blocks_per_replica", r.kv_blocks_per_replica},
                     {"block_tokens", r.block_tokens},
                     {"mean_used", kv_time > 0 ? kv_area / kv_time : 0},
                     {"max_used", kv_max}};
    j["sim"] = {{"iterations", r.iterations.size()},
                {"distinct_iterations_simulated", timer.simulations()},
                {"kv_transfers", r.kv_transfers},
                {"wall_s", wall}};
    std::fputs((j.dump(2) + "\n").c_str(), stdout);
    return 0;
  }
  std::printf("serve: %s on %lld x %s, %lld replicas of tp %lld x pp %lld%s\n", s.model.name.c_str(),
              static_cast<long long>(s.cluster.devices), s.cluster.chip.name.c_str(), static_cast<long long>(replicas),
              static_cast<long long>(s.plan.tp), static_cast<long long>(s.plan.pp),
              s.serving.prefill_replicas > 0
                  ? (" (" + std::to_string(s.serving.prefill_replicas) + " prefill-only)").c_str()
                  : (s.serving.chunked_prefill ? " (chunked prefill)" : ""));
  std::printf("  requests         %zu over %.2f s; %.1f output tokens/s (%.2f per device), %.1f total tokens/s\n",
              r.requests.size(), span, static_cast<double>(out_tokens) / span,
              static_cast<double>(out_tokens) / span / static_cast<double>(s.cluster.devices),
              static_cast<double>(out_tokens + in_tokens) / span);
  std::printf("  time to first token   p50 %.4f s   p90 %.4f s   p99 %.4f s\n", T.p50, T.p90, T.p99);
  std::printf("  time per output token p50 %.4f s   p90 %.4f s   p99 %.4f s\n", P.p50, P.p90, P.p99);
  std::printf("  end to end            p50 %.4f s   p90 %.4f s   p99 %.4f s\n", E.p50, E.p90, E.p99);
  std::printf(
      "  kv cache         %lld blocks of %lld tokens per replica; used %.1f%% on average, %.1f%% at most; "
      "%lld preemptions\n",
      static_cast<long long>(r.kv_blocks_per_replica), static_cast<long long>(r.block_tokens),
      100 * (kv_time > 0 ? kv_area / kv_time : 0), 100 * kv_max, static_cast<long long>(r.preemptions));
  std::printf("  simulation       %zu iterations, %zu distinct shapes simulated, %.3f s wall\n", r.iterations.size(),
              timer.simulations(), wall);
  return 0;
}

}  // namespace shardsim::cli
