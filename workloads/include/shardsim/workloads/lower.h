// Lowering of one training step of a dense decoder-only Transformer into the
// per-stage Programs that the devices of each pipeline stage run (SPMD).
#pragma once

#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

/// Stream ids of a lowered training program.
struct TrainStreams {
  static constexpr StreamId kCompute = 0;
  static constexpr StreamId kTp = 1;        ///< tensor-parallel collectives
  static constexpr StreamId kDpGather = 2;  ///< FSDP / ZeRO parameter all-gathers
  static constexpr StreamId kDpReduce = 3;  ///< gradient all-reduce / reduce-scatter
  static constexpr StreamId kSendNext = 4;  ///< pipeline sends to the next stage
  static constexpr StreamId kSendPrev = 5;  ///< pipeline sends to the previous stage
  static constexpr StreamId kRecv = 6;      ///< pipeline receives
  static constexpr StreamId kCpSend = 7;    ///< ring-attention sends (context parallelism)
  static constexpr StreamId kCpRecv = 8;    ///< ring-attention receives
  static constexpr StreamId kEp = 9;        ///< expert-parallel all-to-alls
  static constexpr StreamId kTpSend = 10;   ///< tensor-parallel ring exchange (userbuffers): sends
  static constexpr StreamId kTpRecv = 11;   ///< tensor-parallel ring exchange: receives
  static constexpr StreamId kHostD2H = 12;  ///< offloaded tensors to the host (declared when a plan offloads)
  static constexpr StreamId kHostH2D = 13;  ///< and back for the backward
};

/// How the layers are cut into pipeline chunks: chunk g (0..pp·v-1) holds
/// layers [first[g], first[g] + count[g]) and runs on stage g % pp as its
/// virtual chunk g / pp. Chunk 0 also holds the embedding, the last chunk the
/// head and loss.
struct ChunkLayout {
  std::vector<int64_t> first;
  std::vector<int64_t> count;
};
/// plan.layers_per_stage when given; otherwise an even split whose remainder
/// goes to the chunks after the first (which carries the embedding).
ChunkLayout chunk_layout(const ModelSpec& m, const Plan& p);

/// The Programs of one optimizer step, one per pipeline stage: for each step
/// of the stage's schedule, the forward or backward of one chunk for one
/// microbatch (activation- and weight-gradient matmuls as separate ops,
/// recomputed forward ops before their backward), pipeline sends and
/// receives, tensor-parallel collectives, data-parallel gradient reduction
/// (all-reduce, or reduce-scatter and parameter all-gather for ZeRO-1/2) or
/// FSDP per-unit all-gathers and reduce-scatters; then the optimizer.
ProgramSet lower_training_step(const Scenario& s);

/// What one iteration of a serving engine processes (vLLM's scheduler
/// mixes prefill chunks and decodes in one forward pass).
struct IterationShape {
  int64_t prefill_tokens = 0;      ///< prompt tokens processed, all sequences
  int64_t prefill_pairs = 0;       ///< causal query-key pairs of those tokens
  int64_t prefill_completing = 0;  ///< prompts whose last token is in this iteration (they need logits)
  int64_t decode_sequences = 0;    ///< sequences generating
  int64_t decode_context = 0;      ///< tokens already cached, summed over those sequences
  /// Tokens each decoding sequence runs through the model: 1, or with
  /// speculative decoding the last token and k draft tokens to verify (k + 1).
  int64_t decode_tokens = 1;
};
/// The iteration a prefill or decode plan describes (uniform batch).
IterationShape plan_iteration(const Plan& p);
/// The Programs of one serving iteration of shape `shape` on the plan's
/// replica (tp, pp, ep, weight and KV dtypes of s.plan).
ProgramSet lower_iteration(const Scenario& s, const IterationShape& shape);

/// The Programs of one inference step (plan.phase prefill or decode), one
/// per pipeline stage of a serving replica (see lower_inference.cc).
ProgramSet lower_inference_step(const Scenario& s);

/// lower_training_step or lower_inference_step, by the plan's phase.
ProgramSet lower_step(const Scenario& s);

/// FLOPs of a training step summed over all devices, by the closed form (see
/// flops.cc): 6·N_matmul·tokens + 6·L·heads·head_dim·(s+1)·tokens (causal
/// attention: s(s+1)/2 query-key pairs per sequence).
double closed_form_model_flops(const ModelSpec& m, const Plan& p);

}  // namespace shardsim
