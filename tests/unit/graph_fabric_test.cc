// Graph fabrics (topology/fabric_graph.h): the built-in fat tree written as
// GraphML and read back routes and simulates as the fat tree does (the
// oracle is the closed-form fabric); generated fabrics route by shortest
// paths; bad graph files are input errors that name what is wrong.
#include "shardsim/topology/fabric_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <tuple>

#include "shardsim/app/fabric.h"
#include "shardsim/app/step.h"
#include "shardsim/core/error.h"
#include "shardsim/sim/fluid_network.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

std::string source(const std::string& rel) {
  return std::string(SHARDSIM_SOURCE_DIR) + "/" + rel;
}

/// The link's rate and latency along a route, for comparing fabrics whose
/// link ids differ.
std::vector<std::pair<double, int64_t>> route_profile(const Topology& t, DeviceId a, DeviceId b) {
  std::vector<LinkId> r;
  t.route(a, b, r);
  std::vector<std::pair<double, int64_t>> out;
  for (LinkId l : r) out.emplace_back(t.link(l).bandwidth.value(), t.link(l).latency.ps());
  return out;
}

std::string temp_file(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// Every pair of devices: the same number of hops over links of the same
// rates and latencies, for two- and three-tier, rail and plain fat trees.
TEST(GraphFabric, FatTreeAsAGraphRoutesAsTheFatTree) {
  for (const bool rail : {true, false}) {
    for (const int tiers : {2, 3}) {
      SCOPED_TRACE(std::to_string(tiers) + (rail ? " tiers, rail" : " tiers"));
      FatTreeSpec f = testing::fat_tree_450_50();
      f.rail_optimized = rail;
      f.tiers = tiers;
      f.leaves_per_pod = 2;
      f.oversubscription = 2;
      f.nvlink_latency = microseconds(0.95);
      f.nic_latency = microseconds(2);
      f.switch_latency = microseconds(0.5);
      const int64_t devices = 128;
      const auto built_in = make_fat_tree(f, devices);
      GraphFabricSpec g;
      // Through GraphML text and back, as a user's file would come.
      g.graph = std::make_shared<FabricGraph>(parse_fabric_graph(fabric_graphml(fat_tree_graph(f, devices)), "ft"));
      check_fabric_graph(*g.graph, "ft", devices);
      const auto graph = make_graph_fabric(g);
      EXPECT_EQ(graph->gpus_per_node(), 8);
      for (DeviceId a = 0; a < devices; ++a) {
        EXPECT_EQ(graph->node_of(a), built_in->node_of(a));
        for (DeviceId b = 0; b < devices; ++b)
          ASSERT_EQ(route_profile(*graph, a, b), route_profile(*built_in, a, b)) << a << "->" << b;
      }
    }
  }
}

// The bar of the issue: GraphML fat trees reproduce the built-in fat tree's
// step times on the examples (training with FSDP, MoE with expert
// parallelism, a tensor-parallel decode step), to the printed digit.
TEST(GraphFabric, GraphmlFatTreeReproducesTheExamplesStepTimes) {
  SimulateOptions opt;
  opt.timing = false;
  opt.critical_path = CriticalPathMode::kOff;
  for (const char* example : {"examples/llama3-8b-h100x64.json", "examples/mixtral-8x7b-h100x64.json",
                              "examples/llama3-70b-h100x8-decode.json"}) {
    SCOPED_TRACE(example);
    const Scenario s = load_scenario(source(example));
    const std::string file = temp_file("fabric.graphml", fabric_graphml(cluster_graph(s.cluster)));
    const Scenario g =
        load_scenario(source(example), {{"cluster.fabric.kind", "graph"}, {"cluster.fabric.file", file}});
    ASSERT_EQ(g.cluster.fabric, FabricKind::kGraph);
    const double want = simulate_step(s, opt).report.step_time_s;
    const double got = simulate_step(g, opt).report.step_time_s;
    EXPECT_NEAR(got, want, 1e-9 * want);
    char a[32], b[32];
    std::snprintf(a, sizeof a, "%.4f", want);
    std::snprintf(b, sizeof b, "%.4f", got);
    EXPECT_STREQ(a, b);
  }
  // The committed example on its committed GraphML file.
  const double file =
      simulate_step(load_scenario(source("examples/llama3-8b-h100x64-graphml.json")), opt).report.step_time_s;
  const double built = simulate_step(load_scenario(source("examples/llama3-8b-h100x64.json")), opt).report.step_time_s;
  EXPECT_NEAR(file, built, 1e-9 * built);
}

// A torus written as a graph (torus_graph: devices with coordinates) routes
// every pair over links of the same rates and latencies as the torus, in
// dimension order, and reports the same axes; the torus examples give the
// same step time on it (per-axis rings, the torus's collective costs).
TEST(GraphFabric, TorusAsAGraphRoutesAndSimulatesAsTheTorus) {
  for (const auto& [dims, wrap, slices] :
       {std::tuple{std::vector<int64_t>{4, 4}, std::vector<bool>{true, true}, int64_t{1}},
        std::tuple{std::vector<int64_t>{4, 2, 3}, std::vector<bool>{true, false, true}, int64_t{1}},
        std::tuple{std::vector<int64_t>{5}, std::vector<bool>{false}, int64_t{1}},
        std::tuple{std::vector<int64_t>{2, 2}, std::vector<bool>{true, true}, int64_t{3}}}) {
    TorusSpec t;
    t.dims = dims;
    t.wraparound = wrap;
    t.link_bandwidth = gbyte_per_s(45);
    t.link_efficiency = 0.9;
    t.hop_latency = microseconds(1);
    t.dcn_slices = slices;
    t.dcn_bandwidth = gbyte_per_s(12.5);
    t.dcn_latency = microseconds(5);
    const auto built_in = make_torus(t);
    GraphFabricSpec g;
    g.graph = std::make_shared<FabricGraph>(parse_fabric_graph(fabric_graphml(torus_graph(t)), "torus"));
    check_fabric_graph(*g.graph, "torus", built_in->num_devices());
    const auto graph = make_graph_fabric(g);
    EXPECT_EQ(graph->dims(), built_in->dims());
    // An axis of two has one link each way either way: it need not wrap.
    for (size_t a = 0; a < built_in->dims().size(); ++a) {
      if (built_in->dims()[a] > 2) {
        EXPECT_EQ(graph->wraparound()[a], built_in->wraparound()[a]) << a;
      }
    }
    for (DeviceId a = 0; a < built_in->num_devices(); ++a) {
      for (int ax = 0; ax < static_cast<int>(built_in->dims().size()); ++ax) {
        EXPECT_EQ(graph->coord(a, ax), built_in->coord(a, ax));
      }
      for (DeviceId b = 0; b < built_in->num_devices(); ++b) {
        ASSERT_EQ(route_profile(*graph, a, b), route_profile(*built_in, a, b)) << a << "->" << b;
      }
    }
  }
  SimulateOptions opt;
  opt.timing = false;
  opt.critical_path = CriticalPathMode::kOff;
  for (const char* example :
       {"examples/llama3-8b-tpu-v5e-256.json", "tests/golden/scenarios/llama2-7b-tpu-v4-torus.json"}) {
    SCOPED_TRACE(example);
    const Scenario s = load_scenario(source(example));
    const std::string file = temp_file("torus.graphml", fabric_graphml(cluster_graph(s.cluster)));
    const std::string cluster = R"({"chip": ")" + s.cluster.chip.name + R"(", "devices": )" +
                                std::to_string(s.cluster.devices) + R"(, "fabric": {"kind": "graph", "file": ")" +
                                file + R"("}})";
    const Scenario g = load_scenario(source(example), {{"cluster", cluster}});
    ASSERT_EQ(g.cluster.fabric, FabricKind::kGraph);
    const double want = simulate_step(s, opt).report.step_time_s;
    const double got = simulate_step(g, opt).report.step_time_s;
    EXPECT_NEAR(got, want, 1e-9 * want);
  }
}

