// A fabric read from a graph (fabric_graph.h): checking it, and routing on it.
//
// Routes are shortest paths, each link costing 1 if it is an NVLink and 2
// otherwise: hop counts, except that where a path over NVLink and one over
// the network are equally short, traffic stays on NVLink (as NCCL's P2P
// transport keeps it inside an NVLink domain). A path may pass through
// switches and transit devices only. The cost from any node u to a device d is
//   dist(u, d) = min over links a -> d of (w(a, d) if a == u, else D_a(u) + w(a, d)),
// a transit, where D_a is a shortest-path search from a over the reversed
// links (switches and transit devices expanded): one table per node that a
// destination hangs off, computed on first use and kept, 2 bytes per node.
// A route walks from the source; at each node the equal-cost next hops are
// the neighbours v with w(u, v) + dist(v, d) = dist(u, d) (Ecmp::kHash
// picks one by a hash of source, destination and node). Ecmp::kSplit
// spreads a flow over all of them instead: the source holds all of it, and
// every node divides what reaches it evenly over its equal-cost next hops
// (nodes taken in order of falling cost to d, so each is complete before it
// divides), which gives each link of the shortest-path DAG its fraction.
#include <algorithm>
#include <array>
#include <limits>
#include <mutex>
#include <numeric>
#include <unordered_map>
#include <utility>
#include <vector>

#include "shardsim/core/error.h"
#include "shardsim/topology/fabric_graph.h"

