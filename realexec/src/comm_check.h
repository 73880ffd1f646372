// The --verify check of one received buffer, from its op (private to
// realexec; shared by the CPU and CUDA executors).
#pragma once

#include <algorithm>
#include <cstdint>

#include "shardsim/core/program.h"
#include "shardsim/realexec/op_sizing.h"
#include "verify_pattern.h"

namespace shardsim::realexec::detail {

static_assert(static_cast<int>(Received::kAllGather) == static_cast<int>(CollectiveKind::kAllGather) &&
                  static_cast<int>(Received::kReduceScatter) == static_cast<int>(CollectiveKind::kReduceScatter) &&
                  static_cast<int>(Received::kAllReduce) == static_cast<int>(CollectiveKind::kAllReduce) &&
                  static_cast<int>(Received::kAllToAll) == static_cast<int>(CollectiveKind::kAllToAll) &&
                  static_cast<int>(Received::kBroadcast) == static_cast<int>(CollectiveKind::kBroadcast),
              "Received mirrors CollectiveKind");

/// The check of what `op` receives: a collective over `group` ranks where this
/// rank is `group_rank`, or a transfer from rank `peer` (group ignored).
inline ReceiveCheck receive_check(const Op& op, int64_t group, int64_t group_rank, int64_t peer) {
  ReceiveCheck c;
  const int64_t w = comm_value_bytes(op.dtype);
  if (op.kind == OpKind::kRecv) {
    c.kind = Received::kTransfer;
    c.peer = peer;
    c.n_recv = comm_footprint(op, 1).recv_bytes / w;
    return c;
  }
  const CommFootprint f = comm_footprint(op, group);
  c.kind = static_cast<Received>(op.collective);
  c.group = group;
  c.group_rank = group_rank;
  c.n_recv = f.recv_bytes / w;
  c.chunk = std::max<int64_t>(1, std::min(f.send_bytes, f.recv_bytes) / w);
  return c;
}

}  // namespace shardsim::realexec::detail
