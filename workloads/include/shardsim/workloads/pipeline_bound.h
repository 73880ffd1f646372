// Lower bounds on a pipelined training step from the work of its chunks,
// for the plan search (app/search.h): the chain of the first microbatch's
// forward into a stage, the stage's compute stream, and the chain of the
// last backward out of it.
#pragma once

#include <vector>

#include "shardsim/workloads/scenario.h"

namespace shardsim {

/// One pipeline chunk's work on one microbatch, as seconds that no run of
/// the engine beats on its compute stream (a lower bound of each).
struct ChunkWork {
  double fwd = 0;       ///< the forward's compute stream, from its first compute op to its last
  double bwd = 0;       ///< the backward's (recomputation included), the same way
  double fwd_send = 0;  ///< from the forward's first compute op to the end of the op its send depends on
  double bwd_send = 0;  ///< from the backward's first compute op to the end of the op its send depends on
};

/// A lower bound on the step of plan `p` whose stage s, local chunk c does
/// work[s][c] per microbatch (chunk_layout's chunks), `transfer_s` being no
/// more than any pipeline transfer takes. It holds where the lowering gives
/// each stage one compute stream that runs its chunks' passes in
/// pipeline_steps order (which starts with local chunk 0's forward of the
/// first microbatch and ends with its backward of a microbatch), each
/// pass's compute ops together, a pass's first
/// compute op depending on the input it receives (the activation of the
/// previous global chunk, or the gradient of the next; not the first chunk's
/// forward nor the last chunk's backward), and sends as ChunkWork measures
/// them. Then, for every stage s, the step lasts at least
///   X_s + W_s,  and  X_s + W_s - bwd(last) + bwd_send(last) + Y_s,
/// where X_s is the first microbatch's forward through global chunks 0 to
/// s-1 (their fwd_send and a transfer each), W_s the stage's compute stream
/// (m microbatches of every chunk's fwd and bwd, one op at a time), `last`
/// the stage's last pass (its chunk 0's backward), and Y_s the backward chain it starts,
/// through the global chunks below to chunk 0 (a transfer and bwd_send each;
/// chunk 0's whole bwd, after which the step cannot have ended sooner). The
/// Narayanan et al. (2021) bubble, (p-1)·(t_f+t_b)/v over m·(t_f+t_b), is
/// what this gives for equal chunks; unlike a stretch of the average stage's
/// work it also holds for unequal ones.
double pipeline_lower_bound(const Plan& p, const std::vector<std::vector<ChunkWork>>& work, double transfer_s = 0);

/// The chunks' work from their FLOPs: matmul FLOPs at the chip's matmul peak
/// × matmul_efficiency and attention FLOPs at the attention peak ×
/// attention_efficiency (the roofline never runs faster; with a calibration
/// profile, its fastest measured rates), per device: a layer's matmuls over
/// tp and its tokens over cp, its attention pairs over tp and cp, the head
/// on the last chunk; backward twice the forward plus what the
/// recomputation policy runs again. A backward's send waits for all of it
/// but the weight-gradient matmuls of the chunk's first layer.
std::vector<std::vector<ChunkWork>> chunk_work_from_flops(const Scenario& s);

}  // namespace shardsim
