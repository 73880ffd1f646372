// Per-device memory at the peak of a training step.
#pragma once

#include "shardsim/core/step_report.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

/// Parameters, gradients, optimizer state, activations of the microbatches in
/// flight, logits and communication buffers on the pipeline stage whose
/// total is largest (see memory.cc for the formulas and their sources).
MemoryReport training_memory(const Scenario& s);
/// Weights, KV cache, activations and logits of an inference step (see
/// memory.cc).
MemoryReport inference_memory(const Scenario& s);
/// training_memory or inference_memory, by the plan's phase.
MemoryReport step_memory(const Scenario& s);

/// Bytes of activations one layer keeps for its backward, per microbatch, on
/// one device, for the plan's recomputation mode (`moe_layer`: a
/// mixture-of-experts MLP instead of a dense one).
int64_t layer_activation_bytes(const ModelSpec& m, const Plan& p, bool moe_layer = false);

/// The most (chunk, microbatch) forward passes whose backward has not run yet
/// on `stage`, weighted by `chunk_bytes` (activation bytes of each local
/// chunk for one microbatch): the schedule's activation high-water mark.
int64_t peak_in_flight_bytes(const Plan& p, int64_t stage, const std::vector<int64_t>& chunk_bytes);

}  // namespace shardsim
