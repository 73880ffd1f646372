#include "shardsim/workloads/serving.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "json_reader.h"
#include "shardsim/core/error.h"
#include "shardsim/workloads/memory.h"

namespace shardsim {
namespace {

/// Uniform on [0, 1) from the top 53 bits of mt19937_64, whose output the
/// standard fixes (std::*_distribution's are not, so they are not used).
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

int64_t draw_length(const LengthDistribution& d, std::mt19937_64& rng) {
  switch (d.kind) {
    case LengthDistribution::Kind::kFixed:
      return d.min;
    case LengthDistribution::Kind::kUniform:
      return d.min + static_cast<int64_t>(uniform01(rng) * static_cast<double>(d.max - d.min + 1));
    case LengthDistribution::Kind::kLognormal: {
      // Box-Muller; the normal's mean is set so the lognormal's mean is d.mean.
      const double u1 = 1.0 - uniform01(rng), u2 = uniform01(rng);
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      const double mu = std::log(d.mean) - d.sigma * d.sigma / 2;
      const auto v = static_cast<int64_t>(std::llround(std::exp(mu + d.sigma * z)));
      return std::clamp(v, d.min, d.max);
    }
  }
  return d.min;
}

std::string dir_of(const std::string& file) {
  const size_t slash = file.find_last_of('/');
  return slash == std::string::npos ? std::string() : file.substr(0, slash + 1);
}

std::vector<ServeRequest> read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot read the request trace");
  std::stringstream ss;
  ss << in.rdbuf();
  const detail::Json j = detail::parse_json_text(ss.str(), path);
  if (!j.is_array() || j.empty() || j.size() > 1'000'000) {
    throw InputError(path, "/", "expected a non-empty array of {\"arrival_s\", \"prompt_tokens\", \"output_tokens\"}");
  }
  std::vector<ServeRequest> out;
  for (size_t i = 0; i < j.size(); ++i) {
    detail::ObjectReader r(j[i], path, "/" + std::to_string(i));
    ServeRequest q;
    q.arrival_s = r.number_in("arrival_s", 0, 1e9, 0);
    q.prompt_tokens = r.int_in("prompt_tokens", 1, int64_t{1} << 20, 1);
    q.output_tokens = r.int_in("output_tokens", 1, int64_t{1} << 20, 1);
    r.done();
    out.push_back(q);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.arrival_s < b.arrival_s; });
  return out;
}

/// A request's progress on a replica.
struct Seq {
  int64_t id = 0;
  int64_t prefilled = 0;   ///< tokens of prompt (+ generated, after a preemption) in the cache
  int64_t to_prefill = 0;  ///< tokens to put in the cache before decoding
  int64_t generated = 0;
  int64_t blocks = 0;
};

struct Replica {
  bool prefill_only = false;
  bool busy = false;
  std::deque<Seq> waiting;
  std::vector<Seq> running;
  int64_t free_blocks = 0;
  int64_t load() const { return static_cast<int64_t>(waiting.size() + running.size()); }
};

int64_t blocks_for(int64_t tokens, int64_t block) {
  return (tokens + block - 1) / block;
}

}  // namespace

/// Keeps a serving run bounded: at most 2^28 tokens generated in all.
void check_total_tokens(const std::vector<ServeRequest>& reqs, const std::string& file, const std::string& ptr) {
  int64_t total = 0;
  for (const ServeRequest& q : reqs) total += q.output_tokens;
  if (total > (int64_t{1} << 28)) {
    throw InputError(file, ptr,
                     "the requests generate " + std::to_string(total) +
                         " tokens, more than the supported 2^28 (268,435,456); use fewer or shorter requests");
  }
}