namespace shardsim {
namespace {

constexpr uint16_t kFar = std::numeric_limits<uint16_t>::max();

/// A link's routing cost (see the top of the file).
uint32_t cost(LinkKind k) {
  return k == LinkKind::kNvlink ? 1 : 2;
}

/// The grid a torus graph's coordinates index: mixed radix, x first.
int64_t grid_index(const std::vector<int64_t>& c, const std::vector<int64_t>& dims) {
  int64_t i = 0, stride = 1;
  for (size_t a = 0; a < dims.size(); ++a) {
    i += c[a] * stride;
    stride *= dims[a];
  }
  return i;
}

/// Whether g has a link from node u to node v.
bool linked(const std::vector<std::vector<uint32_t>>& out, uint32_t u, uint32_t v) {
  return std::find(out[u].begin(), out[u].end(), v) != out[u].end();
}

class GraphFabric final : public Topology {
 public:
  explicit GraphFabric(const GraphFabricSpec& spec) : graph_(spec.graph), split_(spec.ecmp == Ecmp::kSplit) {
    const FabricGraph& g = *graph_;
    const size_t n = g.nodes.size();
    out_.resize(n);
    in_.resize(n);
    transit_.resize(n);
    for (size_t v = 0; v < n; ++v) transit_[v] = !g.nodes[v].device || g.nodes[v].transit;
    devices_ = g.devices();
    node_of_rank_.assign(static_cast<size_t>(devices_), 0);
    for (size_t v = 0; v < n; ++v) {
      if (g.nodes[v].device) node_of_rank_[static_cast<size_t>(g.nodes[v].rank)] = static_cast<uint32_t>(v);
    }
    links_.reserve(g.links.size());
    for (size_t i = 0; i < g.links.size(); ++i) {
      const FabricGraph::Link& l = g.links[i];
      const double eff = spec.efficiency[static_cast<size_t>(l.kind)];
      links_.push_back({gbyte_per_s(l.bandwidth_GBps) * eff, microseconds(l.latency_ns / 1000), l.kind});
      out_[l.from].push_back({static_cast<LinkId>(i), l.to});
      in_[l.to].push_back({static_cast<LinkId>(i), l.from});
    }
    // NVLink domains: connected components of the nvlink links, numbered
    // in the order of their lowest rank.
    std::vector<uint32_t> parent(n);
    std::iota(parent.begin(), parent.end(), 0u);
    auto find = [&](uint32_t x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    for (const auto& l : g.links) {
      if (l.kind == LinkKind::kNvlink) parent[find(l.from)] = find(l.to);
    }
    std::unordered_map<uint32_t, int64_t> number;
    domain_.resize(static_cast<size_t>(devices_));
    std::vector<int64_t> size;
    for (int64_t r = 0; r < devices_; ++r) {
      const auto [it, fresh] =
          number.try_emplace(find(node_of_rank_[static_cast<size_t>(r)]), static_cast<int64_t>(number.size()));
      if (fresh) size.push_back(0);
      domain_[static_cast<size_t>(r)] = it->second;
      ++size[static_cast<size_t>(it->second)];
    }
    domain_size_ = size.empty() ? 1 : *std::max_element(size.begin(), size.end());
    torus_ = graph_torus(g, "graph");
    if (torus_.present()) {
      int64_t cells = 1;
      for (int64_t d : torus_.dims) cells *= d;
      rank_at_.assign(static_cast<size_t>(cells), 0);
      for (const FabricGraph::Node& node : g.nodes) {
        if (node.device) rank_at_[static_cast<size_t>(grid_index(node.coord, torus_.dims))] = node.rank;
      }
    }
  }

  FabricKind kind() const override { return FabricKind::kGraph; }
  int64_t num_devices() const override { return devices_; }
  int64_t node_of(DeviceId d) const override { return domain_[d]; }
  int64_t gpus_per_node() const override { return domain_size_; }
  /// A torus graph's axes (graph_torus): its collectives run per-axis rings.
  std::vector<int64_t> dims() const override { return torus_.dims; }
  std::vector<bool> wraparound() const override { return torus_.wraparound; }
  int64_t coord(DeviceId d, int axis) const override {
    return graph_->nodes[node_of_rank_[d]].coord[static_cast<size_t>(axis)];
  }

  /// Routes are kept per (source, destination) once walked: the network
  /// asks for one per flow, and a step repeats its pairs.
  void route(DeviceId src, DeviceId dst, std::vector<LinkId>& out) const override {
    if (src == dst) return;
    const uint64_t key = static_cast<uint64_t>(src) << 32 | dst;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (const auto it = routes_.find(key); it != routes_.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    const size_t first = out.size();
    if (torus_.present()) {
      dimension_order(src, dst, out);
    } else {
      walk(src, dst, out);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    routes_.try_emplace(key, out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
  }

  bool splits_flows() const override { return split_; }

  /// Split routes are kept per (source, destination) too.
  void route_split(DeviceId src, DeviceId dst, std::vector<LinkId>& links,
                   std::vector<double>& fractions) const override {
    if (!split_) {
      Topology::route_split(src, dst, links, fractions);
      return;
    }
    if (src == dst) return;
    const uint64_t key = static_cast<uint64_t>(src) << 32 | dst;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (const auto it = splits_.find(key); it != splits_.end()) {
        links.insert(links.end(), it->second.first.begin(), it->second.first.end());
        fractions.insert(fractions.end(), it->second.second.begin(), it->second.second.end());
        return;
      }
    }
    std::pair<std::vector<LinkId>, std::vector<double>> r;
    spread(src, dst, r.first, r.second);
    links.insert(links.end(), r.first.begin(), r.first.end());
    fractions.insert(fractions.end(), r.second.begin(), r.second.end());
    std::lock_guard<std::mutex> lock(mutex_);
    splits_.try_emplace(key, std::move(r));
  }

  std::string link_name(LinkId id) const override {
    const FabricGraph::Link& l = graph_->links[id];
    return std::string(to_string(l.kind)) + " " + graph_->nodes[l.from].id + " -> " + graph_->nodes[l.to].id;
  }

 private:
  /// A torus graph's route, as the built-in torus's: along x, then y, then
  /// z, the shorter way around an axis that wraps (ties go +), one link to
  /// the neighbour at each step.
  void dimension_order(DeviceId src, DeviceId dst, std::vector<LinkId>& out) const {
    std::vector<int64_t> at = graph_->nodes[node_of_rank_[src]].coord;
    const std::vector<int64_t>& to = graph_->nodes[node_of_rank_[dst]].coord;
    uint32_t u = node_of_rank_[src];
    for (size_t a = 0; a < at.size(); ++a) {
      const int64_t n = torus_.dims[a];
      if (at[a] == to[a]) continue;
      int64_t dir = to[a] > at[a] ? +1 : -1;
      int64_t hops = to[a] > at[a] ? to[a] - at[a] : at[a] - to[a];
      if (torus_.wraparound[a]) {
        const int64_t fwd = (to[a] - at[a] + n) % n;
        dir = fwd <= n - fwd ? +1 : -1;
        hops = dir > 0 ? fwd : n - fwd;
      }
      for (int64_t h = 0; h < hops; ++h) {
        at[a] = (at[a] + dir + n) % n;
        const uint32_t v = node_of_rank_[static_cast<size_t>(rank_at_[static_cast<size_t>(grid_index(at, torus_.dims))])];
        const auto link = std::find_if(out_[u].begin(), out_[u].end(), [&](const auto& e) { return e.second == v; });
        SHARDSIM_ASSERT(link != out_[u].end(), "a torus graph links every pair of neighbours (checked on load)");
        out.push_back(link->first);
        u = v;
      }
    }
  }

  void walk(DeviceId src, DeviceId dst, std::vector<LinkId>& out) const {
    const uint32_t d = node_of_rank_[dst];
    uint32_t u = node_of_rank_[src];
    uint32_t left = distance(u, d);
    SHARDSIM_ASSERT(left != kFar, "a graph fabric routes every device to every other (checked on load)");
    uint64_t h = (static_cast<uint64_t>(src) << 32 | dst) * 0x9E3779B97F4A7C15ull;
    std::vector<std::pair<LinkId, uint32_t>> next;
    while (u != d) {
      next_hops(u, d, left, next);
      h ^= h >> 29;
      h *= 0xBF58476D1CE4E5B9ull;
      const auto& [link, v] = next[static_cast<size_t>((h >> 17) % next.size())];
      out.push_back(link);
      left -= cost(links_[link].kind);
      u = v;
    }
  }

  /// The equal-cost next hops from node u, `left` from device node d:
  /// (link, node) for every link that starts a shortest path on.
  void next_hops(uint32_t u, uint32_t d, uint32_t left, std::vector<std::pair<LinkId, uint32_t>>& next) const {
    next.clear();
    for (const auto& [link, v] : out_[u]) {
      const uint32_t w = cost(links_[link].kind);
      if (w > left) continue;
      if (v == d ? w == left : transit_[v] && distance(v, d) == left - w) next.emplace_back(link, v);
    }
    SHARDSIM_ASSERT(!next.empty(), "a shortest path continues");
  }

  /// The shortest-path DAG from src to dst with each link's fraction of a
  /// flow split evenly at every node (top of the file).
  void spread(DeviceId src, DeviceId dst, std::vector<LinkId>& links, std::vector<double>& fractions) const {
    const uint32_t d = node_of_rank_[dst];
    const uint32_t s = node_of_rank_[src];
    const uint32_t total = distance(s, d);
    SHARDSIM_ASSERT(total != kFar, "a graph fabric routes every device to every other (checked on load)");
    // at[c]: nodes c from d with the fraction of the flow that reached them.
    std::vector<std::vector<std::pair<uint32_t, double>>> at(total + 1);
    at[total].emplace_back(s, 1.0);
    std::vector<std::pair<LinkId, uint32_t>> next;
    for (uint32_t left = total; left > 0; --left) {
      auto& nodes = at[left];
      std::sort(nodes.begin(), nodes.end());
      for (size_t i = 0; i < nodes.size();) {
        const uint32_t u = nodes[i].first;
        double share = 0;
        for (; i < nodes.size() && nodes[i].first == u; ++i) share += nodes[i].second;
        next_hops(u, d, left, next);
        share /= static_cast<double>(next.size());
        for (const auto& [link, v] : next) {
          links.push_back(link);
          fractions.push_back(share);
          if (v != d) at[left - cost(links_[link].kind)].emplace_back(v, share);
        }
      }
      nodes = {};
    }
  }

  /// Cost from node u to device node d (kFar: unreachable).
  uint32_t distance(uint32_t u, uint32_t d) const {
    if (u == d) return 0;
    uint32_t best = kFar;
    for (const auto& [link, a] : in_[d]) {
      const uint32_t w = cost(links_[link].kind);
      if (a == u) {
        best = std::min(best, w);
        continue;
      }
      if (!transit_[a]) continue;
      const uint16_t x = table(a)[u];
      if (x != kFar) best = std::min<uint32_t>(best, x + w);
    }
    return best;
  }
  /// D_a: cost from every node to a, through switches and transit devices
  /// (Dijkstra over the reversed links with Dial's buckets: link costs are
  /// 1 or 2, so three buckets, indexed by cost mod 3, hold every frontier).
  const std::vector<uint16_t>& table(uint32_t a) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, fresh] = tables_.try_emplace(a);
    if (!fresh) return it->second;
    std::vector<uint16_t>& t = it->second;
    t.assign(out_.size(), kFar);
    std::array<std::vector<uint32_t>, 3> bucket;
    t[a] = 0;
    bucket[0].push_back(a);
    size_t pending = 1;
    for (uint32_t c = 0; pending > 0; ++c) {
      std::vector<uint32_t>& now = bucket[c % 3];
      for (size_t i = 0; i < now.size(); ++i) {
        const uint32_t w = now[i];
        --pending;
        if (t[w] != c || (w != a && !transit_[w])) continue;
        for (const auto& [link, u] : in_[w]) {
          const uint32_t nc = c + cost(links_[link].kind);
          if (nc >= t[u]) continue;
          SHARDSIM_ASSERT(nc < kFar, "a route costs less than 65535");
          t[u] = static_cast<uint16_t>(nc);
          bucket[nc % 3].push_back(u);
          ++pending;
        }
      }
      now.clear();
    }
    return t;
  }

  std::shared_ptr<const FabricGraph> graph_;
  bool split_ = false;
  GraphTorus torus_;             ///< present: devices have coordinates; routes in dimension order
  std::vector<int64_t> rank_at_;  ///< torus: the rank at each grid index
  std::vector<std::vector<std::pair<LinkId, uint32_t>>> out_, in_;
  std::vector<char> transit_;
  std::vector<uint32_t> node_of_rank_;
  std::vector<int64_t> domain_;
  int64_t domain_size_ = 1;
  int64_t devices_ = 0;
  mutable std::mutex mutex_;
  mutable std::unordered_map<uint32_t, std::vector<uint16_t>> tables_;
  mutable std::unordered_map<uint64_t, std::vector<LinkId>> routes_;
  mutable std::unordered_map<uint64_t, std::pair<std::vector<LinkId>, std::vector<double>>> splits_;
};

}  // namespace

void check_fabric_graph(const FabricGraph& g, const std::string& name, int64_t devices) {
  const int64_t n = g.devices();
  if (n == 0) throw InputError(name, "/nodes", "no devices: expected nodes of kind gpu, tpu, cpu or device");
  if (devices > 0 && n != devices) {
    throw InputError(name, "/nodes",
                     "the graph has " + std::to_string(n) + " devices, the cluster " + std::to_string(devices));
  }
  if (g.nodes.size() >= kFar) throw InputError(name, "/nodes", "at most 65534 nodes are supported");
  std::vector<int64_t> node_of(static_cast<size_t>(n), -1);
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    const auto& node = g.nodes[v];
    if (!node.device) continue;
    if (node.rank >= n) {
      throw InputError(
          name, "/nodes/" + node.id + "/rank",
          "expected a rank below the device count " + std::to_string(n) + ", got " + std::to_string(node.rank));
    }
    if (node_of[static_cast<size_t>(node.rank)] >= 0) {
      throw InputError(name, "/nodes/" + node.id + "/rank",
                       "rank " + std::to_string(node.rank) + " is also " +
                           g.nodes[static_cast<size_t>(node_of[static_cast<size_t>(node.rank)])].id);
    }
    node_of[static_cast<size_t>(node.rank)] = static_cast<int64_t>(v);
  }
  // Device 0 reaches every device, and every device reaches device 0.
  std::vector<std::vector<uint32_t>> fwd(g.nodes.size()), back(g.nodes.size());
  for (const auto& l : g.links) {
    fwd[l.from].push_back(l.to);
    back[l.to].push_back(l.from);
  }
  for (const auto* adj : {&fwd, &back}) {
    std::vector<char> seen(g.nodes.size(), 0);
    const auto root = static_cast<uint32_t>(node_of[0]);
    std::vector<uint32_t> queue{root};
    seen[root] = 1;
    for (size_t i = 0; i < queue.size(); ++i) {
      for (uint32_t v : (*adj)[queue[i]]) {
        if (seen[v]) continue;
        seen[v] = 1;
        if (!g.nodes[v].device || g.nodes[v].transit) queue.push_back(v);
      }
    }
    for (int64_t r = 0; r < n; ++r) {
      if (!seen[static_cast<size_t>(node_of[static_cast<size_t>(r)])]) {
        throw InputError(name, "/nodes/" + g.nodes[static_cast<size_t>(node_of[static_cast<size_t>(r)])].id,
                         std::string("device ") + std::to_string(r) +
                             (adj == &fwd ? " cannot be reached from" : " cannot reach") +
                             " device 0 through switches and transit devices");
      }
    }
  }
  (void)graph_torus(g, name);  // a torus graph's rules
}

GraphTorus graph_torus(const FabricGraph& g, const std::string& name) {
  GraphTorus t;
  const FabricGraph::Node* first = nullptr;
  for (const FabricGraph::Node& node : g.nodes) {
    if (!node.device) continue;
    if (first == nullptr) first = &node;
    if (node.coord.empty() != first->coord.empty() || node.coord.size() != first->coord.size()) {
      throw InputError(name, "/nodes/" + node.id + "/coord",
                       "expected the " + std::to_string(first->coord.size()) + " coordinates every device of " +
                           (first->coord.empty() ? "this graph lacks" : "a torus graph has") + " (" + first->id +
                           "'s)");
    }
  }
  if (first == nullptr || first->coord.empty()) return t;
  for (const FabricGraph::Node& node : g.nodes) {
    if (node.device && !node.transit) {
      throw InputError(name, "/nodes/" + node.id + "/transit",
                       "expected true: a torus graph's routes pass through its devices");
    }
  }
  const size_t axes = first->coord.size();
  t.dims.assign(axes, 1);
  for (const FabricGraph::Node& node : g.nodes) {
    for (size_t a = 0; node.device && a < axes; ++a) t.dims[a] = std::max(t.dims[a], node.coord[a] + 1);
  }
  int64_t cells = 1;
  for (int64_t d : t.dims) cells *= d;
  if (cells != g.devices()) {
    throw InputError(name, "/nodes", "the devices' coordinates do not fill a grid: " + std::to_string(g.devices()) +
                                         " devices, " + std::to_string(cells) + " cells");
  }
  std::vector<int64_t> node_at(static_cast<size_t>(cells), -1);
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    const FabricGraph::Node& node = g.nodes[v];
    if (!node.device) continue;
    int64_t& slot = node_at[static_cast<size_t>(grid_index(node.coord, t.dims))];
    if (slot >= 0) {
      throw InputError(name, "/nodes/" + node.id + "/coord",
                       "the same coordinates as " + g.nodes[static_cast<size_t>(slot)].id);
    }
    slot = static_cast<int64_t>(v);
  }
  std::vector<std::vector<uint32_t>> out(g.nodes.size());
  for (const auto& l : g.links) out[l.from].push_back(l.to);
  t.wraparound.assign(axes, false);
  for (size_t a = 0; a < axes; ++a) {
    const int64_t n = t.dims[a];
    int wraps = -1;  // unknown until the first line along the axis
    for (size_t v = 0; v < g.nodes.size(); ++v) {
      const FabricGraph::Node& node = g.nodes[v];
      if (!node.device || n < 2) continue;
      std::vector<int64_t> c = node.coord;
      if (c[a] + 1 < n) {
        ++c[a];
        const auto w = static_cast<uint32_t>(node_at[static_cast<size_t>(grid_index(c, t.dims))]);
        if (!linked(out, static_cast<uint32_t>(v), w) || !linked(out, w, static_cast<uint32_t>(v))) {
          throw InputError(name, "/nodes/" + node.id,
                           "a torus graph links each device both ways to its neighbour along every axis; none to " +
                               g.nodes[w].id + " (axis " + std::to_string(a) + ")");
        }
      } else if (n > 2) {
        // The line's last device: linked to its first both ways, or not at all.
        c[a] = 0;
        const auto w = static_cast<uint32_t>(node_at[static_cast<size_t>(grid_index(c, t.dims))]);
        const bool here = linked(out, static_cast<uint32_t>(v), w) && linked(out, w, static_cast<uint32_t>(v));
        if (wraps >= 0 && here != (wraps == 1)) {
          throw InputError(name, "/nodes/" + node.id,
                           "axis " + std::to_string(a) + " wraps around on some lines and not on others");
        }
        wraps = here ? 1 : 0;
      }
    }
    t.wraparound[a] = wraps == 1;
  }
  return t;
}

std::unique_ptr<Topology> make_graph_fabric(const GraphFabricSpec& spec) {
  SHARDSIM_ASSERT(spec.graph != nullptr, "a graph fabric has a graph");
  return std::make_unique<GraphFabric>(spec);
}

}  // namespace shardsim
