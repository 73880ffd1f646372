#include "shardsim/realexec/op_sizing.h"

#include <algorithm>

namespace shardsim::realexec {

ComputeFootprint compute_footprint(const Op& op, const KernelContext& ctx) {
  const int64_t in = std::max<int64_t>(1, op.bytes_read.value() / 4);
  const int64_t out = std::max<int64_t>(1, op.bytes_written.value() / 4);
  const int64_t b = std::max<int64_t>(1, op.batch);
  switch (op.compute) {
    case ComputeKind::kMatmul:
      return {b * (op.m * op.k + op.k * op.n), b * op.m * op.n};
    case ComputeKind::kAttention: {
      const int64_t heads = op.k % ctx.head_dim == 0 ? op.k / ctx.head_dim : 1;
      const int64_t q = b * op.m * op.k, kv = b * op.n * op.k, lse = b * op.m * heads;
      if (op.pass == Pass::kBackward) return {3 * q + 2 * kv + lse, q + 2 * kv};  // q o dO k v lse -> dq dk dv
      return {q + 2 * kv, q + lse};                                               // q k v -> o lse
    }
    case ComputeKind::kNorm:
      // x (and the incoming gradient when the op reads twice its output) and
      // the weight row.
      return {(in >= 2 * out ? 2 * out : out) + std::max<int64_t>(1, op.n), out};
    case ComputeKind::kSoftmax:
      return {in >= 2 * out ? 2 * out : out, out};
    case ComputeKind::kOptimizer:
      // gradient in; parameter and the two moments updated in place.
      return {std::max<int64_t>(1, op.m), 3 * std::max<int64_t>(1, op.m)};
    case ComputeKind::kElementwise:
    case ComputeKind::kEmbedding:
    case ComputeKind::kLoss:
    case ComputeKind::kHostCopy:
      return {in, out};
  }
  return {in, out};
}

KernelCall kernel_call(const Op& op, const KernelContext& ctx, bool ring) {
  using K = KernelCall::Kernel;
  KernelCall c;
  const ComputeFootprint f = compute_footprint(op, ctx);
  const int64_t n_in = std::max<int64_t>(1, op.bytes_read.value() / 4);
  const int64_t n_out = std::max<int64_t>(1, op.bytes_written.value() / 4);
  const int64_t b = std::max<int64_t>(1, op.batch);
  c.n_in = n_in;
  c.n_out = n_out;
  switch (op.compute) {
    case ComputeKind::kMatmul:
      c.kernel = K::kMatmul;
      c.batch = b;
      c.m = op.m;
      c.n = op.n;
      c.k = op.k;
      c.in[1] = b * op.m * op.k;
      return c;
    case ComputeKind::kAttention: {
      AttentionShape& s = c.attention;
      s.batch = b;
      s.queries = op.m;
      s.keys = op.n;
      s.heads = op.k % ctx.head_dim == 0 ? op.k / ctx.head_dim : 1;
      s.head_dim = op.k / s.heads;
      // Ring attention steps exchange whole key blocks: run them unmasked.
      s.causal = op.m == op.n && !ring;
      const int64_t q = b * op.m * op.k, kv = b * op.n * op.k;
      if (op.pass == Pass::kBackward) {
        c.kernel = K::kAttentionBackward;
        // q, o, dout, k, v, lse -> dq, dk, dv
        const int64_t in[6] = {0, q, 2 * q, 3 * q, 3 * q + kv, 3 * q + 2 * kv};
        std::copy(in, in + 6, c.in);
        c.out[1] = q;
        c.out[2] = q + kv;
      } else {
        c.kernel = K::kAttentionForward;
        c.in[1] = q;
        c.in[2] = q + kv;
        c.out[1] = q;
      }
      return c;
    }
    case ComputeKind::kNorm:
      c.kernel = K::kRmsnorm;
      c.with_grad = f.inputs > n_out + std::max<int64_t>(1, op.n);
      c.row = std::max<int64_t>(1, op.n);
      c.in[1] = (c.with_grad ? 2 : 1) * n_out;  // the weight row
      c.in[2] = n_out;                          // the gradient
      return c;
    case ComputeKind::kSoftmax:
      c.kernel = K::kSoftmax;
      c.row = std::min(op.n > 1 ? op.n : kDefaultRow, n_out);
      c.with_grad = f.inputs >= 2 * n_out;
      c.in[1] = n_out;
      return c;
    case ComputeKind::kLoss:
      if (n_in > n_out) {
        c.kernel = K::kCrossEntropy;
        c.row = n_in / n_out;
      } else {
        c.kernel = K::kSoftmax;
        c.row = std::min(kDefaultRow, n_out);
      }
      return c;
    case ComputeKind::kEmbedding:
      c.kernel = op.pass == Pass::kBackward ? K::kEmbeddingScatterAdd : K::kEmbeddingLookup;
      c.row = std::min({op.n > 1 ? op.n : kDefaultRow, n_in, n_out});
      return c;
    case ComputeKind::kOptimizer: {
      c.kernel = K::kAdam;
      const int64_t n = std::max<int64_t>(1, op.m);
      c.n_in = c.n_out = n;
      c.out[1] = n;
      c.out[2] = 2 * n;
      return c;
    }
    // A host copy runs as a pass over its bytes in device memory: the real
    // backends keep no host-side copy of offloaded tensors (docs/realexec.md).
    case ComputeKind::kElementwise:
    case ComputeKind::kHostCopy:
      return c;
  }
  return c;
}

int64_t comm_value_bytes(DType d) {
  switch (d) {
    case DType::kFp32:
      return 4;
    case DType::kBf16:
    case DType::kFp16:
      return 2;
    case DType::kFp8:
    case DType::kInt8:
    case DType::kFp4:  // two packed values per byte: comm_bytes already counts bytes
      return 1;
  }
  return 2;
}

CommFootprint comm_footprint(const Op& op, int64_t group_size) {
  const int64_t w = comm_value_bytes(op.dtype);
  const int64_t g = std::max<int64_t>(1, group_size);
  // Whole values, divisible by the group so every member's chunk is equal.
  const int64_t values = std::max<int64_t>(g, op.comm_bytes.value() / w / g * g);
  const int64_t all = values * w, chunk = values / g * w;
  if (op.kind != OpKind::kCollective) return {all, all};
  switch (op.collective) {
    case CollectiveKind::kAllGather:
      return {chunk, all};
    case CollectiveKind::kReduceScatter:
      return {all, chunk};
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kBroadcast:
      return {all, all};
  }
  return {all, all};
}

}  // namespace shardsim::realexec
