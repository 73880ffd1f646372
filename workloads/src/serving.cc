// The serving scheduler: iteration-level scheduling with a paged KV cache on
// each replica, driven by three kinds of events (see serving.h for the
// sources). The scheduler's choices are the ServingSpec's:
//   - chunked_prefill: a prompt longer than the iteration's token budget is
//     prefilled in chunks (Sarathi-Serve; vLLM V1, SGLang); otherwise whole;
//   - mixed_batches: running sequences decode in the same iteration as the
//     prefills (vLLM V1, TensorRT-LLM in-flight batching); otherwise an
//     iteration prefills when it can admit the first waiting request and
//     decodes otherwise (vLLM V0, SGLang's default);
//   - admission: KV blocks for the prompt, then one per block crossed, with
//     recompute preemption of the latest-admitted sequence when none is free
//     (vLLM, SGLang), or blocks for the prompt and every output token up front
//     and no preemption (TensorRT-LLM's GUARANTEED_NO_EVICT);
//   - iteration_overhead_us: the engine's host time per iteration that the
//     GPU waits for, added to every iteration;
//   - speculative_tokens: each decode step of a sequence verifies its last
//     token and k draft tokens (the KV cache holds room for all k + 1) and
//     makes 1 + the drafts accepted before the first rejection, each accepted
//     with probability speculative_acceptance (drawn from the serving seed),
//     never more than the request still needs; the step's time is the
//     callback's (target and drafter);
//   - routing: each arrival goes to the replica with the fewest requests
//     (waiting or running; ties to the lowest index), or as SGLang's router
//     routes with its default cache_aware policy (sgl-router
//     py_src/sglang_router/router_args.py: cache_threshold 0.3,
//     balance_abs_threshold 64, balance_rel_threshold 1.5; its routing
//     comment): when the loads are imbalanced (max - min > 64 and max > 1.5 x
//     min) to the least loaded; otherwise to the replica whose record of
//     routed prompts matches the most of this one, if more than 0.3 of it,
//     else to the replica whose record is smallest. The record is the
//     router's approximate tree of every prompt it sent there (not the
//     replica's cache): here a prefix id sent there matches its prefix's
//     tokens, and the record's size counts each prefix once and every
//     prompt's own tokens (the router's tree eviction, at 2^26 characters,
//     is not modelled);
//   - prefix_caching: a prompt that begins with a prefix the replica holds
//     takes the prefix's full KV blocks from the cache and prefills only the
//     rest, as vLLM's automatic prefix caching does (Kwon et al.; vLLM
//     v1/core/kv_cache_manager.py): blocks are shared by reference count, a
//     hit is whole blocks and stops short of the prompt's last token (the
//     logits need it computed: max_cache_hit_length = num_tokens - 1), the
//     first request of a prefix to prefill it leaves its full blocks in the
//     cache, blocks no request holds stay cached until memory is needed and
//     are then evicted least recently used first, from a prefix's end (vLLM
//     frees a request's blocks in reverse order to the tail of its LRU free
//     queue). Prefixes are matched by id, not by hashing tokens: requests
//     share exactly the prefix their generator or trace says. A request
//     prefilled while its prefix is still being computed by another does not
//     hit (vLLM caches a block only once it is full and computed).
#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

#include "shardsim/core/error.h"
#include "shardsim/workloads/memory.h"
#include "shardsim/workloads/serving.h"
#include "uniform01.h"

