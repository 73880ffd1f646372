// A set of point-to-point transfers alone on the fabric, timed by the same
// network model the engine uses (fluid_network.h: max-min fair sharing of
// every link on each route). For transfers outside a step's program, such as
// a disaggregated server handing a request's KV cache from its prefill
// replica to a decode replica.
#pragma once

#include <vector>

#include "shardsim/core/units.h"
#include "shardsim/sim/collective.h"
#include "shardsim/topology/topology.h"

namespace shardsim {

/// When the last of `flows` (all started together at time 0, nothing else
/// on the fabric) has arrived: each flow ends when the fluid network has
/// carried its bytes, plus the latency of its route (the sum of its links'
/// latencies), as the engine times a send. Flows from a device to itself
/// take no time. 0 for no flows.
SimTime transfers_alone_time(const Topology& topo, const std::vector<FlowSpec>& flows);

}  // namespace shardsim
