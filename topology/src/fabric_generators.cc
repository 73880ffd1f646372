// Fabrics built as graphs (fabric_graph.h): the built-in fat tree for
// cross-checks, multi-plane and rail-only networks, and dragonflies.
#include <memory>
#include <string>

#include "shardsim/core/error.h"
#include "shardsim/topology/fabric_graph.h"

namespace shardsim {
namespace {

struct Builder {
  FabricGraph g;
  uint32_t device(int64_t rank, bool transit = false) {
    g.nodes.push_back({"gpu" + std::to_string(rank), true, rank, transit, "gpu", {}});
    return static_cast<uint32_t>(g.nodes.size() - 1);
  }
  uint32_t node(const std::string& id, const std::string& kind) {
    g.nodes.push_back({id, false, -1, false, kind, {}});
    return static_cast<uint32_t>(g.nodes.size() - 1);
  }
  /// A full-duplex link: one each way.
  void link(uint32_t a, uint32_t b, double gbps, double ns, LinkKind k) {
    g.links.push_back({a, b, gbps, ns, k});
    g.links.push_back({b, a, gbps, ns, k});
  }
};

}  // namespace

FabricGraph fat_tree_graph(const FatTreeSpec& s, int64_t devices) {
  SHARDSIM_ASSERT(s.gpus_per_node > 0 && s.nics_per_leaf > 0, "fat tree sizes must be positive");
  Builder b;
  const int64_t nodes = (devices + s.gpus_per_node - 1) / s.gpus_per_node;
  std::vector<uint32_t> gpu(static_cast<size_t>(devices));
  for (int64_t d = 0; d < devices; ++d) gpu[static_cast<size_t>(d)] = b.device(d);
  const double nvl = s.nvlink_bandwidth.value() / 1e9;
  const double nic = s.nic_bandwidth.value() / 1e9;
  const double nvl_ns = s.nvlink_latency.seconds() * 1e9;
  const double nic_ns = s.nic_latency.seconds() * 1e9;
  const double sw_ns = s.switch_latency.seconds() * 1e9;
  if (s.gpus_per_node > 1) {
    for (int64_t n = 0; n < nodes; ++n) {
      const uint32_t sw = b.node("nvswitch" + std::to_string(n), "nvswitch");
      for (int64_t d = n * s.gpus_per_node; d < std::min(devices, (n + 1) * s.gpus_per_node); ++d) {
        b.link(gpu[static_cast<size_t>(d)], sw, nvl, nvl_ns, LinkKind::kNvlink);
      }
    }
  }
  if (nodes < 2) return std::move(b.g);
  // Leaves as make_fat_tree numbers them (fat_tree.cc, leaf_of).
  auto leaf_of = [&](int64_t d) {
    if (s.rail_optimized) return d / s.gpus_per_node / s.nics_per_leaf * s.gpus_per_node + d % s.gpus_per_node;
    return d / s.nics_per_leaf;
  };
  const int64_t leaves = s.rail_optimized ? (nodes + s.nics_per_leaf - 1) / s.nics_per_leaf * s.gpus_per_node
                                          : (devices + s.nics_per_leaf - 1) / s.nics_per_leaf;
  std::vector<uint32_t> leaf(static_cast<size_t>(leaves));
  for (int64_t l = 0; l < leaves; ++l) leaf[static_cast<size_t>(l)] = b.node("leaf" + std::to_string(l), "switch");
  for (int64_t d = 0; d < devices; ++d) {
    b.link(gpu[static_cast<size_t>(d)], leaf[static_cast<size_t>(leaf_of(d))], nic, nic_ns, LinkKind::kNic);
  }
  const double leaf_up = nic * (static_cast<double>(s.nics_per_leaf) / s.oversubscription);
  if (s.tiers == 3) {
    const int64_t pods = (leaves + s.leaves_per_pod - 1) / s.leaves_per_pod;
    const uint32_t core = b.node("core", "switch");
    for (int64_t p = 0; p < pods; ++p) {
      const uint32_t pod = b.node("pod" + std::to_string(p), "switch");
      b.link(pod, core, leaf_up * static_cast<double>(s.leaves_per_pod), sw_ns, LinkKind::kSwitch);
      for (int64_t l = p * s.leaves_per_pod; l < std::min(leaves, (p + 1) * s.leaves_per_pod); ++l) {
        b.link(leaf[static_cast<size_t>(l)], pod, leaf_up, sw_ns, LinkKind::kSwitch);
      }
    }
  } else {
    const uint32_t spine = b.node("spine", "switch");
    for (int64_t l = 0; l < leaves; ++l) b.link(leaf[static_cast<size_t>(l)], spine, leaf_up, sw_ns, LinkKind::kSwitch);
  }
  return std::move(b.g);
}

FabricGraph torus_graph(const TorusSpec& s) {
  const std::unique_ptr<Topology> t = make_torus(s);
  Builder b;
  for (int64_t d = 0; d < t->num_devices(); ++d) {
    const uint32_t v = b.device(d, /*transit=*/true);
    for (size_t a = 0; a < t->dims().size(); ++a) {
      b.g.nodes[v].coord.push_back(t->coord(static_cast<DeviceId>(d), static_cast<int>(a)));
    }
  }
  // The torus's own links, one direction each: every route of one hop.
  const std::vector<int64_t> dims = t->dims();
  std::vector<LinkId> route;
  for (int64_t d = 0; d < t->num_devices(); ++d) {
    int64_t stride = 1;
    for (size_t a = 0; a < dims.size(); ++a) {
      const int64_t c = t->coord(static_cast<DeviceId>(d), static_cast<int>(a));
      for (const int64_t step : {+1, -1}) {
        const int64_t n = dims[a];
        const bool wraps = t->wraparound()[a];
        if (n < 2 || (!wraps && (c + step < 0 || c + step >= n)) || (n == 2 && step < 0 && wraps)) continue;
        const int64_t peer = d + ((c + step + n) % n - c) * stride;
        route.clear();
        t->route(static_cast<DeviceId>(d), static_cast<DeviceId>(peer), route);
        const LinkSpec& l = t->link(route.front());
        b.g.links.push_back({static_cast<uint32_t>(d), static_cast<uint32_t>(peer), l.bandwidth.value() / 1e9,
                             l.latency.seconds() * 1e9, l.kind});
      }
      stride *= dims[a];
    }
  }
  return std::move(b.g);
}

FabricGraph multi_plane_graph(int64_t servers, int64_t gpus_per_server, double nvlink_GBps, double nic_GBps,
                              int64_t nics_per_leaf, double nvlink_latency_ns, double nic_latency_ns,
                              double switch_latency_ns) {
  SHARDSIM_ASSERT(servers > 0 && gpus_per_server > 0 && nics_per_leaf > 0, "multi-plane sizes must be positive");
  Builder b;
  std::vector<uint32_t> gpu;
  for (int64_t d = 0; d < servers * gpus_per_server; ++d) gpu.push_back(b.device(d, /*transit=*/true));
  for (int64_t n = 0; n < servers && gpus_per_server > 1; ++n) {
    const uint32_t sw = b.node("nvswitch" + std::to_string(n), "nvswitch");
    for (int64_t i = 0; i < gpus_per_server; ++i) {
      b.link(gpu[static_cast<size_t>(n * gpus_per_server + i)], sw, nvlink_GBps, nvlink_latency_ns, LinkKind::kNvlink);
    }
  }
  const int64_t leaves = (servers + nics_per_leaf - 1) / nics_per_leaf;  // per plane
  for (int64_t p = 0; p < gpus_per_server; ++p) {
    const std::string plane = "plane" + std::to_string(p);
    const uint32_t spine = leaves > 1 ? b.node(plane + " spine", "switch") : 0;
    for (int64_t l = 0; l < leaves; ++l) {
      const uint32_t leaf = b.node(plane + " leaf" + std::to_string(l), "switch");
      if (leaves > 1) {
        b.link(leaf, spine, nic_GBps * static_cast<double>(nics_per_leaf), switch_latency_ns, LinkKind::kSwitch);
      }
      for (int64_t n = l * nics_per_leaf; n < std::min(servers, (l + 1) * nics_per_leaf); ++n) {
        b.link(gpu[static_cast<size_t>(n * gpus_per_server + p)], leaf, nic_GBps, nic_latency_ns, LinkKind::kNic);
      }
    }
  }
  return std::move(b.g);
}

FabricGraph dragonfly_graph(int64_t groups, int64_t routers, int64_t gpus_per_router, double nic_GBps,
                            double local_GBps, double global_GBps, double nic_latency_ns, double switch_latency_ns) {
  SHARDSIM_ASSERT(groups > 0 && routers > 0 && gpus_per_router > 0, "dragonfly sizes must be positive");
  Builder b;
  for (int64_t d = 0; d < groups * routers * gpus_per_router; ++d) b.device(d);
  std::vector<uint32_t> router;
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t r = 0; r < routers; ++r) {
      router.push_back(b.node("g" + std::to_string(g) + " r" + std::to_string(r), "switch"));
      for (int64_t i = 0; i < gpus_per_router; ++i) {
        const auto d = static_cast<uint32_t>((g * routers + r) * gpus_per_router + i);
        b.link(d, router.back(), nic_GBps, nic_latency_ns, LinkKind::kNic);
      }
    }
  }
  auto at = [&](int64_t g, int64_t r) { return router[static_cast<size_t>(g * routers + r)]; };
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t r = 0; r < routers; ++r) {
      for (int64_t q = r + 1; q < routers; ++q)
        b.link(at(g, r), at(g, q), local_GBps, switch_latency_ns, LinkKind::kSwitch);
    }
  }
  // Group g's h-th peer (h = 0..groups-2, peers in increasing order) is
  // reached from its router h mod routers.
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t o = g + 1; o < groups; ++o) {
      const int64_t h_g = o - 1;  // o's index among g's peers
      const int64_t h_o = g;      // g's index among o's peers
      b.link(at(g, h_g % routers), at(o, h_o % routers), global_GBps, switch_latency_ns, LinkKind::kSwitch);
    }
  }
  return std::move(b.g);
}

}  // namespace shardsim
