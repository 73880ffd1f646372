// Communicators of a real run (private to realexec; shared by the CPU and
// CUDA executors): the groups of every collective, split from the world by
// the mesh, and the peer rank of a transfer.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mpi_util.h"
#include "shardsim/core/program.h"
#include "shardsim/topology/mesh.h"
#include "shardsim/workloads/lower.h"

namespace shardsim::realexec::detail {

/// One communicator per (group axes, stream) pair, so that the collectives of
/// one communicator are issued in stream order on every member.
inline int group_comm_key(uint8_t axes, StreamId stream) {
  return axes << 8 | stream;
}

/// Every rank calls MPI_Comm_split for every (axes, stream) pair of every
/// stage, in one sorted order (MPI_Comm_split is collective over the world;
/// a rank outside the pair's stages gets a communicator it never uses), and
/// hands this rank's communicator to `take(key, comm)`, which owns it. The
/// pair's groups partition the world, so each rank is in exactly one group
/// per pair, and blocking per-group calls inside `take` line up too.
template <typename Take>
void split_group_comms(const ProgramSet& ps, const Mesh& mesh, int rank, Take take) {
  std::vector<int> keys;
  for (const Program& p : ps.stages) {
    for (const Op& op : p.ops()) {
      if (op.kind == OpKind::kCollective) keys.push_back(group_comm_key(op.axes, op.stream));
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (int key : keys) {
    const auto axes = static_cast<uint8_t>(key >> 8);
    MPI_Comm c = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(mesh.group_index(rank, axes)), rank, &c),
              "MPI_Comm_split");
    take(key, c);
  }
}

/// The rank a send or receive of `rank` goes to or comes from: its
/// coordinate on op.peer_axis moved by op.peer, wrapping around.
inline int peer_rank(const Mesh& mesh, int rank, const Op& op) {
  const int64_t n = mesh.size(op.peer_axis), c = mesh.coord(rank, op.peer_axis);
  const int64_t nc = ((c + op.peer) % n + n) % n;
  return static_cast<int>(rank + (nc - c) * mesh.stride(op.peer_axis));
}

}  // namespace shardsim::realexec::detail