namespace shardsim {
namespace {

/// A request's progress on a replica.
struct Seq {
  int64_t id = 0;
  int64_t prefilled = 0;   ///< tokens of prompt (+ generated, after a preemption) in the cache
  int64_t to_prefill = 0;  ///< tokens to put in the cache before decoding
  int64_t generated = 0;
  int64_t blocks = 0;  ///< KV blocks it holds alone
  int64_t shared = 0;  ///< KV blocks of its prefix it holds in the prefix cache (by reference)
};

/// A cached prefix on a replica: its first `blocks` full KV blocks.
struct PrefixEntry {
  int64_t blocks = 0;
  int64_t refs = 0;      ///< running sequences that hold it
  int64_t last_use = 0;  ///< when a sequence last let go of it (LRU order)
};

struct Replica {
  bool prefill_only = false;
  bool busy = false;
  std::deque<Seq> waiting;
  std::vector<Seq> running;
  int64_t free_blocks = 0;
  std::map<int64_t, PrefixEntry> prefixes;  ///< by prefix id
  int64_t evictable = 0;                    ///< blocks of prefixes no sequence holds
  int64_t load() const { return static_cast<int64_t>(waiting.size() + running.size()); }
};

int64_t blocks_for(int64_t tokens, int64_t block) {
  return (tokens + block - 1) / block;
}

/// Events in time order; at equal times iteration ends come before KV
/// arrivals before request arrivals, then by index.
enum class EventKind : int { kIterationEnd = 0, kKvArrival = 1, kRequestArrival = 2 };
struct Event {
  double t;
  EventKind kind;
  int64_t idx;  ///< the replica (iteration end) or the request
  bool operator>(const Event& o) const {
    if (t != o.t) return t > o.t;
    if (kind != o.kind) return kind > o.kind;
    return idx > o.idx;
  }
};

/// What a busy replica is running.
struct Batch {
  std::vector<int64_t> prefill_ids, prefill_tokens, decode_ids;
  std::vector<int64_t> prefill_before, prefill_target;  ///< per prefill: tokens cached before it, and to cache in all
};

/// KV blocks a replica holds, on its most loaded stage, in blocks of
/// block_tokens positions of every layer of that stage: the memory the
/// engine gives the cache less what it holds beside it. Engines that size
/// the cache after a forward of their largest iteration (vLLM's profile run
/// of max_num_batched_tokens; TensorRT-LLM's runtime buffers for
/// max_num_tokens and the logits of max_batch_size rows) leave that
/// iteration's activations and logits out of it (activation_workspace);
/// SGLang's static fraction already reserves them.
/// The drafter's weights on a replica device and its KV bytes per cached
/// position there: a draft model's own; a draft head's, its layers' share of
/// a target of as many layers (it shares the target's embedding and LM head).
std::pair<double, double> drafter_memory(const Scenario& s) {
  Scenario probe = s;
  probe.plan.phase = Phase::kPrefill;
  probe.plan.microbatch_size = 1;
  probe.plan.seq_len = 1;
  auto measure = [&probe](int64_t layers) {
    if (layers > 0) probe.model.layers = layers;
    double w = 0, kv = 0;
    for (const auto& c : inference_memory(probe).components) {
      if (c.name == "weights") w = static_cast<double>(c.bytes);
      if (c.name == "kv_cache") kv = static_cast<double>(c.bytes);
    }
    return std::make_pair(w, kv);
  };
  if (s.serving.draft_model.layers > 0) {
    probe.model = s.serving.draft_model;
    return measure(0);
  }
  const auto one = measure(1), two = measure(2);
  const auto n = static_cast<double>(s.serving.draft_layers);
  return {(two.first - one.first) * n, one.second * n};
}

int64_t kv_blocks_per_replica(const Scenario& s) {
  const ServingSpec& sv = s.serving;
  Scenario probe = s;
  probe.plan.phase = Phase::kPrefill;
  probe.plan.microbatch_size = 1;
  probe.plan.seq_len = sv.activation_workspace ? sv.max_batched_tokens : 1;
  const MemoryReport mem = inference_memory(probe);
  double fixed = 0, kv_per_position = 0;
  for (const auto& c : mem.components) {
    const auto b = static_cast<double>(c.bytes);
    if (c.name == "kv_cache") {
      kv_per_position = b / static_cast<double>(probe.plan.seq_len);
    } else if (c.name == "logits" && sv.activation_workspace) {
      fixed += b * static_cast<double>(std::min(sv.max_batch, sv.max_batched_tokens));  // one row's, for each sequence
    } else if (c.name == "weights" || sv.activation_workspace) {
      fixed += b;
    }
  }
  if (sv.speculative_tokens > 0) {
    const auto [weights, kv] = drafter_memory(s);
    fixed += weights;
    kv_per_position += kv;
  }
  if (sv.kv_memory_of_free) fixed += static_cast<double>(sv.runtime_reserved_bytes);
  const double hbm = static_cast<double>(s.cluster.chip.hbm_capacity.value());
  const double usable =
      sv.kv_memory_of_free ? (hbm - fixed) * sv.kv_memory_fraction : hbm * sv.kv_memory_fraction - fixed;
  if (usable <= 0 || kv_per_position <= 0) {
    throw InputError(s.file, "/serving/kv_memory_fraction",
                     "the weights leave no memory for a KV cache on a replica; use more tp or pp, or smaller weights");
  }
  const auto blocks = static_cast<int64_t>(usable / (kv_per_position * static_cast<double>(sv.block_tokens)));
  if (blocks < 1)
    throw InputError(s.file, "/serving/block_tokens", "not one KV block fits in the memory left after the weights");
  return blocks;
}

class Scheduler {
 public:
  Scheduler(const Scenario& s, const std::vector<ServeRequest>& reqs, const IterationTimeFn& iteration_s,
            const std::function<double(int64_t)>& kv_transfer_s)
      : sv_(s.serving),
        reqs_(reqs),
        iteration_s_(iteration_s),
        kv_transfer_s_(kv_transfer_s),
        accept_rng_(sv_.seed ^ 0x9e3779b97f4a7c15ULL) {
    res_.block_tokens = sv_.block_tokens;
    res_.kv_blocks_per_replica = kv_blocks_per_replica(s);
    for (size_t i = 0; i < reqs.size(); ++i) {
      const int64_t need = blocks_for(reqs[i].prompt_tokens + reqs[i].output_tokens, sv_.block_tokens);
      if (need > res_.kv_blocks_per_replica) {
        throw InputError(s.file, "/serving",
                         "request " + std::to_string(i) + " needs " + std::to_string(need) +
                             " KV blocks, more than a replica holds (" + std::to_string(res_.kv_blocks_per_replica) +
                             ")");
      }
    }
    // Serving replicas: dp / ep (the ep ranks of a replica share its batch).
    reps_.resize(static_cast<size_t>(s.plan.dp / s.plan.ep));
    for (size_t r = 0; r < reps_.size(); ++r) {
      reps_[r].prefill_only = static_cast<int64_t>(r) < sv_.prefill_replicas;
      reps_[r].free_blocks = res_.kv_blocks_per_replica;
    }
    batches_.resize(reps_.size());
    routed_.resize(reps_.size());
    open_iteration_.resize(reps_.size(), 0);
    starting_.resize(reps_.size(), false);
    last_token_s_.resize(reqs.size(), 0);
    chunk_.resize(reqs.size(), 0);
    res_.requests.resize(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
      res_.requests[i] = {reqs[i].arrival_s, 0, 0, reqs[i].prompt_tokens, reqs[i].output_tokens, 0};
    }
  }

