// One rank's Chakra trace read as a program (private to interop/): its
// nodes ordered and turned into ops, its collectives' groups resolved, its
// traced tensors' lives as memory events (chakra_read.cc reads the
// directory and checks the ranks against each other).
#pragma once

#include <cstdint>
#include <string>

#include "chakra_checks.h"
#include "chakra_groups.h"
#include "chakra_io.h"
#include "shardsim/interop/chakra.h"

namespace shardsim::chakra::detail {

/// Rank `rank` of `ranks`, from the messages of its file `file`: its
/// program, the node of each op and its collectives and transfers. Names
/// groups in `groups` as they are first used; sets `producer` from the
/// metadata. Throws InputError(file, "/node/ID", ...) at a node it cannot
/// read.
RankBuild read_rank(const Messages& m, const std::string& file, int64_t rank, int64_t ranks, const ReadOptions& opt,
                    GroupTable& groups, std::string& producer);

}  // namespace shardsim::chakra::detail
