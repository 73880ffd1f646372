// The space of parallelism plans for a model, a cluster and a batch, and the
// analytical figures a search uses before simulating: a lower bound on the
// step time (for pruning that never drops the optimum) and a closed-form
// estimate (for the order in which plans are simulated).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shardsim/workloads/scenario.h"

namespace shardsim {

/// A plan that passed the validity and memory checks.
struct PlanCandidate {
  Plan plan;
  int64_t devices = 0;
  double lower_bound_s = 0;  ///< the step cannot be faster (see step_time_lower_bound_s)
  double estimate_s = 0;     ///< closed-form guess, for ordering only
  int64_t peak_memory_bytes = 0;
};

struct PlanSpaceCounts {
  int64_t enumerated = 0;   ///< combinations of the axes tried
  int64_t invalid = 0;      ///< rejected by check_plan (divisibility, schedule, caps)
  int64_t over_memory = 0;  ///< valid but over the chip's memory
};

/// Every plan of `base` (its model, cluster and batch: global_batch, seq_len
/// and the plan's precision and attention settings are kept) over each device
/// count in `device_counts`: tp (powers of two up to a node on GPU clusters,
/// up to 16 on tori), cp (powers of two up to 8), pp (every divisor up to the
/// layer count and 128), dp = devices / (tp·cp·pp), ep (MoE: divisors of dp
/// that divide the experts), zero 0-3, microbatch_size (powers of two up to
/// 16), schedule (1F1B; interleaved with 2 or 4 chunks per stage when pp > 1),
/// recompute none/selective/full; sequence parallelism exactly when tp > 1
/// (it moves the same bytes as tp without it and keeps less). Candidates come
/// back in a canonical order (devices, tp, cp, pp, v, ep, zero, mb, recompute).
std::vector<PlanCandidate> enumerate_plans(const Scenario& base, const std::vector<int64_t>& device_counts,
                                           PlanSpaceCounts& counts);

/// The overrides that give a scenario the plan fields enumerate_plans sets
/// on a candidate (the fields the plan table marks searched; those at their
/// loader default as null), so that a scenario file rendered with them
/// loads as exactly the candidate's plan (tests/unit/search_test.cc checks
/// the round trip).
std::vector<Override> searched_plan_overrides(const Plan& p);

/// A lower bound on the simulated step time of `s` from FLOPs alone: each
/// chunk's matmul FLOPs at peak·matmul_efficiency and attention FLOPs at
/// peak·attention_efficiency (the roofline never runs faster;
/// chunk_work_from_flops), through the pipeline's chains and each stage's
/// compute stream (pipeline_lower_bound; the Narayanan et al. 2021 bubble for
/// equal stages, and sound for unequal ones).
double step_time_lower_bound_s(const Scenario& s);

/// A closed-form estimate of the step time: the bound above plus exposed
/// tensor-parallel and expert-parallel communication (on the critical path),
/// data-parallel communication beyond what the backward pass hides, and
/// ring-attention transfers beyond the attention they overlap. Only orders
/// the simulations; results come from the simulator.
double step_time_estimate_s(const Scenario& s);

/// "tp 8 · pp 16 (interleaved, v 2) · dp 128 · zero 1 · mb 1 · selective".
std::string describe_plan(const Plan& p);

}  // namespace shardsim
