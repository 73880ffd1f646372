// Collectives as point-to-point flows: the algorithm is chosen from the
// fabric and the shape of the group.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/core/units.h"
#include "shardsim/topology/topology.h"

namespace shardsim {

struct FlowSpec {
  DeviceId src = 0;
  DeviceId dst = 0;
  double bytes = 0;
};

/// Flows that run together; the phase ends `latency` after its last flow.
struct CollectivePhase {
  std::vector<FlowSpec> flows;
  SimTime latency;
};

struct CollectivePlan {
  std::string algorithm;
  std::vector<CollectivePhase> phases;
};

/// Plans `kind` of `size` bytes (nccl-tests' size: the all-gather output,
/// the reduce-scatter input, the all-reduce buffer, the all-to-all send
/// buffer) over `members` (ascending device ids).
///   GPU fat tree with NCCL costs (costs.nccl.compute_capability > 0): a
///   group inside one node -> the algorithm and protocol NCCL picks, timed by
///   nccl_model.h (all-reduce, all-gather, reduce-scatter, broadcast); so is
///   a group spread evenly over whole nodes when costs.nccl.nic_GBps is set
///   (the fabric's nccl_across_nodes).
///   GPU fat tree otherwise: one node -> ring over NVLink; one GPU per node -> ring over
///   the NICs; k GPUs in each of n nodes -> hierarchical (intra-node ring,
///   k parallel inter-node rings on S/k, intra-node ring).
///   Torus: a sub-grid group -> one phase per torus axis it spans, with
///   bidirectional rings along that axis; otherwise one ring.
///   All-to-all: direct, every pair at once.
/// Each ring phase of r members costs r-1 steps of latency α (the longest
/// route latency of its flows) plus the pipeline fill of `costs`; the base
/// latency of `costs` is paid once.
CollectivePlan plan_collective(CollectiveKind kind, Bytes size, std::span<const DeviceId> members, const Topology& topo,
                               const CollectiveCosts& costs);

/// The nodes NCCL's cost model sees when plan_collective plans `kind` over
/// `members` from it (nccl_model.h: nccl_costs(kind, members, nodes, ...)):
/// 1 inside one node, the node count for a group spread evenly over whole
/// nodes with costs.nccl.nic_GBps set, 0 when the plan does not come from
/// NCCL's model. A serving engine's custom all-reduce, which replaces NCCL
/// for small messages inside a node, is not considered.
int64_t nccl_nodes(CollectiveKind kind, std::span<const DeviceId> members, const Topology& topo,
                   const CollectiveCosts& costs);

/// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md of nccl-tests):
/// busbw = algbw · 2(n-1)/n for all-reduce, (n-1)/n for all-gather,
/// reduce-scatter and all-to-all, 1 for broadcast; algbw = size / time.
double bus_bandwidth_factor(CollectiveKind kind, int64_t group_size);

/// The sizes of an nccl-tests sweep (`-b min -e max -f factor`): min, then
/// each size `factor` times the last (rounded to a byte) while it is at
/// most max. Requires 1 <= min <= max and factor > 1.
std::vector<int64_t> sweep_sizes(int64_t min_bytes, int64_t max_bytes, double factor);

}  // namespace shardsim
