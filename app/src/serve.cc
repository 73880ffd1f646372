#include "shardsim/app/serve.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "shardsim/app/step.h"
#include "shardsim/core/error.h"
#include "shardsim/sim/engine.h"
#include "shardsim/sim/transfer.h"

namespace shardsim {
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
    if (replica_.cluster.fabric != FabricKind::kNvswitchFatTree && replica_.cluster.devices != s.cluster.devices) {
      // A torus (or a graph fabric) replica keeps the slice's shape only when
      // the slice is one replica; otherwise time it on the whole slice with
      // dp replicas.
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
    shape.prefill_completing = bucket(shape.prefill_completing);
    shape.decode_sequences = bucket(shape.decode_sequences);
    shape.prefill_pairs = bucket(shape.prefill_pairs);
    shape.decode_context = bucket(shape.decode_context);
    const auto key = std::make_tuple(shape.prefill_tokens, shape.prefill_pairs, shape.prefill_completing,
                                     shape.decode_sequences, shape.decode_context, shape.decode_tokens);
    auto [it, fresh] = cache_.try_emplace(key, 0.0);
    if (fresh) {
      const ProgramSet programs = lower_iteration(replica_, shape);
      const EngineOptions opt = step_engine_options(replica_, {}, use_replica_shortcut(replica_, ReplicaShortcut::kOn));
      it->second = simulate(programs, *mesh_, *topo_, replica_.cluster.chip, opt).step_time.seconds();
    }
    return it->second;
  }
  size_t simulations() const { return cache_.size(); }

 private:
  const Scenario& s_;
  Scenario replica_;
  std::unique_ptr<Topology> topo_;
  std::unique_ptr<Mesh> mesh_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>, double> cache_;
};

/// Moving one request's KV cache from a prefill replica to a decode replica:
/// every layer's K and V of each prompt position, each of the prefill
/// replica's tp·pp devices (its ep rank that held the request) sending its
/// share to the device with the same tp and pp coordinates in the first
/// decode replica, timed on the cluster's fabric by the simulator's network
/// model (sim/transfer.h: max-min shared links, route latencies), alone on
/// the fabric. Once per prompt length.
class KvTransferTimer {
 public:
  explicit KvTransferTimer(const Scenario& s) : s_(s) {
    if (s.serving.prefill_replicas <= 0) return;
    const Plan& p = s.plan;
    const Mesh mesh = build_mesh(p);
    const int64_t to_replica = s.serving.prefill_replicas * p.ep;  // dp coordinate of the first decode replica
    topo_ = build_topology(s.cluster);
    for (int64_t pp = 0; pp < p.pp; ++pp) {
      for (int64_t tp = 0; tp < p.tp; ++tp) {
        const int64_t src = tp * mesh.stride(MeshAxis::kTp) + pp * mesh.stride(MeshAxis::kPp);
        const int64_t dst = src + to_replica * mesh.stride(MeshAxis::kDp);
        flows_.push_back({static_cast<DeviceId>(src), static_cast<DeviceId>(dst), 0});
      }
    }
  }

  double operator()(int64_t prompt_tokens) {
    auto [it, fresh] = cache_.try_emplace(prompt_tokens, 0.0);
    if (fresh) {
      const ModelSpec& m = s_.model;
      // K and V of every KV head, or MLA's latent, which each tp rank holds
      // and sends whole.
      const double per_layer = m.is_mla() ? static_cast<double>(s_.plan.tp * m.kv_cache_values(s_.plan.tp))
                                          : 2.0 * static_cast<double>(m.kv_heads * m.head_dim);
      const double bytes = static_cast<double>(prompt_tokens) * static_cast<double>(m.layers) * per_layer *
                           dtype_bytes(s_.plan.kv_dtype);
      for (FlowSpec& f : flows_) f.bytes = bytes / static_cast<double>(flows_.size());
      it->second = transfers_alone_time(*topo_, flows_).seconds();
    }
    return it->second;
  }