  ServeResult run() {
    const bool closed = sv_.arrivals == Arrivals::kClosedLoop && sv_.trace_file.empty();
    const size_t first = closed ? std::min(reqs_.size(), static_cast<size_t>(sv_.concurrency)) : reqs_.size();
    for (size_t i = 0; i < first; ++i) issue(static_cast<int64_t>(i), reqs_[i].arrival_s);
    next_issue_ = first;
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      const Event e = heap_.back();
      heap_.pop_back();
      switch (e.kind) {
        case EventKind::kRequestArrival:
          on_arrival(e);
          break;
        case EventKind::kKvArrival:
          on_kv_arrival(e);
          break;
        case EventKind::kIterationEnd:
          on_iteration_end(e);
          break;
      }
      // Every event at one instant is applied before any replica starts its
      // next iteration (a burst's requests are all queued when the first
      // iteration is formed).
      if (heap_.empty() || heap_.front().t != e.t) {
        for (size_t r = 0; r < reps_.size(); ++r) {
          if (starting_[r]) try_start(r, e.t);
          starting_[r] = false;
        }
      }
    }
    // Iterations are recorded as they start; one replica's already end in
    // order. Sorting them anyway: 0.41 s against 0.38 s, the median of five
    // `shardsim serve` walls of trt017-llama3-70b-h100-sxm-tp1-500-2000
    // (224,000 iterations; examples/validation/serving/scenarios).
    const auto by_end = [](const ServeIteration& a, const ServeIteration& b) { return a.end_s < b.end_s; };
    if (!std::is_sorted(res_.iterations.begin(), res_.iterations.end(), by_end)) {
      std::stable_sort(res_.iterations.begin(), res_.iterations.end(), by_end);
    }
    res_.inter_token_s.assign(itl_.begin(), itl_.end());
    return std::move(res_);
  }

