// When simulating tensor-parallel rank 0 alone gives every rank's step
// exactly (EngineOptions::rail_shortcut). Private to sim/.
#pragma once

#include <cstdint>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/topology/mesh.h"
#include "shardsim/topology/topology.h"

namespace shardsim::detail {

/// True when the fabric's rails are whole tensor-parallel groups (tp
/// innermost in the mesh, Topology::rail_group() == tp), only pure tensor-
/// parallel collectives mix tensor-parallel ranks (their flows cover every
/// member), no transfer changes rank, and every traced device is of rank 0.
/// Then each rank's traffic between nodes crosses links no other rank's
/// does, and by symmetry every rank's step is rank 0's.
bool rail_shortcut_is_exact(const ProgramSet& ps, const Mesh& mesh, const Topology& topo,
                            const std::vector<uint32_t>& trace_devices);

}  // namespace shardsim::detail
