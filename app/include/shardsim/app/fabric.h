// `shardsim topology`: a fabric as a graph, checked, summarised and written
// out (GraphML, DOT) whether it came from a graph file or is a built-in
// fat tree or torus.
#pragma once

#include <cstdint>
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

/// What `topology` reports of a fabric: its nodes, its one-way links by
/// kind and line rate, its NVLink domains (as the simulator groups devices:
/// Topology::node_of; none, 0, without NVLink links) and the longest route
/// from device 0 (links crossed).
struct FabricSummary {
  std::string name;
  int64_t devices = 0;
  int64_t switches = 0;
  struct LinkClass {
    std::string kind;  ///< nvlink, nic, switch or ici
    double bandwidth_GBps = 0;
    int64_t count = 0;
  };
  std::vector<LinkClass> links;  ///< by kind, then rate
  int64_t one_way_links = 0;
  int64_t nvlink_domains = 0;
  int64_t largest_domain_devices = 0;
  int64_t max_hops_from_device0 = 0;
};
FabricSummary summarize_fabric(const std::string& name, const FabricGraph& g);

/// What `topology --check` prints, and `topology --json`.
std::string fabric_summary_text(const FabricSummary& s);
std::string fabric_summary_json(const FabricSummary& s);

}  // namespace shardsim