 private:
  void push(Event e) {
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  }

  void issue(int64_t id, double t) {
    res_.requests[static_cast<size_t>(id)].arrival_s = t;
    push({t, EventKind::kRequestArrival, id});
  }

  size_t least_loaded(bool want_prefill) const {
    size_t best = reps_.size();
    for (size_t r = 0; r < reps_.size(); ++r) {
      if (sv_.prefill_replicas > 0 && reps_[r].prefill_only != want_prefill) continue;
      if (best == reps_.size() || reps_[r].load() < reps_[best].load()) best = r;
    }
    return best;
  }

  /// KV blocks a waiting sequence takes when admitted, the `hit` blocks of
  /// its prefix it finds cached included.
  int64_t admission_blocks(const Seq& w) const {
    if (sv_.admission == Admission::kReserveOutput) {
      const ServeRequest& q = reqs_[static_cast<size_t>(w.id)];
      return blocks_for(q.prompt_tokens + q.output_tokens, sv_.block_tokens);
    }
    return blocks_for(w.to_prefill + 1, sv_.block_tokens);
  }

  /// The full blocks of a waiting sequence's prefix cached on `rep`: at most
  /// the prefix's full blocks, and short of the last token to prefill.
  int64_t hit_blocks(const Replica& rep, const Seq& w) const {
    const ServeRequest& q = reqs_[static_cast<size_t>(w.id)];
    if (!sv_.prefix_caching || q.prefix_id < 0 || w.prefilled > 0) return 0;
    const auto it = rep.prefixes.find(q.prefix_id);
    if (it == rep.prefixes.end()) return 0;
    return std::min({it->second.blocks, q.prefix_tokens / sv_.block_tokens, (w.to_prefill - 1) / sv_.block_tokens});
  }

  /// Blocks an admission of `w` could take: the free ones and the cached
  /// ones no sequence holds, less those of the prefix it would hold.
  int64_t admittable_blocks(const Replica& rep, const Seq& w, int64_t hit) const {
    int64_t avail = rep.free_blocks + rep.evictable;
    if (hit > 0) {
      const PrefixEntry& e = rep.prefixes.at(reqs_[static_cast<size_t>(w.id)].prefix_id);
      if (e.refs == 0) avail -= e.blocks;
    }
    return avail;
  }

  /// Takes n blocks, evicting cached prefixes no sequence holds, least
  /// recently used first, from their ends, when too few are free. The caller
  /// has checked that free + evictable blocks suffice.
  void take_blocks(Replica& rep, int64_t n) {
    while (rep.free_blocks < n) {
      auto lru = rep.prefixes.end();
      for (auto it = rep.prefixes.begin(); it != rep.prefixes.end(); ++it) {
        if (it->second.refs == 0 && (lru == rep.prefixes.end() || it->second.last_use < lru->second.last_use)) {
          lru = it;
        }
      }
      if (lru == rep.prefixes.end()) throw std::logic_error("serving: KV blocks taken beyond those available");
      const int64_t evict = std::min(lru->second.blocks, n - rep.free_blocks);
      lru->second.blocks -= evict;
      rep.evictable -= evict;
      rep.free_blocks += evict;
      if (lru->second.blocks == 0) rep.prefixes.erase(lru);
    }
    rep.free_blocks -= n;
  }

  /// A sequence lets go of its KV blocks: its own are freed, its prefix's
  /// stay cached.
  void release(Replica& rep, Seq& q) {
    rep.free_blocks += q.blocks;
    q.blocks = 0;
    if (q.shared == 0) return;
    PrefixEntry& e = rep.prefixes.at(reqs_[static_cast<size_t>(q.id)].prefix_id);
    e.last_use = ++clock_;
    if (--e.refs == 0) rep.evictable += e.blocks;
    q.shared = 0;
  }