/// A link's cost as routes count it: 1 for NVLink, 2 for the rest.
int64_t link_cost(LinkKind k) {
  return k == LinkKind::kNvlink ? 1 : 2;
}

/// The cost of the cheapest path from a to b through switches and transit
/// devices, by relaxing every link until nothing changes (Bellman-Ford).
int64_t cheapest(const FabricGraph& g, DeviceId a, DeviceId b) {
  std::vector<uint32_t> node_of(static_cast<size_t>(g.devices()));
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    if (g.nodes[v].device) node_of[static_cast<size_t>(g.nodes[v].rank)] = static_cast<uint32_t>(v);
  }
  constexpr int64_t kInf = 1 << 30;
  std::vector<int64_t> dist(g.nodes.size(), kInf);
  dist[node_of[a]] = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& l : g.links) {
      const bool forwards = l.from == node_of[a] || !g.nodes[l.from].device || g.nodes[l.from].transit;
      if (!forwards || dist[l.from] == kInf || dist[l.from] + link_cost(l.kind) >= dist[l.to]) continue;
      dist[l.to] = dist[l.from] + link_cost(l.kind);
      changed = true;
    }
  }
  return dist[node_of[b]];
}

TEST(GraphFabric, GeneratedFabricsRouteByShortestPaths) {
  const FabricGraph planes = multi_plane_graph(6, 4, 450, 50, 2, 950, 2000, 500);
  const FabricGraph dragonfly = dragonfly_graph(5, 3, 2, 50, 100, 50, 2000, 500);
  for (const FabricGraph* g : {&planes, &dragonfly}) {
    check_fabric_graph(*g, "generated");
    GraphFabricSpec spec;
    spec.graph = std::make_shared<FabricGraph>(*g);
    const auto t = make_graph_fabric(spec);
    for (DeviceId a = 0; a < t->num_devices(); ++a) {
      for (DeviceId b = 0; b < t->num_devices(); ++b) {
        std::vector<LinkId> r;
        t->route(a, b, r);
        int64_t c = 0;
        for (LinkId l : r) c += link_cost(t->link(l).kind);
        ASSERT_EQ(c, a == b ? 0 : cheapest(*g, a, b)) << a << "->" << b;
        std::vector<LinkId> again;
        t->route(a, b, again);
        EXPECT_EQ(r, again);  // deterministic
      }
    }
  }
  // Across planes the route forwards over NVLink inside a server: GPU 0
  // (server 0, plane 0) to GPU 5 (server 1, plane 1) is 4 hops, two of
  // them NVLink.
  GraphFabricSpec spec;
  spec.graph = std::make_shared<FabricGraph>(planes);
  const auto t = make_graph_fabric(spec);
  std::vector<LinkId> r;
  t->route(0, 5, r);
  ASSERT_EQ(r.size(), 4u);
  int nvlink = 0;
  for (LinkId l : r) nvlink += t->link(l).kind == LinkKind::kNvlink;
  EXPECT_EQ(nvlink, 2);
}

