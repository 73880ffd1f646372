#include "shardsim/app/fabric.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

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

FabricSummary summarize_fabric(const std::string& name, const FabricGraph& g) {
  GraphFabricSpec spec;
  spec.graph = std::make_shared<FabricGraph>(g);
  const auto topo = make_graph_fabric(spec);
  FabricSummary s;
  s.name = name;
  s.devices = g.devices();
  s.switches = static_cast<int64_t>(g.nodes.size()) - s.devices;
  std::map<std::pair<int, double>, int64_t> by;  // (kind, line rate) -> one-way links
  for (const auto& l : g.links) ++by[{static_cast<int>(l.kind), l.bandwidth_GBps}];
  for (const auto& [key, n] : by) {
    s.links.push_back({std::string(to_string(static_cast<LinkKind>(key.first))), key.second, n});
  }
  s.one_way_links = static_cast<int64_t>(g.links.size());
  // NVLink domains only where there is NVLink: a torus's devices are each
  // their own "node" to the simulator, which is no domain.
  const bool nvlink =
      std::any_of(g.links.begin(), g.links.end(), [](const auto& l) { return l.kind == LinkKind::kNvlink; });
  for (int64_t d = 0; d < s.devices && nvlink; ++d) {
    s.nvlink_domains = std::max(s.nvlink_domains, topo->node_of(static_cast<DeviceId>(d)) + 1);
  }
  s.largest_domain_devices = nvlink ? topo->gpus_per_node() : 0;
  std::vector<LinkId> route;
  for (int64_t d = 1; d < s.devices; ++d) {
    route.clear();
    topo->route(0, static_cast<DeviceId>(d), route);
    s.max_hops_from_device0 = std::max(s.max_hops_from_device0, static_cast<int64_t>(route.size()));
  }
  return s;
}

std::string fabric_summary_text(const FabricSummary& s) {
  std::string out;
  detail::appendf(out, "fabric  %s\n", s.name.c_str());
  detail::appendf(out, "  nodes              %lld devices, %lld switches\n", static_cast<long long>(s.devices),
                  static_cast<long long>(s.switches));
  detail::appendf(out, "  links              %lld one-way\n", static_cast<long long>(s.one_way_links));
  for (const auto& c : s.links) {
    detail::appendf(out, "    %-8s %10.6g GB/s  x %lld\n", c.kind.c_str(), c.bandwidth_GBps,
                    static_cast<long long>(c.count));
  }
  if (s.nvlink_domains == 0) {
    detail::appendf(out, "  nvlink domains     none (no NVLink links)\n");
  } else {
    detail::appendf(out, "  nvlink domains     %lld (largest %lld devices)\n", static_cast<long long>(s.nvlink_domains),
                    static_cast<long long>(s.largest_domain_devices));
  }
  detail::appendf(out, "  routes             device 0 reaches every device in at most %lld hops\n",
                  static_cast<long long>(s.max_hops_from_device0));
  return out;
}

std::string fabric_summary_json(const FabricSummary& s) {
  nlohmann::ordered_json j;
  j["fabric"] = s.name;
  j["devices"] = s.devices;
  j["switches"] = s.switches;
  j["one_way_links"] = s.one_way_links;
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (const auto& c : s.links) {
    nlohmann::ordered_json l;
    l["kind"] = c.kind;
    l["bandwidth_GBps"] = c.bandwidth_GBps;
    l["count"] = c.count;
    links.push_back(std::move(l));
  }
  j["links"] = std::move(links);
  j["nvlink_domains"] = s.nvlink_domains;
  j["largest_domain_devices"] = s.largest_domain_devices;
  j["max_hops_from_device0"] = s.max_hops_from_device0;
  return j.dump(2) + "\n";
}

}  // namespace shardsim