 private:
  const Scenario& s_;
  std::unique_ptr<Topology> topo_;
  std::vector<FlowSpec> flows_;
  std::map<int64_t, double> cache_;
};

LatencyPercentiles pcts(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return {percentile(v, 50), percentile(v, 90), percentile(v, 99), v.empty() ? 0 : sum / static_cast<double>(v.size())};
}
}  // namespace

ServeSummary run_serving(const Scenario& s) {
  if (!s.serving.present) {
    throw InputError(s.file, "/serving",
                     "missing: serving a request stream needs a \"serving\" object (see docs/inference.md)");
  }
  // An iteration mixes prefills and decodes of many lengths: a shape no
  // scenario plan describes, so no worker process can be handed it.
  if (s.simulator.backend != SimulatorSpec::Backend::kNative) {
    throw InputError(s.file, "/simulator/backend",
                     "shardsim serve times its iterations on the native engine only; use \"native\"");
  }
  const auto t0 = std::chrono::steady_clock::now();
  ServeSummary out;
  const std::vector<ServeRequest> reqs = serving_requests(s);
  IterationTimer timer(s);
  // Speculative decoding: the drafter (a model of its own, or a head of
  // draft_layers layers on the target) runs on the replica's devices before
  // the target verifies: a first pass over the iteration's prompt tokens and
  // one token of each decoding sequence, then k - 1 decode passes.
  const int64_t k = s.serving.speculative_tokens;
  Scenario drafter = s;
  std::unique_ptr<IterationTimer> draft_timer;  // built only when speculating
  if (k > 0) {
    if (s.serving.draft_model.layers > 0) {
      drafter.model = s.serving.draft_model;
    } else {
      drafter.model.layers = s.serving.draft_layers;
    }
    draft_timer = std::make_unique<IterationTimer>(drafter);
  }
  auto iteration_s = [&](const IterationShape& sh) {
    double t = timer(sh);
    if (!draft_timer) return t;
    IterationShape first = sh;
    first.decode_tokens = 1;
    t += (*draft_timer)(first);
    if (k > 1 && sh.decode_sequences > 0) {
      IterationShape step;
      step.decode_sequences = sh.decode_sequences;
      step.decode_context = sh.decode_context + sh.decode_sequences;
      t += static_cast<double>(k - 1) * (*draft_timer)(step);
    }
    return t;
  };
  KvTransferTimer kv_transfer(s);
  out.result = simulate_serving(s, reqs, iteration_s, [&](int64_t prompt) { return kv_transfer(prompt); });
  const ServeResult& r = out.result;
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
  out.duration_s = std::max(1e-12, last - first);
  out.output_tokens_per_s = static_cast<double>(out_tokens) / out.duration_s;
  out.total_tokens_per_s = static_cast<double>(out_tokens + in_tokens) / out.duration_s;
  out.output_tokens_per_s_per_device = out.output_tokens_per_s / static_cast<double>(s.cluster.devices);
  out.ttft_s = pcts(ttft);
  out.tpot_s = pcts(tpot);
  out.e2e_s = pcts(e2e);
  {
    const auto& itl = r.inter_token_s;
    double sum = 0;
    int64_t n = 0;
    for (const auto& [gap, count] : itl) {
      sum += gap * static_cast<double>(count);
      n += count;
    }
    out.itl_s = {percentile_counted(itl, 50), percentile_counted(itl, 90), percentile_counted(itl, 99),
                 n ? sum / static_cast<double>(n) : 0};
  }
  // KV use, time-weighted over each replica's iterations.
  double area = 0, time = 0;
  for (const ServeIteration& it : r.iterations) {
    area += it.kv_used * (it.end_s - it.start_s);
    time += it.end_s - it.start_s;
    out.kv_max_used = std::max(out.kv_max_used, it.kv_used);
  }
  out.kv_mean_used = time > 0 ? area / time : 0;
  out.replicas = s.plan.dp / s.plan.ep;
  out.distinct_iterations_simulated = timer.simulations() + (draft_timer ? draft_timer->simulations() : 0);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace shardsim