TEST(GraphFabric, Nvl72PresetIsOneNvlinkDomainPerRack) {
  const ClusterSpec c = load_cluster("gb200-nvl72-576");
  ASSERT_EQ(c.fabric, FabricKind::kGraph);
  const auto t = build_topology(c);
  EXPECT_EQ(t->gpus_per_node(), 72);
  EXPECT_EQ(t->node_of(71), 0);
  EXPECT_EQ(t->node_of(72), 1);
  EXPECT_EQ(c.fat_tree.gpus_per_node, 72);  // what the plan search sees
  std::vector<LinkId> r;
  t->route(0, 71, r);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(t->link(r[0]).kind, LinkKind::kNvlink);
}

void expect_error(const std::string& text, const std::string& where, int64_t devices = 0) {
  try {
    check_fabric_graph(parse_fabric_graph(text, "bad.dot"), "bad.dot", devices);
    ADD_FAILURE() << "accepted " << text;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
  }
}

/// Two leaves joined through two spines (25 GB/s each way), a NIC of
/// 100 GB/s per device; a and c hang off one leaf, b and d off the other.
std::unique_ptr<Topology> two_spines(Ecmp ecmp) {
  GraphFabricSpec g;
  g.ecmp = ecmp;
  g.graph = std::make_shared<FabricGraph>(parse_fabric_graph(
      R"(graph f { a [kind=gpu rank=0]; b [kind=gpu rank=1]; c [kind=gpu rank=2]; d [kind=gpu rank=3];
      l1 [kind=switch]; l2 [kind=switch]; s1 [kind=switch]; s2 [kind=switch];
      a -- l1 [bw_GBps=100 link=nic]; c -- l1 [bw_GBps=100 link=nic];
      b -- l2 [bw_GBps=100 link=nic]; d -- l2 [bw_GBps=100 link=nic];
      l1 -- s1 [bw_GBps=25 link=switch]; l1 -- s2 [bw_GBps=25 link=switch];
      s1 -- l2 [bw_GBps=25 link=switch]; s2 -- l2 [bw_GBps=25 link=switch]; })",
      "two_spines.dot"));
  return make_graph_fabric(g);
}

