// How a compute op of the Program becomes a real kernel call on a CPU: the
// fp32 buffers it reads and writes, sized from the op's shape and declared
// bytes. Shared by the rank executor (which runs the kernels) and the
// launcher (which checks, before starting any process, that a scenario is
// small enough to run for real).
//
// bf16 and fp16 compute runs as fp32 on a CPU. Matmul and attention keep
// their shapes (so their FLOPs are the op's); memory-bound kinds read
// bytes_read / 4 and write bytes_written / 4 fp32 values, so the bytes they
// move are the bytes the op declares.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/realexec/kernels.h"

namespace shardsim::realexec {

/// What a kernel needs besides the op itself.
struct KernelContext {
  int64_t head_dim = 128;  ///< attention: heads = op.k / head_dim
};

/// Row length of memory-bound kernels whose op gives none (softmax, loss
/// backward, embedding backward): a typical short row.
inline constexpr int64_t kDefaultRow = 256;

/// fp32 element counts of the read-only inputs and of the outputs (and
/// in-place state) of one compute op.
struct ComputeFootprint {
  int64_t inputs = 0;
  int64_t outputs = 0;
};
ComputeFootprint compute_footprint(const Op& op, const KernelContext& ctx);

/// How a compute op runs as a kernel, for every backend: which kernel, its
/// sizes, and where its operands sit in the two arenas as offsets in fp32
/// slots (an operand of narrower values occupies the start of its slots).
struct KernelCall {
  enum class Kernel {
    kMatmul,               ///< batch × [m,k]·[k,n]: in[0] A, in[1] B, out[0] C
    kAttentionForward,     ///< in q k v; out o lse
    kAttentionBackward,    ///< in q o dout k v lse; out dq dk dv
    kRmsnorm,              ///< in x w (grad); out
    kSoftmax,              ///< in x (grad); out
    kCrossEntropy,         ///< in logits; out: one value per row
    kEmbeddingLookup,      ///< in table; out rows
    kEmbeddingScatterAdd,  ///< in gradient rows; out table
    kAdam,                 ///< in gradient; out param m v (in place)
    kElementwise,          ///< in n_in values; out n_out values
  };
  Kernel kernel = Kernel::kElementwise;
  int64_t batch = 1, m = 0, n = 0, k = 0;  ///< matmul
  AttentionShape attention;
  int64_t n_in = 0, n_out = 0;  ///< values read and written (memory-bound kernels)
  int64_t row = 1;              ///< row length (norm, softmax, loss, embedding)
  bool with_grad = false;       ///< norm and softmax backward: times an incoming gradient
  int64_t in[6] = {0, 0, 0, 0, 0, 0};
  int64_t out[3] = {0, 0, 0};
};
/// `ring`: the op is a ring-attention step (whole key blocks, no mask).
KernelCall kernel_call(const Op& op, const KernelContext& ctx, bool ring);

/// Bytes of the send and receive buffers of one collective or send/recv, at
/// the op's dtype (bf16 and fp16 move 2 bytes per value, fp32 4, fp8 and int8
/// 1), following nccl-tests' "size" (comm_bytes): all-gather receives it,
/// reduce-scatter sends it, the others send and receive it.
/// Bytes of one value of a communication buffer of dtype `d`.
int64_t comm_value_bytes(DType d);
struct CommFootprint {
  int64_t send_bytes = 0;
  int64_t recv_bytes = 0;
};
CommFootprint comm_footprint(const Op& op, int64_t group_size);

/// Bytes one rank allocates to run `program`: the two compute arenas plus,
/// per communication stream, the largest send and receive buffers.
/// `group_size(axes)` gives the size of a collective's group.
struct RankFootprint {
  int64_t compute_input_floats = 0;
  int64_t compute_output_floats = 0;
  int64_t comm_bytes = 0;
  int64_t total_bytes() const { return 4 * (compute_input_floats + compute_output_floats) + comm_bytes; }
};
template <typename GroupSize>
RankFootprint rank_footprint(const Program& program, const KernelContext& ctx, GroupSize group_size);

/// Per-rank memory a real run may allocate (a scenario for real runs must be
/// small): 2 GiB.
inline constexpr int64_t kMaxRankBytes = int64_t{2} << 30;
/// The same for the CUDA backend (device memory; an H100 has 80 GB): 64 GiB.
inline constexpr int64_t kMaxRankBytesCuda = int64_t{64} << 30;

// ---- implementation of the template ----------------------------------------
template <typename GroupSize>
RankFootprint rank_footprint(const Program& program, const KernelContext& ctx, GroupSize group_size) {
  RankFootprint f;
  std::vector<CommFootprint> per_stream(program.num_streams());
  for (const Op& op : program.ops()) {
    if (op.kind == OpKind::kCompute) {
      const ComputeFootprint c = compute_footprint(op, ctx);
      f.compute_input_floats = std::max(f.compute_input_floats, c.inputs);
      f.compute_output_floats = std::max(f.compute_output_floats, c.outputs);
      continue;
    }
    const CommFootprint c = comm_footprint(op, op.kind == OpKind::kCollective ? group_size(op.axes) : 1);
    CommFootprint& s = per_stream[op.stream];
    s.send_bytes = std::max(s.send_bytes, c.send_bytes);
    s.recv_bytes = std::max(s.recv_bytes, c.recv_bytes);
  }
  for (const CommFootprint& s : per_stream) f.comm_bytes += s.send_bytes + s.recv_bytes;
  return f;
}

}  // namespace shardsim::realexec