  /// Admits a waiting sequence: it holds the `hit` cached blocks of its
  /// prefix (which it will not prefill) and takes the rest of its blocks.
  void admit(Replica& rep, Seq& w, int64_t hit) {
    if (hit > 0) {
      PrefixEntry& e = rep.prefixes.at(reqs_[static_cast<size_t>(w.id)].prefix_id);
      if (e.refs++ == 0) rep.evictable -= e.blocks;
      w.shared = hit;
      w.prefilled = hit * sv_.block_tokens;
    }
    const int64_t need = admission_blocks(w) - hit;
    take_blocks(rep, need);
    w.blocks = need;
    res_.admitted_prompt_tokens += w.to_prefill;
    res_.prefix_hit_tokens += w.prefilled;
    if (w.generated == 0) res_.requests[static_cast<size_t>(w.id)].cached_prompt_tokens = w.prefilled;
  }

  /// A sequence has prefilled its prefix's full blocks: if no copy of them is
  /// cached yet, its own become the cache's (it holds them by reference).
  void cache_prefix(Replica& rep, Seq& q) {
    const ServeRequest& r = reqs_[static_cast<size_t>(q.id)];
    if (!sv_.prefix_caching || r.prefix_id < 0) return;
    const int64_t full = r.prefix_tokens / sv_.block_tokens;
    if (full <= q.shared || q.prefilled < full * sv_.block_tokens) return;
    auto [it, fresh] = rep.prefixes.try_emplace(r.prefix_id);
    PrefixEntry& e = it->second;
    // Another sequence cached it meanwhile (or what is left of an evicted
    // copy it did not take): keep this one's blocks its own.
    if (!fresh && q.shared != e.blocks) return;
    if (fresh) e.refs = 1;
    const int64_t moved = full - q.shared;
    e.blocks = full;
    q.blocks -= moved;
    q.shared = full;
  }

  /// A request made its last token: its blocks are freed and, in a closed
  /// loop, its client sends the next request. Returns true (it leaves).
  bool finish(Replica& rep, Seq& q, double t) {
    res_.requests[static_cast<size_t>(q.id)].finish_s = t;
    release(rep, q);
    if (sv_.arrivals == Arrivals::kClosedLoop && sv_.trace_file.empty() && next_issue_ < reqs_.size()) {
      issue(static_cast<int64_t>(next_issue_++), t);  // the freed client sends its next request
    }
    return true;
  }

  /// SGLang's cache_aware router (see the top of this file).
  size_t cache_aware(const ServeRequest& q) const {
    constexpr double kCacheThreshold = 0.3, kBalanceRel = 1.5;
    constexpr int64_t kBalanceAbs = 64;
    int64_t lo = INT64_MAX, hi = 0;
    for (const Replica& rep : reps_) {
      lo = std::min(lo, rep.load());
      hi = std::max(hi, rep.load());
    }
    if (hi - lo > kBalanceAbs && static_cast<double>(hi) > kBalanceRel * static_cast<double>(lo)) {
      return least_loaded(true);
    }
    size_t best = reps_.size();
    if (q.prefix_id >= 0 &&
        static_cast<double>(q.prefix_tokens) / static_cast<double>(q.prompt_tokens) > kCacheThreshold) {
      for (size_t r = 0; r < reps_.size(); ++r) {
        if (routed_[r].prefixes.count(q.prefix_id) > 0) {
          best = r;
          break;  // every replica that has it matches as much: the first
        }
      }
    }
    if (best == reps_.size()) {
      best = 0;
      for (size_t r = 1; r < reps_.size(); ++r) {
        if (routed_[r].tokens < routed_[best].tokens) best = r;
      }
    }
    return best;
  }

  void on_arrival(const Event& e) {
    const ServeRequest& q = reqs_[static_cast<size_t>(e.idx)];
    const bool aware = sv_.routing == ServingSpec::Routing::kCacheAware;  // the loader refuses it disaggregated
    const size_t r = aware ? cache_aware(q) : least_loaded(true);
    if (aware) {
      // The router records the prompt under the replica it chose.
      RoutedRecord& rec = routed_[r];
      const bool fresh = q.prefix_id >= 0 && rec.prefixes.insert(q.prefix_id).second;
      rec.tokens += q.prompt_tokens - (q.prefix_id >= 0 && !fresh ? q.prefix_tokens : 0);
    }
    res_.requests[static_cast<size_t>(e.idx)].replica = static_cast<int32_t>(r);
    reps_[r].waiting.push_back(Seq{e.idx, 0, reqs_[static_cast<size_t>(e.idx)].prompt_tokens, 0, 0});
    starting_[r] = true;
  }