std::vector<ServeRequest> serving_requests(const Scenario& s) {
  const ServingSpec& sv = s.serving;
  if (!sv.trace_file.empty()) {
    const std::string path = sv.trace_file.front() == '/' ? sv.trace_file : dir_of(s.file) + sv.trace_file;
    std::vector<ServeRequest> reqs = read_trace(path);
    check_total_tokens(reqs, path, "/");
    return reqs;
  }
  std::mt19937_64 rng(sv.seed);
  std::vector<ServeRequest> out;
  double t = 0;
  for (int64_t i = 0; i < sv.requests; ++i) {
    t += -std::log(1.0 - uniform01(rng)) / sv.rate_per_s;  // exponential gaps: Poisson arrivals
    ServeRequest q;
    q.arrival_s = t;
    q.prompt_tokens = draw_length(sv.prompt, rng);
    q.output_tokens = draw_length(sv.output, rng);
    out.push_back(q);
  }
  check_total_tokens(out, s.file, "/serving/requests");
  return out;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

ServeResult simulate_serving(const Scenario& s, const std::vector<ServeRequest>& reqs,
                             const IterationTimeFn& iteration_s, const std::function<double(int64_t)>& kv_transfer_s) {
  const ServingSpec& sv = s.serving;
  const Plan& p = s.plan;
  ServeResult res;
  res.block_tokens = sv.block_tokens;
  // KV capacity of a replica: what the fraction of HBM leaves after the
  // weights and one iteration's activations, on the most loaded stage, in
  // blocks of block_tokens positions of every layer of that stage.
  Scenario probe = s;
  probe.plan.phase = Phase::kDecode;
  probe.plan.microbatch_size = 1;
  probe.plan.seq_len = 1;
  MemoryReport mem = inference_memory(probe);
  int64_t fixed = 0, kv_per_position = 0;
  for (const auto& c : mem.components) {
    if (c.name == "kv_cache") {
      kv_per_position = c.bytes / 2;  // 1 sequence, 2 positions (context 1 + the new token)
    } else {
      fixed += c.bytes;
    }
  }
  const double usable =
      static_cast<double>(s.cluster.chip.hbm_capacity.value()) * sv.kv_memory_fraction - static_cast<double>(fixed);
  if (usable <= 0 || kv_per_position <= 0) {
    throw InputError(s.file, "/serving/kv_memory_fraction",
                     "the weights leave no memory for a KV cache on a replica; use more tp or pp, or smaller weights");
  }
  res.kv_blocks_per_replica = static_cast<int64_t>(usable / static_cast<double>(kv_per_position * sv.block_tokens));
  if (res.kv_blocks_per_replica < 1) {
    throw InputError(s.file, "/serving/block_tokens", "not one KV block fits in the memory left after the weights");
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    const int64_t need = blocks_for(reqs[i].prompt_tokens + reqs[i].output_tokens, sv.block_tokens);
    if (need > res.kv_blocks_per_replica) {
      throw InputError(s.file, "/serving",
                       "request " + std::to_string(i) + " needs " + std::to_string(need) +
                           " KV blocks, more than a replica holds (" + std::to_string(res.kv_blocks_per_replica) + ")");
    }
  }

  // Serving replicas: dp / ep (the ep ranks of a replica share its batch).
  const auto nrep = static_cast<size_t>(p.dp / p.ep);
  std::vector<Replica> reps(nrep);
  for (size_t r = 0; r < nrep; ++r) {
    reps[r].prefill_only = static_cast<int64_t>(r) < sv.prefill_replicas;
    reps[r].free_blocks = res.kv_blocks_per_replica;
  }
  res.requests.resize(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    res.requests[i] = {reqs[i].arrival_s, 0, 0, reqs[i].prompt_tokens, reqs[i].output_tokens, 0};
  }

  // Events: (time, kind, index) processed in time order, ties by kind then
  // index: iteration ends (0) before KV arrivals (1) before request arrivals (2).
  struct Ev {
    double t;
    int kind;
    int64_t idx;
    bool operator>(const Ev& o) const { return t != o.t ? t > o.t : kind != o.kind ? kind > o.kind : idx > o.idx; }
  };
  std::vector<Ev> heap;
  auto push = [&](Ev e) {
    heap.push_back(e);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (size_t i = 0; i < reqs.size(); ++i) push({reqs[i].arrival_s, 2, static_cast<int64_t>(i)});

  // What each busy replica is running.
  struct Running {
    std::vector<int64_t> prefill_ids, prefill_tokens, decode_ids;
  };
  std::vector<Running> current(nrep);
  std::vector<size_t> open_iteration(nrep, 0);  // index of each replica's running iteration

  auto least_loaded = [&](bool want_prefill) {
    size_t best = nrep;
    for (size_t r = 0; r < nrep; ++r) {
      if (sv.prefill_replicas > 0 && reps[r].prefill_only != want_prefill) continue;
      if (best == nrep || reps[r].load() < reps[best].load()) best = r;
    }
    return best;
  };

  // Starts an iteration on an idle replica if it has work.
  auto try_start = [&](size_t r, double now) {
    Replica& rep = reps[r];
    if (rep.busy) return;
    Running run;
    IterationShape shape;
    int64_t token_budget = sv.max_batched_tokens;
    // Decodes: every running sequence that finished its prefill makes one
    // token; one that needs a new block and finds none preempts the
    // latest-admitted sequence (vLLM's recompute preemption).
    // Without chunked prefill a replica runs a prefill-only iteration
    // whenever it can admit the first waiting request (vLLM's default
    // scheduler before chunked prefill), else a decode-only one.
    bool prefill_first = false;
    if (!sv.chunked_prefill && !rep.waiting.empty()) {
      const Seq& w = rep.waiting.front();
      prefill_first = static_cast<int64_t>(rep.running.size()) < sv.max_batch &&
                      blocks_for(w.to_prefill + 1, sv.block_tokens) <= rep.free_blocks;
    }
    const bool do_decode = !rep.prefill_only && !prefill_first;
    if (do_decode) {
      for (size_t i = 0; i < rep.running.size();) {
        Seq& q = rep.running[i];
        if (q.prefilled < q.to_prefill) {
          ++i;
          continue;
        }
        const int64_t need = blocks_for(q.prefilled + 1, sv.block_tokens) - q.blocks;
        if (need > rep.free_blocks) {
          // Preempt the last-admitted sequence (possibly this one).
          Seq victim = rep.running.back();
          rep.running.pop_back();
          rep.free_blocks += victim.blocks;
          victim.blocks = 0;
          victim.to_prefill = res.requests[static_cast<size_t>(victim.id)].prompt_tokens + victim.generated;
          victim.prefilled = 0;
          ++res.requests[static_cast<size_t>(victim.id)].preemptions;
          ++res.preemptions;
          rep.waiting.push_front(victim);
          continue;  // re-examine position i (it may have been the victim)
        }
        rep.free_blocks -= need;
        q.blocks += need;
        ++i;
      }
      for (const Seq& q : rep.running) {
        if (q.prefilled < q.to_prefill) continue;
        run.decode_ids.push_back(q.id);
        ++shape.decode_sequences;
        shape.decode_context += q.prefilled;
      }
      token_budget -= shape.decode_sequences;
    }
    // Prefills: admit waiting sequences first come, first served while the
    // batch, the token budget and the free blocks allow (chunked: the last
    // one may be partial).
    const bool may_prefill = sv.chunked_prefill || shape.decode_sequences == 0;
    if (may_prefill) {
      // Partially prefilled running sequences continue first (chunked).
      for (Seq& q : rep.running) {
        if (q.prefilled >= q.to_prefill || token_budget <= 0) continue;
        const int64_t chunk = std::min(q.to_prefill - q.prefilled, token_budget);
        run.prefill_ids.push_back(q.id);
        run.prefill_tokens.push_back(chunk);
        token_budget -= chunk;
      }
      while (!rep.waiting.empty() && token_budget > 0 && static_cast<int64_t>(rep.running.size()) < sv.max_batch) {
        Seq& w = rep.waiting.front();
        const int64_t remaining = w.to_prefill - w.prefilled;
        if (!sv.chunked_prefill && remaining > token_budget && !run.prefill_ids.empty()) break;
        // Blocks for the whole prompt (and the first generated token) up front.
        const int64_t need = blocks_for(w.to_prefill + 1, sv.block_tokens);
        if (need > rep.free_blocks) break;
        rep.free_blocks -= need;
        w.blocks = need;
        const int64_t chunk = sv.chunked_prefill ? std::min(remaining, token_budget) : remaining;
        run.prefill_ids.push_back(w.id);
        run.prefill_tokens.push_back(chunk);
        token_budget -= chunk;
        rep.running.push_back(w);
        rep.waiting.pop_front();
      }
    }
    if (run.prefill_ids.empty() && run.decode_ids.empty()) return;
    for (size_t k = 0; k < run.prefill_ids.size(); ++k) {
      const Seq* q = nullptr;
      for (const Seq& x : rep.running) {
        if (x.id == run.prefill_ids[k]) q = &x;
      }
      const int64_t a = q->prefilled, n = run.prefill_tokens[k];
      shape.prefill_tokens += n;
      // Causal pairs of tokens a+1..a+n, each attending to everything before it.
      shape.prefill_pairs += n * a + n * (n + 1) / 2;
      if (a + n >= q->to_prefill) ++shape.prefill_completing;
    }
    const double dt = iteration_s(shape);
    rep.busy = true;
    current[r] = std::move(run);
    ServeIteration it;
    it.replica = static_cast<int32_t>(r);
    it.start_s = now;
    it.end_s = now + dt;
    it.shape = shape;
    open_iteration[r] = res.iterations.size();
    res.iterations.push_back(it);
    push({now + dt, 0, static_cast<int64_t>(r)});
  };

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const Ev e = heap.back();
    heap.pop_back();
    if (e.kind == 2) {  // a request arrives
      const size_t r = least_loaded(true);
      reps[r].waiting.push_back(Seq{e.idx, 0, reqs[static_cast<size_t>(e.idx)].prompt_tokens, 0, 0});
      try_start(r, e.t);
      continue;
    }
    if (e.kind == 1) {  // a prefilled request's KV reaches a decode replica
      const size_t r = least_loaded(false);
      const ServeRequest& q = reqs[static_cast<size_t>(e.idx)];
      Seq seq{e.idx, q.prompt_tokens, q.prompt_tokens, 1, 0};
      const int64_t need = blocks_for(q.prompt_tokens + 1, sv.block_tokens);
      // Admitted when blocks allow; otherwise it waits as a prefilled request
      // (re-prefilled locally if it must: a conservative simplification).
      if (need <= reps[r].free_blocks) {
        reps[r].free_blocks -= need;
        seq.blocks = need;
        reps[r].running.push_back(seq);
      } else {
        seq.prefilled = 0;
        seq.to_prefill = q.prompt_tokens + 1;
        reps[r].waiting.push_back(seq);
      }
      try_start(r, e.t);
      continue;
    }
    // An iteration ends on replica r.
    const auto r = static_cast<size_t>(e.idx);
    Replica& rep = reps[r];
    const Running run = std::move(current[r]);
    rep.busy = false;
    for (size_t k = 0; k < run.prefill_ids.size(); ++k) {
      for (size_t i = 0; i < rep.running.size(); ++i) {
        Seq& q = rep.running[i];
        if (q.id != run.prefill_ids[k]) continue;
        q.prefilled += run.prefill_tokens[k];
        if (q.prefilled < q.to_prefill) break;
        ServeRequestResult& out = res.requests[static_cast<size_t>(q.id)];
        // The prefill's last position yields a token (the first, unless this
        // was a recomputation after a preemption).
        if (q.generated == 0) {
          out.first_token_s = e.t;
          q.generated = 1;
        }
        if (rep.prefill_only) {
          // Disaggregated: hand the KV cache to a decode replica.
          rep.free_blocks += q.blocks;
          if (q.generated >= out.output_tokens) {
            out.finish_s = e.t;
          } else {
            ++res.kv_transfers;
            push({e.t + kv_transfer_s(out.prompt_tokens), 1, q.id});
          }
          rep.running.erase(rep.running.begin() + static_cast<std::ptrdiff_t>(i));
        } else if (q.generated >= out.output_tokens) {
          out.finish_s = e.t;
          rep.free_blocks += q.blocks;
          rep.running.erase(rep.running.begin() + static_cast<std::ptrdiff_t>(i));
        }
        break;
      }
    }
    for (int64_t id : run.decode_ids) {
      for (size_t i = 0; i < rep.running.size(); ++i) {
        Seq& q = rep.running[i];
        if (q.id != id) continue;
        ++q.prefilled;  // the token generated last iteration is now cached
        ++q.generated;
        ServeRequestResult& out = res.requests[static_cast<size_t>(id)];
        if (q.generated >= out.output_tokens) {
          out.finish_s = e.t;
          rep.free_blocks += q.blocks;
          rep.running.erase(rep.running.begin() + static_cast<std::ptrdiff_t>(i));
        }
        break;
      }
    }
    // Occupancy after the iteration that just ended.
    ServeIteration& done = res.iterations[open_iteration[r]];
    done.running = static_cast<int64_t>(rep.running.size());
    done.kv_used = 1.0 - static_cast<double>(rep.free_blocks) / static_cast<double>(res.kv_blocks_per_replica);
    try_start(r, e.t);
  }
  std::stable_sort(res.iterations.begin(), res.iterations.end(),
                   [](const ServeIteration& a, const ServeIteration& b) { return a.end_s < b.end_s; });
  return res;
}

}  // namespace shardsim
