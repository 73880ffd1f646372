// Serving simulation: a stream of requests on replicas that schedule at the
// iteration level with a paged KV cache, as vLLM does (Kwon et al. 2023,
// "Efficient Memory Management for Large Language Model Serving with
// PagedAttention"; Yu et al. 2022, "Orca" for iteration-level scheduling;
// Agrawal et al. 2024, "Sarathi-Serve" for chunked prefill; Zhong et al.
// 2024, "DistServe" for prefill/decode disaggregation). The time of each
// iteration comes from a callback (the simulator), so this file holds only
// the scheduling.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

struct ServeRequest {
  double arrival_s = 0;
  int64_t prompt_tokens = 1;  ///< the whole prompt, its shared prefix included
  int64_t output_tokens = 1;
  int64_t prefix_id = -1;     ///< the shared prefix its prompt begins with (-1: none)
  int64_t prefix_tokens = 0;  ///< that prefix's length (at most prompt_tokens)
};

/// The scheduler defaults of a serving engine ("generic", "vllm", "sglang",
/// "trtllm"): max_batch, max_batched_tokens, block_tokens,
/// kv_memory_fraction, chunked_prefill, mixed_batches, admission and
/// iteration_overhead_us as the engine ships them (serving_engines.cc).
/// Throws InputError for an unknown engine.
ServingSpec serving_engine_defaults(const std::string& engine, const ChipSpec& chip, const Plan& plan);

/// trtllm-bench's choice of max_batch_size and max_num_tokens when the user
/// gives neither (tensorrt_llm/bench/build/tuning.py: calc_engine_setting and
/// finetune_setting): the requests of isl + osl tokens whose KV cache fits in
/// kv_fraction of the memory the weights leave on the replica's GPUs, capped
/// at 4096 and divided by pp; tokens = that x (1 + isl/osl), capped at
/// 32768; both rounded up to the tool's steps (batch at least 64, tokens at
/// least 2048).
struct TrtllmLimits {
  int64_t max_batch = 0;
  int64_t max_batched_tokens = 0;
};
TrtllmLimits trtllm_bench_limits(const ModelSpec& m, const ChipSpec& chip, const Plan& plan, DType weight_dtype,
                                 DType kv_dtype, double isl, double osl, double kv_fraction);

/// The requests of a scenario's serving object: generated (Poisson arrivals,
/// seeded) or read from its trace file. Sorted by arrival.
std::vector<ServeRequest> serving_requests(const Scenario& s);

/// One iteration a replica ran.
struct ServeIteration {
  int32_t replica = 0;
  double start_s = 0;
  double end_s = 0;
  IterationShape shape;
  int64_t running = 0;  ///< sequences holding KV blocks after it
  double kv_used = 0;   ///< fraction of the replica's KV blocks in use after it
};

struct ServeRequestResult {
  double arrival_s = 0;
  double first_token_s = 0;
  double finish_s = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int32_t preemptions = 0;
  int64_t cached_prompt_tokens = 0;  ///< prompt tokens found in the prefix cache when it was admitted
  int32_t replica = 0;               ///< the replica its arrival was routed to
};

struct ServeResult {
  std::vector<ServeRequestResult> requests;  ///< in arrival order
  std::vector<ServeIteration> iterations;    ///< in the order they ended
  int64_t kv_blocks_per_replica = 0;
  int64_t block_tokens = 0;
  int64_t preemptions = 0;
  int64_t kv_transfers = 0;  ///< disaggregation: requests whose KV moved to a decode replica
  /// Prefix caching: prompt tokens to prefill at every admission (a
  /// preempted request counts again), and how many of them were found cached.
  int64_t admitted_prompt_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  /// Decode steps of single sequences and the tokens they made (with
  /// speculative decoding, each step makes the accepted drafts plus one).
  int64_t decode_steps = 0;
  int64_t decode_step_tokens = 0;
  /// Inter-token latencies: every gap between two tokens of one request
  /// (the first token excluded), as (gap in seconds, how many), ascending.
  std::vector<std::pair<double, int64_t>> inter_token_s;
};

/// Seconds one iteration of `shape` takes on a replica.
using IterationTimeFn = std::function<double(const IterationShape&)>;

/// Runs the requests to completion. `kv_transfer_s(prompt_tokens)` gives the
/// time to move one request's KV cache from a prefill to a decode replica
/// (disaggregation only). Deterministic.
ServeResult simulate_serving(const Scenario& s, const std::vector<ServeRequest>& requests,
                             const IterationTimeFn& iteration_s, const std::function<double(int64_t)>& kv_transfer_s);

/// Percentile p (0-100) of `v` by linear interpolation between order
/// statistics (NumPy's default); 0 for an empty vector.
double percentile(std::vector<double> v, double p);
/// The same over values with multiplicities, (value, count) ascending by
/// value: the percentile of the vector that repeats each value count times.
double percentile_counted(const std::vector<std::pair<double, int64_t>>& counted, double p);

}  // namespace shardsim
