// Cross-rank checks of a Chakra trace (private to interop/): what each
// rank's reader records of its collectives and transfers, and the checks
// that the ranks agree: every member of a group runs the same collectives
// in the same order, every send meets its receive.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chakra_groups.h"
#include "shardsim/core/program.h"
#include "shardsim/interop/chakra.h"

namespace shardsim::chakra::detail {

/// A collective or transfer as the cross-rank checks see it.
struct CommRecord {
  size_t op = 0;  // op index on its rank
  uint64_t node = 0;
  int64_t a = 0;  // collective: kind; transfer: peer
  int64_t tag = 0;
  int64_t bytes = 0;
  size_t group = 0;  // collectives: index into the group names
};

/// One rank's trace as read: its program, the node of each op, and its
/// collectives and transfers for the cross-rank checks.
struct RankBuild {
  std::string file;
  Program program;
  std::vector<uint64_t> node_of;
  RankMeta meta;
  std::vector<CommRecord> colls, sends, recvs;
};

/// Every member of a group runs the same collectives on it, in the same
/// order (count, type, size); throws InputError at the first node that
/// differs.
void check_collectives(const std::vector<RankBuild>& ranks, const GroupTable& groups);

/// The k-th send of each (sender, receiver, tag) meets the receiver's k-th
/// receive from the sender with that tag, of the same size; throws
/// InputError at the first that does not.
void check_transfers(const std::vector<RankBuild>& ranks);

}  // namespace shardsim::chakra::detail
