// A step lowered per pipeline stage (SPMD, groups named by mesh axes),
// written out rank by rank: each device's program with its collectives'
// groups and its transfers' peers named outright (ProgramSet::per_rank).
// What a trace of the step holds, one file per rank (interop/chakra.h),
// and what an imported trace simulates as.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/topology/mesh.h"

namespace shardsim {

/// The communicator groups of per-rank programs, each its members in ring
/// order (Mesh::group_members), numbered as first met.
class RankGroups {
 public:
  /// The group's index, added if new.
  int32_t id(const std::vector<uint32_t>& members);
  const std::vector<std::vector<uint32_t>>& list() const { return list_; }

 private:
  std::map<std::vector<uint32_t>, int32_t> index_;
  std::vector<std::vector<uint32_t>> list_;
};

/// Device `device`'s program: its stage's, op for op (streams, names,
/// dependencies, memory events alike), with Op::group, Op::peer_device and
/// Op::tag set (a transfer's tag: 0 forward, 1 otherwise, the engine's
/// channels of a mesh). Ranks may be written one at a time: only `groups`
/// is shared.
Program rank_program(const ProgramSet& ps, const Mesh& mesh, uint32_t device, RankGroups& groups);

/// Every device's (ProgramSet::per_rank), for steps small enough to hold.
ProgramSet per_rank_programs(const ProgramSet& ps, const Mesh& mesh);

}  // namespace shardsim
