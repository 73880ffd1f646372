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
      return {in, out};
  }
  return {in, out};
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
