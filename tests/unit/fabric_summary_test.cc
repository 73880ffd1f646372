// What `shardsim topology` reports of a fabric (app/fabric.h): the counts of
// a built-in fat tree and of a torus against their closed forms, a fabric
// written as GraphML and read back summarised alike, and the text and JSON
// forms carrying the same figures.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "shardsim/app/fabric.h"
#include "shardsim/topology/fabric_graph.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {
namespace {

int64_t count_of(const FabricSummary& s, const std::string& kind) {
  int64_t n = 0;
  for (const auto& c : s.links) n += c.kind == kind ? c.count : 0;
  return n;
}

TEST(FabricSummary, RailOptimizedFatTreeMatchesItsClosedForm) {
  const ClusterSpec c = load_cluster("dgx-h100-64");
  const FatTreeSpec& f = c.fat_tree;
  ASSERT_TRUE(f.rail_optimized);
  ASSERT_EQ(f.tiers, 2);
  const FabricSummary s = summarize_fabric("dgx-h100-64", cluster_graph(c));
  const int64_t nodes = c.devices / f.gpus_per_node;
  // Rail-optimised: one leaf per rail (GPU index in its node) for every
  // nics_per_leaf nodes, one spine above them, one NVSwitch per node.
  const int64_t leaves = (nodes + f.nics_per_leaf - 1) / f.nics_per_leaf * f.gpus_per_node;
  EXPECT_EQ(s.devices, c.devices);
  EXPECT_EQ(s.switches, nodes + leaves + 1);
  // Every link both ways: GPU-NVSwitch, GPU-leaf, leaf-spine.
  EXPECT_EQ(count_of(s, "nvlink"), 2 * c.devices);
  EXPECT_EQ(count_of(s, "nic"), 2 * c.devices);
  EXPECT_EQ(count_of(s, "switch"), 2 * leaves);
  EXPECT_EQ(s.one_way_links, 2 * (2 * c.devices + leaves));
  EXPECT_EQ(s.nvlink_domains, nodes);
  EXPECT_EQ(s.largest_domain_devices, f.gpus_per_node);
  // Device 0 to another node on another rail: GPU, leaf, spine, leaf, GPU.
  EXPECT_EQ(s.max_hops_from_device0, 4);
  // The leaves' uplinks carry what their NICs bring, over the oversubscription.
  for (const auto& k : s.links) {
    if (k.kind == "switch") {
      EXPECT_DOUBLE_EQ(k.bandwidth_GBps,
                       f.nic_bandwidth.value() / 1e9 * static_cast<double>(f.nics_per_leaf) / f.oversubscription);
    }
  }
}

TEST(FabricSummary, TorusHasNoSwitchesNoNvlinkDomainAndItsDiameterFromDeviceZero) {
  const ClusterSpec c = parse_cluster_text(
      R"({"chip": "tpu-v4", "devices": 64, "fabric": {"kind": "torus", "dims": [4, 4, 4], "wraparound": [true, true, true]}})",
      "<test>");
  const FabricSummary s = summarize_fabric("torus", cluster_graph(c));
  EXPECT_EQ(s.devices, 64);
  EXPECT_EQ(s.switches, 0);
  // Six neighbours a device, one link each way: 6 one-way links out of each.
  EXPECT_EQ(s.one_way_links, 64 * 6);
  EXPECT_EQ(count_of(s, "ici"), 64 * 6);
  EXPECT_EQ(s.nvlink_domains, 0);
  EXPECT_EQ(s.largest_domain_devices, 0);
  EXPECT_NE(fabric_summary_text(s).find("nvlink domains     none"), std::string::npos);
  // With wraparound a device is at most 4 / 2 hops away along each axis.
  EXPECT_EQ(s.max_hops_from_device0, 3 * 2);
}

TEST(FabricSummary, AGraphWrittenAndReadBackSummarisesAlike) {
  const ClusterSpec c = load_cluster("gb200-nvl72");
  const FabricGraph g = cluster_graph(c);
  const FabricSummary direct = summarize_fabric("x", g);
  const FabricSummary dot = summarize_fabric("x", parse_fabric_graph(fabric_dot(g), "nvl72.dot"));
  const FabricSummary graphml = summarize_fabric("x", parse_fabric_graph(fabric_graphml(g), "nvl72.graphml"));
  for (const FabricSummary* s : {&dot, &graphml}) {
    EXPECT_EQ(fabric_summary_json(*s), fabric_summary_json(direct));
  }
  EXPECT_EQ(direct.largest_domain_devices, 72);
}

TEST(FabricSummary, TextAndJsonCarryTheSameFigures) {
  const FabricSummary s = summarize_fabric("dgx-h100-64", cluster_graph(load_cluster("dgx-h100-64")));
  const auto j = nlohmann::json::parse(fabric_summary_json(s));
  EXPECT_EQ(j["fabric"], "dgx-h100-64");
  EXPECT_EQ(j["devices"].get<int64_t>(), s.devices);
  EXPECT_EQ(j["switches"].get<int64_t>(), s.switches);
  EXPECT_EQ(j["one_way_links"].get<int64_t>(), s.one_way_links);
  ASSERT_EQ(j["links"].size(), s.links.size());
  int64_t sum = 0;
  for (const auto& l : j["links"]) sum += l["count"].get<int64_t>();
  EXPECT_EQ(sum, s.one_way_links);
  EXPECT_EQ(j["max_hops_from_device0"].get<int64_t>(), s.max_hops_from_device0);
  const std::string text = fabric_summary_text(s);
  EXPECT_NE(text.find(std::to_string(s.devices) + " devices, " + std::to_string(s.switches) + " switches"),
            std::string::npos);
  EXPECT_NE(text.find("at most " + std::to_string(s.max_hops_from_device0) + " hops"), std::string::npos);
}

}  // namespace
}  // namespace shardsim