/// When each flow of `flows` (source, destination, bytes), all started at 0
/// on `topo`, would end at the rates the first update gives them.
std::vector<double> lone_finish_s(const Topology& topo,
                                  const std::vector<std::tuple<DeviceId, DeviceId, double>>& flows) {
  FluidNetwork net(topo);
  for (const auto& [a, b, bytes] : flows) net.add(a, b, bytes, 0, SimTime());
  std::vector<FluidNetwork::Finish> done;
  net.update(SimTime(), done);
  std::vector<double> out(flows.size());
  for (const auto& f : done) out[f.flow] = f.at.seconds();
  return out;
}

// Hashed, a flow between the leaves takes one spine (25 GB/s: 1 GB in
// 40 ms); split, half its bytes take each spine (50 GB/s: 20 ms). Beside a
// hashed flow on one of its spines, the split flow puts half its rate r on
// that spine's link, so r/2 + r = 25 GB/s: both run at 16.7 GB/s (60 ms).
TEST(GraphFabric, SplitEcmpSpreadsAFlowOverTheEqualCostPaths) {
  const auto hash = two_spines(Ecmp::kHash);
  const auto split = two_spines(Ecmp::kSplit);
  EXPECT_FALSE(hash->splits_flows());
  EXPECT_TRUE(split->splits_flows());
  EXPECT_NEAR(lone_finish_s(*hash, {{0, 1, 1e9}})[0], 0.040, 1e-12);
  EXPECT_NEAR(lone_finish_s(*split, {{0, 1, 1e9}})[0], 0.020, 1e-12);
  const auto both = lone_finish_s(*split, {{0, 1, 1e9}, {2, 3, 1e9}});
  // The second flow is split too (every flow of a split fabric is): each
  // spine carries half of both, 25 GB/s for two flows of 25 GB/s each.
  EXPECT_NEAR(both[0], 0.040, 1e-12);
  EXPECT_NEAR(both[1], 0.040, 1e-12);
  std::vector<LinkId> links;
  std::vector<double> frac;
  split->route_split(0, 1, links, frac);
  ASSERT_EQ(links.size(), 6u);  // NIC, both spines up and down, NIC
  double total = 0;
  for (double x : frac) total += x;
  EXPECT_DOUBLE_EQ(total, 4.0);  // four hops, each carrying the whole flow between them
}

