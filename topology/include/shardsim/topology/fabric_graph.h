// Fabrics described as graphs: devices and switches as nodes, links with a
// bandwidth per direction and a latency as edges. Read from a GraphML or
// Graphviz DOT file (Boost.Graph's readers), or built by a generator (an
// NVL72 rack cluster, a rail-only network, a multi-plane fat tree, a
// dragonfly, and the built-in fat tree itself for cross-checks).
//
// File schema (docs/topology.md). Node attributes: `kind` ("gpu", "tpu",
// "cpu" or "device" for a device; anything else, e.g. "switch",
// "nvswitch", is a switch), `rank` (a device's id in the cluster, 0..n-1;
// the device order), `transit` (true: a device may forward others'
// traffic, as NVLink forwarding in rail-only networks does; switches
// always may), `coord` ("x,y,z": a device's place in a torus, every device
// or none). Edge attributes: `bw_GBps` (line rate per direction, GB/s),
// `latency_ns`, `link` ("nvlink", "nic", "switch" or "ici": which
// efficiency applies and which what-if lever speeds it up). An undirected
// edge is a full-duplex link (one link each way); a directed one is one way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shardsim/topology/topology.h"

namespace shardsim {

struct FabricGraph {
  struct Node {
    std::string id;  ///< the file's node id (GraphML id, DOT node name)
    bool device = false;
    int64_t rank = -1;     ///< devices: their id in the cluster
    bool transit = false;  ///< devices: may forward traffic (switches always do)
    std::string kind;      ///< as written ("gpu", "switch", ...)
    std::vector<int64_t> coord;  ///< devices of a torus: their coordinates (else empty)
  };
  struct Link {  ///< one direction
    uint32_t from = 0, to = 0;
    double bandwidth_GBps = 0;  ///< line rate
    double latency_ns = 0;
    LinkKind kind = LinkKind::kSwitch;
  };
  std::vector<Node> nodes;
  std::vector<Link> links;
  int64_t devices() const;
};

/// Reads a GraphML (text starting with '<') or DOT file. Throws InputError
/// naming `file`, the node or edge and what was expected.
FabricGraph read_fabric_graph(const std::string& file);
FabricGraph parse_fabric_graph(const std::string& text, const std::string& name);

/// Checks what a fabric needs beyond the file's syntax: devices ranked
/// 0..n-1 once each (n == `devices` when > 0), positive bandwidths, and
/// every device reaching device 0 and reached from it through switches and
/// transit devices; with coordinates, a torus (graph_torus). Throws
/// InputError naming `name` and the offending node.
void check_fabric_graph(const FabricGraph& g, const std::string& name, int64_t devices = 0);

/// A graph whose devices carry coordinates is a torus: the coordinates fill
/// a grid (dims: each axis's largest coordinate + 1), every device is linked
/// both ways to its neighbours one step along each axis, and an axis of more
/// than two wraps around where the ends of every line along it are linked so
/// (all or none). Such a graph routes in dimension order as the built-in
/// torus does, and collectives run per-axis rings over it.
struct GraphTorus {
  std::vector<int64_t> dims;
  std::vector<bool> wraparound;
  bool present() const { return !dims.empty(); }
};
/// The torus of `g` (empty dims: its devices have no coordinates). Throws
/// InputError naming `name` and the node or line that breaks the rules.
GraphTorus graph_torus(const FabricGraph& g, const std::string& name);

/// The graph as GraphML / DOT text (full-duplex pairs as one undirected edge
/// when every link has its reverse, else directed).
std::string fabric_graphml(const FabricGraph& g);
std::string fabric_dot(const FabricGraph& g);

/// How a flow uses equal-cost shortest paths. kHash: one path per
/// (source, destination), chosen at each hop by a hash of the pair, as
/// switches hash a flow's 5-tuple. kSplit: at every node the flow's bytes
/// divide evenly over the equal-cost next hops (per-packet spraying, or
/// adaptive routing in its balanced limit), so a flow crosses the links of
/// its shortest-path DAG each with a fraction of its bytes.
enum class Ecmp : uint8_t { kHash, kSplit };

/// Efficiencies applied to line rates, by link kind (as the built-in
/// fabrics apply them: NVLink ring efficiency, NIC efficiency, ICI).
struct GraphFabricSpec {
  std::shared_ptr<const FabricGraph> graph;
  Ecmp ecmp = Ecmp::kHash;
  std::array<double, kLinkKinds> efficiency{1.0, 1.0, 1.0, 1.0};  ///< by LinkKind
};

/// A Topology over the graph: shortest paths through switches and transit
/// devices (hops, an NVLink hop counting half, so that traffic that can stay
/// on NVLink does), the equal-cost next hops of a destination computed by
/// one search per switch it hangs off, on first use and cached. NVLink domains (node_of) are the connected components
/// of the nvlink links; collectives treat them as the fat tree's nodes.
std::unique_ptr<Topology> make_graph_fabric(const GraphFabricSpec& spec);

// Generators. Bandwidths are line rates, GB/s per direction; latencies ns.

/// The built-in fat tree (topology.h, make_fat_tree) as a graph: one
/// NVSwitch node per server, a leaf per rail and unit (or per nics_per_leaf
/// GPUs), one spine vertex whose links to each leaf carry the leaf's uplink
/// capacity (pods and a core vertex with three tiers). Efficiencies are not
/// applied (they are the GraphFabricSpec's).
FabricGraph fat_tree_graph(const FatTreeSpec& spec, int64_t devices);

/// A torus (make_torus) as a graph of transit devices with coordinates,
/// joined by their ICI links (and DCN links for a multislice's last axis):
/// read back, it routes and runs collectives as the torus does. Rates as
/// the torus runs them (link efficiency applied).
FabricGraph torus_graph(const TorusSpec& spec);

/// Rail-optimised planes without a shared spine: GPU r of every server is on
/// plane r, a two-tier fat tree of leaves of `nics_per_leaf` GPUs under one
/// spine vertex; traffic between planes is forwarded over NVLink inside a
/// server (GPUs are transit). DeepSeek-V3's multi-plane fat tree (8 planes);
/// with nics_per_leaf >= servers, a rail-only network (Wang et al. 2023: one
/// switch per rail, no spine).
FabricGraph multi_plane_graph(int64_t servers, int64_t gpus_per_server, double nvlink_GBps, double nic_GBps,
                              int64_t nics_per_leaf, double nvlink_latency_ns, double nic_latency_ns,
                              double switch_latency_ns);

/// A dragonfly (Kim et al., ISCA 2008): `groups` of `routers` routers each,
/// the routers of a group fully connected by local links, every pair of
/// groups joined by one global link (group g's router (h mod routers) for
/// its h-th peer group), `gpus_per_router` GPUs hanging off each router by
/// one NIC. No NVLink. Minimal routing over the shortest paths.
FabricGraph dragonfly_graph(int64_t groups, int64_t routers, int64_t gpus_per_router, double nic_GBps,
                            double local_GBps, double global_GBps, double nic_latency_ns, double switch_latency_ns);

}  // namespace shardsim
