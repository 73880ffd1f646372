// Lowering of one training step of a dense decoder-only Transformer into the
// per-device Program that every device of the mesh runs (SPMD).
#pragma once

#include "shardsim/core/program.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

/// Stream ids of a lowered training program.
struct TrainStreams {
  static constexpr StreamId kCompute = 0;
  static constexpr StreamId kTp = 1;        ///< tensor-parallel collectives
  static constexpr StreamId kDpGather = 2;  ///< FSDP parameter all-gathers
  static constexpr StreamId kDpReduce = 3;  ///< gradient all-reduce / reduce-scatter
};

/// The Program of one device for one optimizer step: for each microbatch the
/// forward and backward of every layer (activation- and weight-gradient
/// matmuls as separate ops), then the optimizer update. Collectives:
/// tensor-parallel all-reduces (or all-gather / reduce-scatter with sequence
/// parallelism), data-parallel gradient all-reduce in buckets overlapped with
/// the last backward (zero 0), or FSDP per-layer all-gathers prefetched one
/// layer ahead and per-layer gradient reduce-scatters (zero 3).
Program lower_training_step(const Scenario& s);

/// FLOPs of a training step summed over all devices, by the closed form (see
/// flops.cc): 6·N_matmul·tokens + 6·L·heads·head_dim·(s+1)·tokens (causal
/// attention: s(s+1)/2 query-key pairs per sequence).
double closed_form_model_flops(const ModelSpec& m, const Plan& p);

}  // namespace shardsim