// The max-min rates under fixed split fractions, against a hand solution:
// a split flow beside one that carries all its bytes on one link.
TEST(GraphFabric, SplitFlowsShareLinksByWeightedMaxMin) {
  const auto split = two_spines(Ecmp::kSplit);
  // A topology whose one flow is pinned: the hashed fabric's route for c->d,
  // given to the network as a split fabric's flow of fraction 1.
  class Mixed final : public Topology {
   public:
    Mixed(const Topology& split, const Topology& hash) : split_(split), hash_(hash) {
      for (size_t i = 0; i < split.num_links(); ++i) links_.push_back(split.link(static_cast<LinkId>(i)));
    }
    FabricKind kind() const override { return FabricKind::kGraph; }
    int64_t num_devices() const override { return 4; }
    void route(DeviceId a, DeviceId b, std::vector<LinkId>& out) const override { hash_.route(a, b, out); }
    bool splits_flows() const override { return true; }
    void route_split(DeviceId a, DeviceId b, std::vector<LinkId>& l, std::vector<double>& f) const override {
      if (a == 2) {
        Topology::route_split(a, b, l, f);
      } else {
        split_.route_split(a, b, l, f);
      }
    }
    std::string link_name(LinkId) const override { return "link"; }

   private:
    const Topology& split_;
    const Topology& hash_;
  };
  const auto hash = two_spines(Ecmp::kHash);
  const Mixed mixed(*split, *hash);
  const auto t = lone_finish_s(mixed, {{0, 1, 1e9}, {2, 3, 1e9}});
  EXPECT_NEAR(t[0], 1e9 / (25e9 / 1.5), 1e-12);
  EXPECT_NEAR(t[1], 1e9 / (25e9 / 1.5), 1e-12);
}

// On generated fabrics, a split flow is conserved at every node: the
// fractions leaving the source and entering the destination sum to 1,
// every switch passes on what it receives, and the hashed path is one of
// the DAG's paths.
TEST(GraphFabric, SplitFractionsAreConservedAtEveryNode) {
  for (const bool multi : {false, true}) {
    SCOPED_TRACE(multi ? "multi-plane" : "dragonfly");
    GraphFabricSpec g;
    g.graph = std::make_shared<FabricGraph>(multi ? multi_plane_graph(8, 8, 450, 50, 4, 950, 2000, 500)
                                                  : dragonfly_graph(4, 4, 4, 50, 100, 50, 2000, 500));
    g.ecmp = Ecmp::kSplit;
    const auto split = make_graph_fabric(g);
    g.ecmp = Ecmp::kHash;
    const auto hash = make_graph_fabric(g);
    const FabricGraph& graph = *g.graph;
    for (const auto& [a, b] : std::vector<std::pair<DeviceId, DeviceId>>{{0, 1}, {0, 9}, {3, 60}, {63, 8}}) {
      std::vector<LinkId> links, path;
      std::vector<double> frac;
      split->route_split(a, b, links, frac);
      hash->route(a, b, path);
      std::map<uint32_t, double> net;  // per node: in - out
      for (size_t i = 0; i < links.size(); ++i) {
        net[graph.links[links[i]].to] += frac[i];
        net[graph.links[links[i]].from] -= frac[i];
      }
      for (const auto& [node, x] : net) {
        const double want = graph.nodes[node].device && graph.nodes[node].rank == static_cast<int64_t>(a)   ? -1.0
                            : graph.nodes[node].device && graph.nodes[node].rank == static_cast<int64_t>(b) ? 1.0
                                                                                                            : 0.0;
        EXPECT_NEAR(x, want, 1e-12) << graph.nodes[node].id;
      }
      for (LinkId l : path) EXPECT_NE(std::find(links.begin(), links.end(), l), links.end());
    }
  }
}