  /// A prefilled request's KV cache reaches a decode replica (disaggregation).
  void on_kv_arrival(const Event& e) {
    const size_t r = least_loaded(false);
    Replica& rep = reps_[r];
    const ServeRequest& q = reqs_[static_cast<size_t>(e.idx)];
    Seq seq{e.idx, q.prompt_tokens, q.prompt_tokens, 1, 0};
    const int64_t need = admission_blocks(seq);
    // Admitted when blocks allow; otherwise it waits as a prefilled request
    // (re-prefilled locally if it must: a conservative simplification).
    if (need <= rep.free_blocks + rep.evictable) {
      take_blocks(rep, need);
      seq.blocks = need;
      rep.running.push_back(seq);
    } else {
      seq.prefilled = 0;
      seq.to_prefill = q.prompt_tokens + 1;
      rep.waiting.push_back(seq);
    }
    starting_[r] = true;
  }

  void on_iteration_end(const Event& e) {
    const auto r = static_cast<size_t>(e.idx);
    Replica& rep = reps_[r];
    const Batch batch = std::move(batches_[r]);
    rep.busy = false;
    // What the batch did to each request, then one pass over the running
    // sequences in their order (finishing ones leave it).
    for (size_t k = 0; k < batch.prefill_ids.size(); ++k)
      chunk_[static_cast<size_t>(batch.prefill_ids[k])] = batch.prefill_tokens[k];
    for (int64_t id : batch.decode_ids) chunk_[static_cast<size_t>(id)] = -1;
    size_t kept = 0;
    for (size_t i = 0; i < rep.running.size(); ++i) {
      Seq& q = rep.running[i];
      int64_t& did = chunk_[static_cast<size_t>(q.id)];
      const bool leaves = did > 0 ? prefilled(rep, q, did, e.t) : did < 0 ? decoded(rep, q, e.t) : false;
      did = 0;
      if (leaves) continue;
      if (kept != i) rep.running[kept] = q;
      ++kept;
    }
    rep.running.resize(kept);
    // Occupancy after the iteration that just ended.
    ServeIteration& done = res_.iterations[open_iteration_[r]];
    done.running = static_cast<int64_t>(rep.running.size());
    // Cached blocks no sequence holds count as free, as vLLM's usage does.
    done.kv_used =
        1.0 - static_cast<double>(rep.free_blocks + rep.evictable) / static_cast<double>(res_.kv_blocks_per_replica);
    starting_[r] = true;
  }

  /// A prefill chunk of n tokens ended; whether the sequence leaves the replica.
  bool prefilled(Replica& rep, Seq& q, int64_t n, double t) {
    q.prefilled += n;
    cache_prefix(rep, q);
    if (q.prefilled < q.to_prefill) return false;
    ServeRequestResult& out = res_.requests[static_cast<size_t>(q.id)];
    // The prefill's last position yields a token (the first, unless this
    // was a recomputation after a preemption).
    if (q.generated == 0) {
      out.first_token_s = t;
      last_token_s_[static_cast<size_t>(q.id)] = t;
      q.generated = 1;
    }
    if (q.generated >= out.output_tokens) return finish(rep, q, t);
    if (!rep.prefill_only) return false;
    // Disaggregated: hand the KV cache to a decode replica.
    ++res_.kv_transfers;
    push({t + kv_transfer_s_(out.prompt_tokens), EventKind::kKvArrival, q.id});
    release(rep, q);
    return true;
  }

