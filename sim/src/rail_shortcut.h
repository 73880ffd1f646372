// When simulating tensor-parallel rank 0 alone gives every rank's step
// exactly (EngineOptions::rail_shortcut). Private to sim/.
#pragma once

#include <cstdint>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/topology/mesh.h"
#include "shardsim/topology/topology.h"

namespace shardsim::detail {

/// True when tensor-parallel groups are consecutive devices inside one
/// rail block (tp innermost in the mesh, tp divides Topology::rail_group()),
/// only pure tensor-parallel collectives mix tensor-parallel ranks (their
/// flows are laid for every member), and every traced device is of rank 0.
/// Then shifting every device's local rank by c inside its tensor-parallel
/// group (rank r to (r + c) mod tp) maps the fabric, the programs and the
/// flows onto themselves, transfers between ranks (a ring exchange)
/// included, so by symmetry rank c's step is rank 0's; a running flow
/// stands for its images (Topology::rail_route). Without `weighs_links` (a
/// network that can count a flow k times on a link), only whole-node
/// tensor-parallel groups on rails that share no links qualify, with no
/// transfer between ranks: no image then meets running traffic.
bool rail_shortcut_is_exact(const ProgramSet& ps, const Mesh& mesh, const Topology& topo,
                            const std::vector<uint32_t>& trace_devices, bool weighs_links);

}  // namespace shardsim::detail