TEST(GraphFabric, BadGraphsAreInputErrorsNamingTheNodeOrEdge) {
  const std::string ok = R"(graph f { a [kind=gpu rank=0]; b [kind=gpu rank=1]; s [kind=switch];
    a -- s [bw_GBps=50 link=nic]; b -- s [bw_GBps=50 link=nic]; })";
  check_fabric_graph(parse_fabric_graph(ok, "ok.dot"), "ok.dot", 2);
  expect_error(ok, "the graph has 2 devices, the cluster 4", 4);
  expect_error(R"(graph f { a [kind=gpu rank=0]; b [kind=gpu rank=0]; s [kind=switch];
    a -- s [bw_GBps=50]; b -- s [bw_GBps=50]; })",
               "/nodes/b/rank: rank 0 is also a");
  expect_error(R"(graph f { a [kind=gpu rank=0]; b [kind=gpu rank=1]; s [kind=switch];
    a -- s [bw_GBps=50]; b -- s; })",
               "/edges/1/bw_GBps: missing");
  expect_error(R"(graph f { a [kind=gpu rank=0]; b [kind=gpu rank=1]; s [kind=switch];
    a -- s [bw_GBps=50]; b -- s [bw_GBps=-1]; })",
               "/edges/1/bw_GBps: expected a positive number");
  expect_error(R"(graph f { a [kind=gpu rank=0]; b [kind=gpu rank=1]; s [kind=switch];
    a -- s [bw_GBps=50 link=infiniband]; b -- s [bw_GBps=50]; })",
               "/edges/0/link: expected nvlink");
  expect_error(R"(graph f { a [kind=gpu rank=0]; b [kind=gpu rank=1]; s [kind=switch]; t [kind=switch];
    a -- s [bw_GBps=50]; b -- t [bw_GBps=50]; })",
               "device 1 cannot be reached from device 0");
  // A path through a device that does not forward is no path.
  expect_error(R"(graph f { a [kind=gpu rank=0]; b [kind=gpu rank=1]; c [kind=gpu rank=2];
    a -- b [bw_GBps=50]; b -- c [bw_GBps=50]; })",
               "device 2 cannot be reached");
  // Torus graphs: coordinates on every device or none, filling a grid,
  // neighbours linked both ways, an axis wrapping on every line or none.
  const std::string ring =
      R"(graph f { a [kind=tpu transit=true rank=0 coord="0"]; b [kind=tpu transit=true rank=1 coord="1"];
    c [kind=tpu transit=true rank=2 coord="2"]; a -- b [bw_GBps=45 link=ici]; b -- c [bw_GBps=45 link=ici]; )";
  check_fabric_graph(parse_fabric_graph(ring + "}", "ring.dot"), "ring.dot", 3);
  EXPECT_FALSE(graph_torus(parse_fabric_graph(ring + "}", "ring.dot"), "ring.dot").wraparound[0]);
  EXPECT_TRUE(
      graph_torus(parse_fabric_graph(ring + "c -- a [bw_GBps=45 link=ici]; }", "ring.dot"), "ring.dot").wraparound[0]);
  expect_error(
      R"(graph f { a [kind=tpu transit=true rank=0 coord="0"]; b [kind=tpu transit=true rank=1]; a -- b [bw_GBps=45]; })",
      "/nodes/b/coord: expected the 1 coordinates every device of a torus graph has");
  expect_error(
      R"(graph f { a [kind=tpu transit=true rank=0 coord="0"]; b [kind=tpu transit=true rank=1 coord="2"]; a -- b [bw_GBps=45]; })",
      "/nodes: the devices' coordinates do not fill a grid: 2 devices, 3 cells");
  expect_error(
      R"(graph f { a [kind=tpu transit=true rank=0 coord="1"]; b [kind=tpu transit=true rank=1 coord="1"]; a -- b [bw_GBps=45]; })",
      "/nodes/b/coord: the same coordinates as a");
  expect_error(R"(graph f { a [kind=tpu transit=true rank=0 coord="0"]; b [kind=tpu rank=1 coord="1"];
    a -- b [bw_GBps=45]; })",
               "/nodes/b/transit: expected true");
  expect_error(R"(graph f { a [kind=tpu transit=true rank=0 coord="0,x"]; })",
               "/nodes/a/coord: expected up to 6 non-negative");
  expect_error(
      R"(graph f { a [kind=tpu transit=true rank=0 coord="0"]; s [kind=switch coord="1"]; a -- s [bw_GBps=45]; })",
      "/nodes/s/coord: a switch is not a device and has no coord");
  expect_error(R"(graph f { a [kind=tpu transit=true rank=0 coord="0"]; b [kind=tpu transit=true rank=1 coord="1"];
    c [kind=tpu transit=true rank=2 coord="2"]; a -- b [bw_GBps=45]; a -- c [bw_GBps=45]; })",
               "/nodes/b: a torus graph links each device both ways to its neighbour along every axis; none to c");
  // Two lines along x: one wraps, the other does not.
  expect_error(R"(graph f { a [kind=tpu transit=true rank=0 coord="0,0"]; b [kind=tpu transit=true rank=1 coord="1,0"];
    c [kind=tpu transit=true rank=2 coord="2,0"]; d [kind=tpu transit=true rank=3 coord="0,1"]; e [kind=tpu transit=true rank=4 coord="1,1"];
    g [kind=tpu transit=true rank=5 coord="2,1"]; a -- b [bw_GBps=45]; b -- c [bw_GBps=45]; c -- a [bw_GBps=45];
    d -- e [bw_GBps=45]; e -- g [bw_GBps=45]; a -- d [bw_GBps=45]; b -- e [bw_GBps=45]; c -- g [bw_GBps=45]; })",
               "axis 0 wraps around on some lines and not on others");
  expect_error(R"(graph f { a [kind=gpu]; })", "/nodes/a/rank: expected the device's rank");
  expect_error(R"(graph f { a [rank=0]; })", "/nodes/a/kind: missing");
  expect_error("graph f { a -- }", "not a readable DOT graph");
  expect_error("<graphml><graph edgedefault=\"undirected\"><node></graph>", "not a readable GraphML graph");
  expect_error("", "empty");
  expect_error("hello", "expected a GraphML or DOT graph");
}

