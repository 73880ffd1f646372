// Collective algorithms (see collective.h). The flow model of a ring: a ring
// all-gather of D bytes over r members moves (r-1)/r·D bytes across every
// ring edge; the r edges run concurrently for the whole phase (the pipelined
// ring of Patarasuk & Yuan 2009, as NCCL runs it), and the r-1 steps each pay
// the per-hop latency α. Alone on the fabric this gives the α-β cost
//   T = (r-1)/r · D / B + (r-1)·α,
// and a bidirectional ring (a torus axis) splits D over both directions,
// halving the bandwidth term. A reduce-scatter is the same pattern; an
// all-reduce is a reduce-scatter then an all-gather (2(r-1)/r·D/B). Across
// several phases (torus axes, node levels) the data a ring handles shrinks or
// grows by the other phases' group sizes, so every device still moves
// (p-1)/p·S bytes per all-gather in total.
#include "shardsim/sim/collective.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "shardsim/core/error.h"
#include "shardsim/sim/nccl_model.h"

namespace shardsim {
namespace {

using Ring = std::vector<DeviceId>;

/// GPU fabrics: devices grouped in NVLink nodes (a graph fabric's NVLink
/// domains), joined by a network. Tori (and torus graphs) have coordinates
/// instead.
bool has_nodes(const Topology& topo) {
  // A graph with device coordinates is a torus (fabric_graph.h, GraphTorus).
  return topo.kind() == FabricKind::kNvswitchFatTree || (topo.kind() == FabricKind::kGraph && topo.dims().empty());
}

/// The slowest route latency and the narrowest link along a ring's edges.
struct RingStep {
  SimTime alpha;
  double min_bandwidth = 0;  // bytes per second
};
RingStep ring_step(const std::vector<Ring>& rings, bool bidirectional, const Topology& topo) {
  RingStep step;
  std::vector<LinkId> route;
  for (const Ring& r : rings) {
    const size_t n = r.size();
    for (size_t i = 0; i < n; ++i) {
      for (int dir = 0; dir < (bidirectional ? 2 : 1); ++dir) {
        const DeviceId a = r[i];
        const DeviceId b = dir == 0 ? r[(i + 1) % n] : r[(i + n - 1) % n];
        if (a == b) continue;
        route.clear();
        topo.route(a, b, route);
        SimTime lat;
        for (LinkId l : route) {
          lat += topo.link(l).latency;
          const double bw = topo.link(l).bandwidth.value();
          if (step.min_bandwidth == 0 || bw < step.min_bandwidth) step.min_bandwidth = bw;
        }
        step.alpha = std::max(step.alpha, lat);
      }
    }
  }
  return step;
}

/// Latency of `steps` pipelined ring steps that each move `step_bytes` at
/// most: α per step plus the pipeline fill, min(chunk, step_bytes) per step
/// at the narrowest link's bandwidth.
SimTime ring_latency(const RingStep& step, int64_t steps, double step_bytes, const CollectiveCosts& costs) {
  double fill_s = 0;
  if (costs.pipeline_chunk.value() > 0 && step.min_bandwidth > 0) {
    fill_s = std::min(static_cast<double>(costs.pipeline_chunk.value()), step_bytes) / step.min_bandwidth;
  }
  return (step.alpha + to_sim_time(fill_s)) * steps;
}

/// One ring phase: every ring moves (r-1)/r·data bytes over each edge, in
/// r-1 steps of data/r.
CollectivePhase ring_phase(const std::vector<Ring>& rings, double data, bool bidirectional, const Topology& topo,
                           const CollectiveCosts& costs) {
  CollectivePhase ph;
  size_t r = 0;
  for (const Ring& ring : rings) {
    const size_t n = ring.size();
    r = std::max(r, n);
    if (n < 2) continue;
    const double per_edge = static_cast<double>(n - 1) / static_cast<double>(n) * data;
    for (size_t i = 0; i < n; ++i) {
      if (bidirectional) {
        ph.flows.push_back({ring[i], ring[(i + 1) % n], per_edge / 2});
        ph.flows.push_back({ring[i], ring[(i + n - 1) % n], per_edge / 2});
      } else {
        ph.flows.push_back({ring[i], ring[(i + 1) % n], per_edge});
      }
    }
  }
  if (r >= 2) {
    // A node's channels (and so its pipeline chunk) are shared by the rings
    // that pass through it: k network rings of a hierarchical plan each get
    // chunk / k.
    CollectiveCosts shared = costs;
    if (has_nodes(topo)) {
      const int64_t node = topo.node_of(rings.front().front());
      int64_t through = 0;
      for (const Ring& ring : rings) {
        through += std::any_of(ring.begin(), ring.end(), [&](DeviceId d) { return topo.node_of(d) == node; });
      }
      shared.pipeline_chunk = Bytes(costs.pipeline_chunk.value() / std::max<int64_t>(1, through));
    }
    const double step_bytes = data / static_cast<double>(r) / (bidirectional ? 2.0 : 1.0);
    // A bidirectional ring reaches every member in floor(r/2) hops each way
    // (the scaling book: "floor(N/2) hops"); a one-way ring needs r-1.
    const auto steps = static_cast<int64_t>(bidirectional ? r / 2 : r - 1);
    ph.latency = ring_latency(ring_step(rings, bidirectional, topo), steps, step_bytes, shared);
  }
  return ph;
}

/// A level of a hierarchical plan: rings that run together, data per ring as
/// a fraction of the collective's size, and whether rings are bidirectional.
struct Level {
  std::vector<Ring> rings;
  bool bidirectional = false;
  int64_t size() const { return rings.empty() ? 1 : static_cast<int64_t>(rings.front().size()); }
};

/// Splits members into levels, innermost first, with a name for the plan.
std::vector<Level> levels_for(std::span<const DeviceId> members, const Topology& topo, std::string& name) {
  std::vector<Level> levels;
  if (has_nodes(topo)) {
    std::map<int64_t, Ring> by_node;
    for (DeviceId d : members) by_node[topo.node_of(d)].push_back(d);
    const size_t k = by_node.begin()->second.size();
    bool uniform = true;
    for (const auto& [node, ring] : by_node) uniform = uniform && ring.size() == k;
    if (by_node.size() == 1) {
      name = "ring (nvlink)";
      levels.push_back({{Ring(members.begin(), members.end())}, false});
    } else if (k == 1) {
      name = "ring (network)";
      levels.push_back({{Ring(members.begin(), members.end())}, false});
    } else if (uniform) {
      name = "hierarchical (nvlink ring + network rings)";
      Level intra;
      for (const auto& [node, ring] : by_node) intra.rings.push_back(ring);
      Level inter;
      for (size_t i = 0; i < k; ++i) {
        Ring r;
        for (const auto& [node, ring] : by_node) r.push_back(ring[i]);
        inter.rings.push_back(r);
      }
      levels.push_back(std::move(intra));
      levels.push_back(std::move(inter));
    } else {
      name = "ring (mixed)";
      levels.push_back({{Ring(members.begin(), members.end())}, false});
    }
    return levels;
  }
  // Torus: is the group a sub-grid (the product of its per-axis coordinates)?
  const std::vector<int64_t> dims = topo.dims();
  const auto nd = static_cast<int>(dims.size());
  std::vector<std::vector<int64_t>> coords(static_cast<size_t>(nd));
  for (int a = 0; a < nd; ++a) {
    for (DeviceId d : members) coords[static_cast<size_t>(a)].push_back(topo.coord(d, a));
    auto& c = coords[static_cast<size_t>(a)];
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  size_t product = 1;
  for (const auto& c : coords) product *= c.size();
  if (product != members.size()) {
    name = "ring (irregular group)";
    levels.push_back({{Ring(members.begin(), members.end())}, false});
    return levels;
  }
  name = "per-axis bidirectional rings";
  for (int a = 0; a < nd; ++a) {
    if (coords[static_cast<size_t>(a)].size() < 2) continue;
    // Lines along axis a: members grouped by their other coordinates, each
    // ordered by the coordinate on a (members are ascending, so stable).
    std::map<std::vector<int64_t>, Ring> lines;
    for (DeviceId d : members) {
      std::vector<int64_t> key;
      for (int b = 0; b < nd; ++b) {
        if (b != a) key.push_back(topo.coord(d, b));
      }
      lines[key].push_back(d);
    }
    Level lv;
    lv.bidirectional = true;
    for (auto& [key, ring] : lines) {
      std::stable_sort(ring.begin(), ring.end(),
                       [&](DeviceId x, DeviceId y) { return topo.coord(x, a) < topo.coord(y, a); });
      lv.rings.push_back(ring);
    }
    levels.push_back(std::move(lv));
  }
  return levels;
}

/// A collective inside one NVSwitch node as NCCL runs it (nccl_model.h): one
/// phase of ring-edge flows (a broadcast: the chain from the first member),
/// each carrying what its links move in NCCL's transfer time, so that alone
/// on the fabric the phase takes exactly that time and beside other traffic
/// it shares the links by max-min fairness; NCCL's latency and pipeline fill
/// are the phase's fixed latency.
CollectivePlan nccl_plan(CollectiveKind kind, Bytes size, std::span<const DeviceId> members, const Topology& topo,
                         const NcclSpec& spec) {
  const NcclTiming t = nccl_time(kind, size, static_cast<int64_t>(members.size()), spec);
  CollectivePlan plan;
  plan.algorithm = std::string(to_string(t.cost.algorithm)) + "/" + std::string(to_string(t.cost.protocol)) + " (nccl)";
  CollectivePhase ph;
  const size_t n = members.size();
  const size_t edges = kind == CollectiveKind::kBroadcast ? n - 1 : n;
  std::vector<LinkId> route;
  for (size_t i = 0; i < edges; ++i) {
    const DeviceId a = members[i];
    const DeviceId b = members[(i + 1) % n];
    route.clear();
    topo.route(a, b, route);
    double narrowest = 0;
    for (LinkId l : route) {
      const double bw = topo.link(l).bandwidth.value();
      if (narrowest == 0 || bw < narrowest) narrowest = bw;
    }
    ph.flows.push_back({a, b, narrowest * t.transfer_us * 1e-6});
  }
  ph.latency = to_sim_time((t.cost.latency_us + t.fill_us) * 1e-6);
  plan.phases.push_back(std::move(ph));
  return plan;
}

/// How many nodes hold `members` when every node holds as many (0 when they
/// differ).
int64_t uniform_nodes(std::span<const DeviceId> members, const Topology& topo) {
  std::map<int64_t, int64_t> per_node;
  for (DeviceId d : members) ++per_node[topo.node_of(d)];
  const int64_t k = per_node.begin()->second;
  for (const auto& [node, count] : per_node) {
    if (count != k) return 0;
  }
  return static_cast<int64_t>(per_node.size());
}

/// A collective across whole nodes as NCCL runs it (nccl_model.h, several
/// nodes): NCCL's time, realized as flows on its ring channels. Channel j
/// visits the nodes in turn, entering each at its j-th member and leaving
/// from the member before it (NCCL's cross-NIC rings, one NIC per GPU), so
/// every GPU sends one channel over its NIC and the others over NVLink (NCCL
/// runs fewer channels than a 72-GPU domain has NICs: these flows spread
/// the load wider); a broadcast runs the channels as chains. Whatever
/// algorithm NCCL picks
/// (ring, tree, NVLS-tree, PAT), the flows follow these channels: each
/// carries, in NCCL's transfer time, what the narrower of its two end links
/// (the sender's port and the receiver's) moves when shared equally by the
/// phase's flows on it. Alone on a fabric whose core keeps up, the phase
/// takes exactly NCCL's time; an oversubscribed core or other traffic makes
/// it longer, by max-min fairness.
CollectivePlan nccl_nodes_plan(CollectiveKind kind, Bytes size, std::span<const DeviceId> members, int64_t nodes,
                               const Topology& topo, const NcclSpec& spec) {
  const auto p = static_cast<int64_t>(members.size());
  const NcclTiming t = nccl_time(kind, size, p, nodes, spec);
  CollectivePlan plan;
  plan.algorithm = std::string(to_string(t.cost.algorithm)) + "/" + std::string(to_string(t.cost.protocol)) +
                   " (nccl, " + std::to_string(nodes) + " nodes)";
  std::map<int64_t, Ring> by_node;
  for (DeviceId d : members) by_node[topo.node_of(d)].push_back(d);
  const size_t k = by_node.begin()->second.size();
  std::vector<std::pair<DeviceId, DeviceId>> edges;
  for (size_t j = 0; j < k; ++j) {
    Ring ring;
    for (const auto& [node, local] : by_node) {
      for (size_t i = 0; i < k; ++i) ring.push_back(local[(i + j) % k]);
    }
    const size_t n = ring.size();
    const size_t count = kind == CollectiveKind::kBroadcast ? n - 1 : n;
    for (size_t i = 0; i < count; ++i) edges.emplace_back(ring[i], ring[(i + 1) % n]);
  }
  std::vector<std::vector<LinkId>> routes(edges.size());
  std::map<LinkId, int64_t> users;
  for (size_t e = 0; e < edges.size(); ++e) {
    topo.route(edges[e].first, edges[e].second, routes[e]);
    for (LinkId l : routes[e]) ++users[l];
  }
  CollectivePhase ph;
  for (size_t e = 0; e < edges.size(); ++e) {
    const std::vector<LinkId>& route = routes[e];
    if (route.empty()) continue;
    auto share = [&](LinkId l) { return topo.link(l).bandwidth.value() / static_cast<double>(users[l]); };
    const double rate = std::min(share(route.front()), share(route.back()));
    ph.flows.push_back({edges[e].first, edges[e].second, rate * t.transfer_us * 1e-6});
  }
  ph.latency = to_sim_time((t.cost.latency_us + t.fill_us) * 1e-6);
  plan.phases.push_back(std::move(ph));
  return plan;
}

/// The kernel a serving engine's custom all-reduce of `bytes` over `n` ranks
/// runs (CustomAllReduce): 0 none (NCCL), 1 one-shot, 2 two-shot. vLLM
/// (csrc/custom_all_reduce.cuh, REDUCE_CASE) and TensorRT-LLM
/// (AllreducePlugin::selectImplementation) both take two ranks one-shot.
int custom_all_reduce_shots(int64_t bytes, int64_t n, const CustomAllReduce& c) {
  const int64_t workspace = n <= 2 && c.pair_max_bytes > 0 ? c.pair_max_bytes : c.max_bytes;
  if (bytes > workspace) return 0;
  if (n <= 2) return 1;
  const int64_t one_shot_max = n <= c.one_shot_max_ranks ? c.one_shot_small_max_bytes : c.one_shot_max_bytes;
  if (bytes < one_shot_max) return 1;
  return c.two_shot ? 2 : 0;
}

/// A serving engine's custom all-reduce inside one NVLink node
/// (CustomAllReduce): one-shot, a phase in which every member reads every
/// peer's whole buffer; two-shot, two phases in which each member reads its
/// 1/n slice from every peer (reduce-scatter) and then every peer's reduced
/// slice (all-gather). The flows share the NVLinks with everything else in
/// flight; the kernel's fixed time is the phases' latency. `shots`: 1 or 2,
/// custom_all_reduce_shots' choice.
CollectivePlan custom_all_reduce_plan(Bytes size, std::span<const DeviceId> members, const CustomAllReduce& c,
                                      int shots) {
  const auto n = static_cast<int64_t>(members.size());
  const bool one_shot = shots == 1;
  const double S = static_cast<double>(size.value());
  CollectivePlan plan;
  plan.algorithm = one_shot ? "one-shot (custom)" : "two-shot (custom)";
  const int phases = one_shot ? 1 : 2;
  for (int k = 0; k < phases; ++k) {
    CollectivePhase ph;
    for (DeviceId a : members) {
      for (DeviceId b : members) {
        if (a != b) ph.flows.push_back({a, b, one_shot ? S : S / static_cast<double>(n)});
      }
    }
    ph.latency = to_sim_time((one_shot ? c.one_shot_latency_us : c.two_shot_latency_us / 2) * 1e-6);
    plan.phases.push_back(std::move(ph));
  }
  return plan;
}

bool within_one_node(std::span<const DeviceId> members, const Topology& topo) {
  return std::all_of(members.begin(), members.end(),
                     [&](DeviceId d) { return topo.node_of(d) == topo.node_of(members.front()); });
}

/// How many leading levels of a torus plan are ICI axes that can run at
/// once (0 unless at least two): a level whose first ring's links are all
/// ICI links. A torus given as a graph (a fabric with dims) counts as a torus.
size_t concurrent_axes(const std::vector<Level>& levels, const Topology& topo) {
  if (topo.kind() != FabricKind::kTorus && topo.dims().empty()) return 0;
  size_t m = 0;
  std::vector<LinkId> route;
  for (const Level& lv : levels) {
    const Ring& r = lv.rings.front();
    route.clear();
    if (r.size() >= 2) topo.route(r[0], r[1], route);
    const bool ici =
        std::all_of(route.begin(), route.end(), [&](LinkId l) { return topo.link(l).kind == LinkKind::kIci; });
    if (!ici || route.empty()) break;
    ++m;
  }
  return m >= 2 ? m : 0;
}

}  // namespace

CollectivePlan plan_collective(CollectiveKind kind, Bytes size, std::span<const DeviceId> members, const Topology& topo,
                               const CollectiveCosts& costs) {
  CollectivePlan plan;
  const auto p = static_cast<int64_t>(members.size());
  const double S = static_cast<double>(size.value());
  if (p < 2) {
    plan.algorithm = "none (group of one)";
    return plan;
  }
  if (kind == CollectiveKind::kAllReduce) {
    const int shots = custom_all_reduce_shots(size.value(), p, costs.custom_all_reduce);
    if (shots > 0 && has_nodes(topo) && within_one_node(members, topo)) {
      return custom_all_reduce_plan(size, members, costs.custom_all_reduce, shots);
    }
  }
  const int64_t nodes = nccl_nodes(kind, members, topo, costs);
  if (nodes == 1) return nccl_plan(kind, size, members, topo, costs.nccl);
  if (nodes >= 2) return nccl_nodes_plan(kind, size, members, nodes, topo, costs.nccl);
  if (kind == CollectiveKind::kAllToAll) {
    plan.algorithm = "direct";
    CollectivePhase ph;
    SimTime worst;
    std::vector<LinkId> route;
    for (DeviceId a : members) {
      for (DeviceId b : members) {
        if (a == b) continue;
        ph.flows.push_back({a, b, S / static_cast<double>(p)});
        route.clear();
        topo.route(a, b, route);
        SimTime lat;
        for (LinkId l : route) lat += topo.link(l).latency;
        worst = std::max(worst, lat);
      }
    }
    ph.latency = worst;
    plan.phases.push_back(std::move(ph));
  } else if (kind == CollectiveKind::kBroadcast) {
    // Pipelined chain from the first member: every edge carries S.
    plan.algorithm = "pipelined chain";
    Ring chain(members.begin(), members.end());
    CollectivePhase ph;
    for (size_t i = 0; i + 1 < chain.size(); ++i) ph.flows.push_back({chain[i], chain[i + 1], S});
    ph.latency = ring_latency(ring_step({chain}, false, topo), p - 1, S, costs);
    plan.phases.push_back(std::move(ph));
  } else {
    std::vector<Level> levels = levels_for(members, topo, plan.algorithm);
    // Levels are innermost first (e.g. NVLink, then network). An all-gather
    // runs them outermost first: the outer rings gather only the shard held
    // by each inner group, S / (product of the inner level sizes), and the
    // innermost ring ends with all S bytes. This keeps the slow outer links
    // at their minimum volume. A reduce-scatter runs the mirror order.
    const size_t nl = levels.size();
    std::vector<double> data(nl);
    double d = S;
    for (size_t i = 0; i < nl; ++i) {
      data[i] = d;
      d /= static_cast<double>(levels[i].size());
    }
    auto phase = [&](size_t i) { return ring_phase(levels[i].rings, data[i], levels[i].bidirectional, topo, costs); };
    // On a torus the leading ICI axes (m >= 2 of them; a multislice's DCN
    // axis stays outside) work at once: the data is cut into m parts and part
    // j visits the axes in the order j, j+1, ..., so at every step each axis
    // carries one part. A gather over m axes then has m times one axis's
    // bandwidth, the scaling book's T = V / (W_ici · N_axes) ("How to Scale
    // Your Model", sharded matmuls: AllGather over multiple axes).
    const size_t m = concurrent_axes(levels, topo);
    const double part = S / static_cast<double>(std::max<size_t>(m, 1));
    auto axis_at = [&](size_t j, size_t t) { return (j + t) % m; };  // part j's axis at gather step t
    auto inner_step = [&](size_t t, bool gather) {
      CollectivePhase merged;
      for (size_t j = 0; j < m; ++j) {
        // A gather's step t ends with the data of the steps after it still
        // to come; a reduce-scatter runs the gather's steps in reverse.
        const size_t gt = gather ? t : m - 1 - t;
        double dj = part;
        for (size_t s = gt + 1; s < m; ++s) dj /= static_cast<double>(levels[axis_at(j, s)].size());
        const Level& lv = levels[axis_at(j, gt)];
        CollectivePhase ph = ring_phase(lv.rings, dj, lv.bidirectional, topo, costs);
        merged.flows.insert(merged.flows.end(), ph.flows.begin(), ph.flows.end());
        merged.latency = std::max(merged.latency, ph.latency);
      }
      plan.phases.push_back(std::move(merged));
    };
    auto rs = [&] {
      for (size_t t = 0; t < m; ++t) inner_step(t, false);
      for (size_t i = m; i < nl; ++i) plan.phases.push_back(phase(i));
    };
    auto ag = [&] {
      for (size_t i = nl; i-- > m;) plan.phases.push_back(phase(i));
      for (size_t t = 0; t < m; ++t) inner_step(t, true);
    };
    if (m >= 2) plan.algorithm = "per-axis bidirectional rings, " + std::to_string(m) + " axes at once";
    if (kind == CollectiveKind::kAllGather) {
      ag();
    } else if (kind == CollectiveKind::kReduceScatter) {
      rs();
    } else {
      rs();
      ag();
    }
    // NCCL runs all-gather and reduce-scatter as rings over all p ranks (its
    // multi-channel rings move the same bytes per link as the levels above),
    // so a group spanning n nodes pays p-1 ring steps, not (k-1) + (n-1).
    // Of those steps n-1 cross the network and p-n stay on NVLink, each at
    // its own hop latency (NCCL src/graph/tuning.cc, ncclTopoTuneModel:
    // latency = baseLat + (nsteps - nInterSteps)·intraLat + nInterSteps·interLat).
    // The pipeline fill is paid per step at the narrowest link, as before.
    // All-reduce keeps the level latencies, like NCCL's tree.
    if (has_nodes(topo) && nl > 1 && kind != CollectiveKind::kAllReduce) {
      const RingStep intra = ring_step(levels.front().rings, levels.front().bidirectional, topo);
      RingStep inter;
      for (size_t i = 1; i < nl; ++i) {
        const RingStep st = ring_step(levels[i].rings, levels[i].bidirectional, topo);
        inter.alpha = std::max(inter.alpha, st.alpha);
        if (inter.min_bandwidth == 0 || st.min_bandwidth < inter.min_bandwidth) inter.min_bandwidth = st.min_bandwidth;
      }
      const int64_t inter_steps = levels.back().size() - 1;  // nodes - 1
      RingStep slowest = inter;
      if (intra.min_bandwidth > 0 && intra.min_bandwidth < slowest.min_bandwidth) {
        slowest.min_bandwidth = intra.min_bandwidth;
      }
      slowest.alpha = SimTime();
      for (auto& ph : plan.phases) ph.latency = SimTime();
      plan.phases.front().latency = ring_latency(slowest, p - 1, S / static_cast<double>(p), costs) +
                                    intra.alpha * (p - 1 - inter_steps) + inter.alpha * inter_steps;
      plan.algorithm = "ring (nvlink + network, NCCL channels)";
    }
  }
  SHARDSIM_ASSERT(!plan.phases.empty(), "a collective over two or more devices has a phase");
  plan.phases.front().latency += costs.base_latency;
  return plan;
}

int64_t nccl_nodes(CollectiveKind kind, std::span<const DeviceId> members, const Topology& topo,
                   const CollectiveCosts& costs) {
  if (members.size() < 2 || costs.nccl.compute_capability <= 0 || costs.nccl.nvlink_links <= 0 || !has_nodes(topo) ||
      !nccl_models(kind)) {
    return 0;
  }
  if (within_one_node(members, topo)) return 1;
  if (!(costs.nccl.nic_GBps > 0)) return 0;
  const int64_t nodes = uniform_nodes(members, topo);
  return nodes >= 2 ? nodes : 0;
}

double bus_bandwidth_factor(CollectiveKind kind, int64_t group_size) {
  const auto n = static_cast<double>(std::max<int64_t>(group_size, 1));
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2 * (n - 1) / n;
    case CollectiveKind::kBroadcast:
      return 1;
    default:
      return (n - 1) / n;
  }
}

std::vector<int64_t> sweep_sizes(int64_t min_bytes, int64_t max_bytes, double factor) {
  SHARDSIM_ASSERT(min_bytes >= 1 && min_bytes <= max_bytes && factor > 1, "a sweep grows from min to max");
  std::vector<int64_t> sizes;
  for (double s = static_cast<double>(min_bytes); s <= static_cast<double>(max_bytes) * (1 + 1e-12); s *= factor) {
    const auto b = static_cast<int64_t>(std::llround(s));
    if (sizes.empty() || b > sizes.back()) sizes.push_back(std::min(b, max_bytes));
  }
  return sizes;
}

}  // namespace shardsim
