// `shardsim topology`: a fabric as a graph, checked, summarised and written
// out (GraphML, DOT) whether it came from a graph file or is a built-in
// fat tree or torus.
#pragma once

#include <string>
#include <vector>

#include "shardsim/topology/fabric_graph.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

/// The graph of a cluster's fabric: a graph fabric's own; the built-in fat
/// tree as fat_tree_graph builds it (line rates); a torus as torus_graph.
FabricGraph cluster_graph(const ClusterSpec& c);

/// Reads `input`: a graph file (GraphML or DOT; checked), a scenario file,
/// a cluster file or a cluster preset name. Throws InputError.
FabricGraph load_fabric_graph(const std::string& input, const std::vector<Override>& overrides);

/// What `topology --check` prints: devices, switches, links by kind and
/// rate, NVLink domains, and the longest shortest path from device 0 (hops).
std::string fabric_summary_text(const std::string& name, const FabricGraph& g);

}  // namespace shardsim
