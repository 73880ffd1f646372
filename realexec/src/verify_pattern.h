// What --verify puts in communication buffers and what it expects back, in
// closed form (private to realexec; compiled by g++ for the CPU executor and by
// nvcc for the CUDA check kernels, hence C++17 and no other shardsim header).
//
// Every sender fills its send buffer with value(r, i) = (r + 1) + (i mod 7) for
// its rank r in the group: small integers, exact in bf16, fp32 and int8, so
// each collective's result is known: an all-reduce of g ranks gives
// Σ_r value(r, i) = g(g+1)/2 + g·(i mod 7), and so on per kind below.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SHARDSIM_HOST_DEVICE __host__ __device__
#else
#define SHARDSIM_HOST_DEVICE
#endif

namespace shardsim::realexec::detail {

/// What a received buffer holds (the order of CollectiveKind, then recv).
enum class Received : int32_t { kAllGather, kReduceScatter, kAllReduce, kAllToAll, kBroadcast, kTransfer };

SHARDSIM_HOST_DEVICE inline float pattern(int64_t r, int64_t i) {
  return static_cast<float>(r + 1 + i % 7);
}

/// The check of one received buffer: `group` ranks (1 for a transfer), this
/// rank's index `group_rank`, the sender `peer` of a transfer, the per-rank
/// chunk `chunk` (values) of all-gather and reduce-scatter and `n_recv`
/// received values.
struct ReceiveCheck {
  Received kind = Received::kAllReduce;
  int64_t group = 1, group_rank = 0, peer = 0, chunk = 1, n_recv = 0;
};

/// The value received at index i.
SHARDSIM_HOST_DEVICE inline float expected_value(const ReceiveCheck& c, int64_t i) {
  const int64_t g = c.group;
  switch (c.kind) {
    case Received::kAllReduce:
      return static_cast<float>(g * (g + 1) / 2 + g * (i % 7));
    case Received::kReduceScatter: {
      const int64_t j = c.group_rank * c.chunk + i;
      return static_cast<float>(g * (g + 1) / 2 + g * (j % 7));
    }
    case Received::kAllGather:
      return pattern(i / c.chunk, i % c.chunk);
    case Received::kAllToAll: {
      const int64_t per = c.n_recv / g;
      return pattern(i / per, c.group_rank * per + i % per);
    }
    case Received::kBroadcast:
      return pattern(0, i);
    case Received::kTransfer:
      return pattern(c.peer, i);
  }
  return 0.0f;
}

}  // namespace shardsim::realexec::detail
