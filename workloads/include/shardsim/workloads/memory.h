// Per-device memory at the peak of a training step.
#pragma once

#include <string>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/core/step_report.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

/// Parameters, gradients, optimizer state, activations of the microbatches in
/// flight, logits, gathered FSDP parameters and communication buffers on the
/// pipeline stage whose total is largest, estimated from the layer graph and
/// the pipeline schedule without lowering the step (for the plan search; see
/// memory.cc for the formulas and their sources).
MemoryReport training_memory(const Scenario& s);
/// The same from the lowered step: each stage's program walked in order
/// (its MemoryEvents and each op's working set), so activations, the head,
/// gathered parameters and the working set are what the program holds at
/// its peak.
MemoryReport training_memory(const Scenario& s, const ProgramSet& programs);

/// A stage program's memory at its high-water mark (resident state aside).
struct ProgramMemory {
  int64_t peak = 0;
  int64_t activations = 0;      ///< kept by layers (and their recomputation)
  int64_t head = 0;             ///< kept by the embedding and the head (logits)
  int64_t gathered_params = 0;  ///< FSDP units gathered
  int64_t working_set = 0;      ///< of the op running at the peak, and what a recomputation holds
  int64_t max_activations = 0;  ///< the most layer activations held at any point
  OpId peak_op = 0;             ///< the op running at the peak
};
ProgramMemory walk_program_memory(const Program& program);
/// What a stage's memory report is made of besides its program's memory
/// events: the resident components (weights, gradients, optimizer state,
/// buffers; an inference stage's weights, KV cache, activations, logits),
/// whether the program's walk adds its activations, logits, gathered
/// parameters and working set (training), and whether the allocator's
/// overhead and the framework's reserve are added on top (training).
/// Carried into exported traces so an imported one reports the same memory.
struct StageMemoryModel {
  std::vector<MemoryReport::Component> resident;
  bool walk_program = false;
  bool finish = false;
  double allocator_overhead = 0;  ///< a fraction of what is allocated
  int64_t reserved_bytes = 0;
};
StageMemoryModel stage_memory_model(const Scenario& s, int64_t stage);
/// A stage's report from its model and its program (training_memory's and
/// an imported trace's): `label` names where the peak falls ("stage 2",
/// "rank 17").
MemoryReport stage_memory_report(const StageMemoryModel& model, const Program& program, int64_t capacity_bytes,
                                 const std::string& label);

/// Weights, KV cache, activations and logits of an inference step (see
/// memory.cc).
MemoryReport inference_memory(const Scenario& s);
/// training_memory (from `programs` when given) or inference_memory, by the
/// plan's phase.
MemoryReport step_memory(const Scenario& s, const ProgramSet* programs = nullptr);

/// Bytes of activations one layer keeps for its backward, per microbatch, on
/// one device, for the plan's recomputation mode (`moe_layer`: a
/// mixture-of-experts MLP instead of a dense one).
int64_t layer_activation_bytes(const ModelSpec& m, const Plan& p, bool moe_layer = false);

/// The most (chunk, microbatch) forward passes whose backward has not run yet
/// on `stage`, weighted by `chunk_bytes` (activation bytes of each local
/// chunk for one microbatch): the schedule's activation high-water mark.
int64_t peak_in_flight_bytes(const Plan& p, int64_t stage, const std::vector<int64_t>& chunk_bytes);

}  // namespace shardsim