TEST(GraphFabric, ScenarioFabricErrorsNameTheField) {
  const std::string base = R"({"model": "llama3-8b", "cluster": {"chip": "h100-sxm", "devices": 16, "fabric": )";
  const std::string plan = R"(}, "plan": {"dp": 16, "global_batch": 16, "seq_len": 2048}})";
  for (const auto& [fabric, where] : std::vector<std::pair<std::string, std::string>>{
           {R"({"kind": "graph"})", "/cluster/fabric/file: expected one graph"},
           {R"({"kind": "graph", "generate": "torus"})", "/cluster/fabric/generate"},
           {R"({"kind": "graph", "generate": "fat_tree", "file": "x.dot"})", "/cluster/fabric/generate: expected one"},
           {R"({"kind": "graph", "file": "missing.graphml"})", "cannot read the graph file"},
           {R"({"kind": "graph", "generate": "dragonfly", "groups": 3})", "/cluster/fabric/routers_per_group"},
           {R"({"kind": "graph", "generate": "fat_tree", "ecmp": "spray"})", "/cluster/fabric/ecmp"},
           {R"({"kind": "graph", "generate": "fat_tree", "gpus_per_nod": 8})", "/cluster/fabric/gpus_per_nod"}}) {
    try {
      testing::scenario(base + fabric + plan);
      ADD_FAILURE() << "accepted " << fabric;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    }
  }
  // SimGrid routes a flow on one path.
  const std::string split = base + R"({"kind": "graph", "generate": "fat_tree", "ecmp": "split"})" + plan;
  EXPECT_NO_THROW(testing::scenario(split));
  try {
    testing::scenario(split.substr(0, split.size() - 1) + R"(, "simulator": {"backend": "simgrid"}})");
    ADD_FAILURE() << "split ECMP accepted on SimGrid";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/cluster/fabric/ecmp: \"split\" needs the native backend"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace shardsim
