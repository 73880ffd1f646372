// Per-device memory at the peak of a training step.
#pragma once

#include "shardsim/core/step_report.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

/// Parameters, gradients, optimizer state, activations of the microbatches in
/// flight, logits and communication buffers, per device (see memory.cc for
/// the formulas and their sources).
MemoryReport training_memory(const Scenario& s);

/// Bytes of activations one layer saves for its backward, per microbatch, on
/// one device (no recomputation, fused attention).
int64_t layer_activation_bytes(const ModelSpec& m, const Plan& p);

}  // namespace shardsim