  /// A decode step ended: the token made last iteration is cached and one
  /// more is out; whether the sequence is done.
  bool decoded(Replica& rep, Seq& q, double t) {
    int64_t made = 1;
    if (sv_.speculative_tokens > 0) {
      // Drafts accepted in order until the first rejection, then the
      // target's own token; no more than the request still needs.
      int64_t accepted = 0;
      while (accepted < sv_.speculative_tokens && detail::uniform01(accept_rng_) < sv_.speculative_acceptance) {
        ++accepted;
      }
      made = std::min(accepted + 1, res_.requests[static_cast<size_t>(q.id)].output_tokens - q.generated);
    }
    q.prefilled += made;
    q.generated += made;
    ++res_.decode_steps;
    res_.decode_step_tokens += made;
    // One gap per step: the tokens of a step reach the client together (a
    // streamed chunk, as the engines' benchmark clients time them).
    double& last = last_token_s_[static_cast<size_t>(q.id)];
    ++itl_[t - last];
    last = t;
    return q.generated >= res_.requests[static_cast<size_t>(q.id)].output_tokens && finish(rep, q, t);
  }

  /// Running sequences that finished their prefill make one token each; one
  /// that needs a new block and finds none preempts the latest-admitted
  /// sequence (vLLM's recompute preemption), which waits at the head of the
  /// queue to prefill its prompt and what it had generated again.
  void add_decodes(Replica& rep, Batch& batch, IterationShape& shape) {
    for (size_t i = 0; i < rep.running.size();) {
      Seq& q = rep.running[i];
      if (q.prefilled < q.to_prefill) {
        ++i;
        continue;
      }
      // Room for the token made last step and, speculating, the drafts to
      // verify (not beyond the request's last position).
      const ServeRequestResult& out = res_.requests[static_cast<size_t>(q.id)];
      const int64_t positions =
          std::min(q.prefilled + 1 + sv_.speculative_tokens, out.prompt_tokens + out.output_tokens);
      const int64_t need = std::max<int64_t>(0, blocks_for(positions, sv_.block_tokens) - q.blocks - q.shared);
      if (need > rep.free_blocks + rep.evictable) {
        Seq victim = rep.running.back();
        rep.running.pop_back();
        release(rep, victim);
        victim.to_prefill = res_.requests[static_cast<size_t>(victim.id)].prompt_tokens + victim.generated;
        victim.prefilled = 0;
        ++res_.requests[static_cast<size_t>(victim.id)].preemptions;
        ++res_.preemptions;
        rep.waiting.push_front(victim);
        continue;  // re-examine position i (it may have been the victim)
      }
      take_blocks(rep, need);
      q.blocks += need;
      ++i;
    }
    for (const Seq& q : rep.running) {
      if (q.prefilled < q.to_prefill) continue;
      batch.decode_ids.push_back(q.id);
      ++shape.decode_sequences;
      shape.decode_context += q.prefilled;
    }
    if (shape.decode_sequences > 0) shape.decode_tokens = 1 + sv_.speculative_tokens;
  }

  /// Prefills within the token budget: partially prefilled sequences go on
  /// first, then waiting ones are admitted first come, first served while
  /// the batch size and the free blocks allow.
  void add_prefills(Replica& rep, Batch& batch, int64_t budget) {
    for (Seq& q : rep.running) {
      if (q.prefilled >= q.to_prefill || budget <= 0) continue;
      const int64_t chunk = std::min(q.to_prefill - q.prefilled, budget);
      batch.prefill_ids.push_back(q.id);
      batch.prefill_tokens.push_back(chunk);
      batch.prefill_before.push_back(q.prefilled);
      batch.prefill_target.push_back(q.to_prefill);
      budget -= chunk;
    }
    while (!rep.waiting.empty() && budget > 0 && static_cast<int64_t>(rep.running.size()) < sv_.max_batch) {
      Seq& w = rep.waiting.front();
      const int64_t hit = hit_blocks(rep, w);
      const int64_t remaining = w.to_prefill - std::max(w.prefilled, hit * sv_.block_tokens);
      // Unchunked, a prompt beyond the budget runs alone (whole).
      if (!sv_.chunked_prefill && remaining > budget && !batch.prefill_ids.empty()) break;
      if (admission_blocks(w) - hit > admittable_blocks(rep, w, hit)) break;
      admit(rep, w, hit);
      const int64_t chunk = sv_.chunked_prefill ? std::min(remaining, budget) : remaining;
      batch.prefill_ids.push_back(w.id);
      batch.prefill_tokens.push_back(chunk);
      batch.prefill_before.push_back(w.prefilled);
      batch.prefill_target.push_back(w.to_prefill);
      budget -= chunk;
      rep.running.push_back(w);
      rep.waiting.pop_front();
    }
  }

