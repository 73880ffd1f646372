#include "shardsim/app/fabric.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "output.h"
#include "shardsim/core/error.h"

namespace shardsim {
namespace {

/// A JSON file (scenario or cluster) rather than a graph file.
bool is_json_file(const std::string& file, bool& scenario) {
  std::ifstream in(file);
  if (!in) return false;
  char first = 0;
  in >> first;
  if (first != '{') return false;
  in.seekg(0);
  try {
    const auto j = nlohmann::json::parse(in);
    scenario = j.is_object() && j.contains("plan");
  } catch (const std::exception&) {
    scenario = false;  // load_cluster says what is wrong, with its location
  }
  return true;
}

}  // namespace

FabricGraph cluster_graph(const ClusterSpec& c) {
  switch (c.fabric) {
    case FabricKind::kGraph:
      return *c.graph.graph;
    case FabricKind::kTorus:
      return torus_graph(c.torus);
    case FabricKind::kNvswitchFatTree:
      break;
  }
  return fat_tree_graph(c.fat_tree, c.devices);
}

FabricGraph load_fabric_graph(const std::string& input, const std::vector<Override>& overrides) {
  bool scenario = false;
  if (is_json_file(input, scenario)) {
    return cluster_graph(scenario ? load_scenario(input, overrides).cluster : load_cluster(input, overrides));
  }
  if (std::ifstream(input)) {
    if (!overrides.empty()) throw UsageError("--set: applies to a scenario or cluster, not to a graph file");
    FabricGraph g = read_fabric_graph(input);
    check_fabric_graph(g, input);
    return g;
  }
  return cluster_graph(load_cluster(input, overrides));  // a preset name (or says what is missing)
}

std::string fabric_summary_text(const std::string& name, const FabricGraph& g) {
  GraphFabricSpec spec;
  spec.graph = std::make_shared<FabricGraph>(g);
  const auto topo = make_graph_fabric(spec);
  std::string out;
  const int64_t devices = g.devices();
  detail::appendf(out, "fabric  %s\n", name.c_str());
  detail::appendf(out, "  nodes              %lld devices, %lld switches\n", static_cast<long long>(devices),
                  static_cast<long long>(static_cast<int64_t>(g.nodes.size()) - devices));
  // Links (one direction each) by kind and line rate.
  std::map<std::pair<int, double>, int64_t> by;
  for (const auto& l : g.links) ++by[{static_cast<int>(l.kind), l.bandwidth_GBps}];
  detail::appendf(out, "  links              %zu one-way\n", g.links.size());
  for (const auto& [key, n] : by) {
    detail::appendf(out, "    %-8s %10.6g GB/s  x %lld\n",
                    std::string(to_string(static_cast<LinkKind>(key.first))).c_str(), key.second,
                    static_cast<long long>(n));
  }
  int64_t domains = 0;
  for (int64_t d = 0; d < devices; ++d) domains = std::max(domains, topo->node_of(static_cast<DeviceId>(d)) + 1);
  detail::appendf(out, "  nvlink domains     %lld (largest %lld devices)\n", static_cast<long long>(domains),
                  static_cast<long long>(topo->gpus_per_node()));
  size_t longest = 0;
  std::vector<LinkId> route;
  for (int64_t d = 1; d < devices; ++d) {
    route.clear();
    topo->route(0, static_cast<DeviceId>(d), route);
    longest = std::max(longest, route.size());
  }
  detail::appendf(out, "  routes             device 0 reaches every device in at most %zu hops\n", longest);
  return out;
}

}  // namespace shardsim