  /// Whether an unmixed replica's next iteration prefills: a prompt is part
  /// way through its chunks, or the first waiting request can be admitted.
  bool prefill_turn(const Replica& rep) const {
    for (const Seq& q : rep.running) {
      if (q.prefilled < q.to_prefill) return true;
    }
    if (rep.waiting.empty() || static_cast<int64_t>(rep.running.size()) >= sv_.max_batch) return false;
    const Seq& w = rep.waiting.front();
    const int64_t hit = hit_blocks(rep, w);
    return admission_blocks(w) - hit <= admittable_blocks(rep, w, hit);
  }

  /// Starts an iteration on an idle replica if it has work.
  void try_start(size_t r, double now) {
    Replica& rep = reps_[r];
    if (rep.busy) return;
    Batch batch;
    IterationShape shape;
    const bool decode = !rep.prefill_only && (sv_.mixed_batches || !prefill_turn(rep));
    if (decode) add_decodes(rep, batch, shape);
    if (sv_.mixed_batches || shape.decode_sequences == 0) {
      add_prefills(rep, batch, sv_.max_batched_tokens - shape.decode_sequences * shape.decode_tokens);
    }
    if (batch.prefill_ids.empty() && batch.decode_ids.empty()) return;
    for (size_t k = 0; k < batch.prefill_ids.size(); ++k) {
      const int64_t a = batch.prefill_before[k], n = batch.prefill_tokens[k];
      shape.prefill_tokens += n;
      // Causal pairs of tokens a+1..a+n, each attending to everything before it.
      shape.prefill_pairs += n * a + n * (n + 1) / 2;
      if (a + n >= batch.prefill_target[k]) ++shape.prefill_completing;
    }
    const double dt = iteration_s_(shape) + sv_.iteration_overhead_us * 1e-6;
    rep.busy = true;
    batches_[r] = std::move(batch);
    ServeIteration it;
    it.replica = static_cast<int32_t>(r);
    it.start_s = now;
    it.end_s = now + std::max(dt, 1e-12);  // time always advances
    it.shape = shape;
    open_iteration_[r] = res_.iterations.size();
    res_.iterations.push_back(it);
    push({it.end_s, EventKind::kIterationEnd, static_cast<int64_t>(r)});
  }

  const ServingSpec& sv_;
  const std::vector<ServeRequest>& reqs_;
  const IterationTimeFn& iteration_s_;
  const std::function<double(int64_t)>& kv_transfer_s_;
  ServeResult res_;
  std::vector<Replica> reps_;
  std::vector<Batch> batches_;
  std::vector<size_t> open_iteration_;  ///< index of each replica's running iteration
  std::vector<bool> starting_;          ///< replicas to consider once the instant's events are applied
  std::vector<double> last_token_s_;    ///< per request, when it last made a token
  std::map<double, int64_t> itl_;
  std::vector<int64_t> chunk_;  ///< per request, during one iteration's end: prefill tokens done, or -1 for a decode
  std::vector<Event> heap_;
  size_t next_issue_ = 0;  ///< closed loop: the next request a freed client sends
  int64_t clock_ = 0;      ///< counts prefix releases, for LRU order
  /// The cache_aware router's record of what it sent each replica.
  struct RoutedRecord {
    std::set<int64_t> prefixes;
    int64_t tokens = 0;  ///< its approximate tree's size
  };
  std::vector<RoutedRecord> routed_;
  std::mt19937_64 accept_rng_;  ///< draws speculative acceptances
};

}  // namespace

ServeResult simulate_serving(const Scenario& s, const std::vector<ServeRequest>& reqs,
                             const IterationTimeFn& iteration_s, const std::function<double(int64_t)>& kv_transfer_s) {
  return Scheduler(s, reqs, iteration_s, kv_transfer_s).run();
}

}  // namespace shardsim
