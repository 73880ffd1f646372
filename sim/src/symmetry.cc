#include "symmetry.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "shardsim/core/error.h"
#include "shardsim/sim/collective.h"

namespace shardsim::detail {
namespace {

constexpr auto kAxes = static_cast<size_t>(kNumMeshAxesWithEp);

/// The translation by h along axis a, as a device permutation.
std::vector<DeviceId> shift(const Mesh& mesh, MeshAxis a, int64_t h) {
  std::vector<DeviceId> perm(static_cast<size_t>(mesh.devices()));
  const int64_t n = mesh.size(a);
  for (int64_t d = 0; d < mesh.devices(); ++d) {
    const int64_t c = mesh.coord(d, a);
    perm[static_cast<size_t>(d)] = static_cast<DeviceId>(d + ((c + h) % n - c) * mesh.stride(a));
  }
  return perm;
}

/// A collective of the programs, by what its plan depends on.
struct CollectiveKey {
  CollectiveKind kind;
  uint8_t axes;
  int64_t bytes;
  bool operator<(const CollectiveKey& o) const {
    return std::tie(kind, axes, bytes) < std::tie(o.kind, o.axes, o.bytes);
  }
};

/// A transfer of a stage: to the peer this far along this axis.
struct SendKey {
  MeshAxis axis;
  int peer;
  bool operator<(const SendKey& o) const { return std::tie(axis, peer) < std::tie(o.axis, o.peer); }
};

class Finder {
 public:
  Finder(const ProgramSet& ps, const Mesh& mesh, const Topology& topo, const CollectiveCosts& costs,
         const CalibrationProfile* calibration)
      : mesh_(mesh), topo_(topo), costs_(costs) {
    for (size_t s = 0; s < ps.stages.size(); ++s) {
      for (const Op& o : ps.stages[s].ops()) {
        if (o.kind == OpKind::kSend) sends_[s].insert({o.peer_axis, o.peer});
        if (o.kind != OpKind::kCollective) continue;
        // A collective with a measured fit takes latency + bytes / rate and
        // runs no flows: its group map is all that matters.
        if (calibration != nullptr && calibration->fit(std::string(to_string(o.collective)), mesh.group_size(o.axes))) {
          continue;
        }
        auto& stages = collectives_[{o.collective, o.axes, o.comm_bytes.value()}].stages;
        stages.resize(ps.stages.size(), 0);
        stages[s] = 1;
      }
    }
  }

  /// Whether the translation by h along a maps the step onto itself; its
  /// link images in `links`, or why not.
  bool generator_passes(MeshAxis a, int64_t h, std::vector<LinkId>& links, std::string& why) {
    const std::vector<DeviceId> perm = shift(mesh_, a, h);
    if (!topo_.permute_links(perm, links)) {
      why = "the fabric";
      return false;
    }
    if (!transfers_pass(perm)) {
      why = "a transfer's route latency";
      return false;
    }
    if (!collectives_pass(perm)) {
      why = "a collective's plan";
      return false;
    }
    return true;
  }

 private:
  SimTime latency(DeviceId a, DeviceId b) {
    scratch_.clear();
    topo_.route(a, b, scratch_);
    SimTime t;
    for (LinkId l : scratch_) t += topo_.link(l).latency;
    return t;
  }

  DeviceId peer_of(DeviceId d, MeshAxis axis, int delta) const {
    const int64_t n = mesh_.size(axis);
    const int64_t c = mesh_.coord(d, axis);
    const int64_t nc = ((c + delta) % n + n) % n;
    return static_cast<DeviceId>(static_cast<int64_t>(d) + (nc - c) * mesh_.stride(axis));
  }

  bool transfers_pass(const std::vector<DeviceId>& perm) {
    for (const auto& [stage, keys] : sends_) {
      for (int64_t d = 0; d < mesh_.devices(); ++d) {
        if (mesh_.coord(d, MeshAxis::kPp) != static_cast<int64_t>(stage)) continue;
        for (const SendKey& k : keys) {
          const auto src = static_cast<DeviceId>(d);
          const DeviceId dst = peer_of(src, k.axis, k.peer);
          if (latency(src, dst) != latency(perm[src], perm[dst])) return false;
        }
      }
    }
    return true;
  }

  struct Collective {
    std::vector<uint8_t> stages;  ///< which stages run it
    /// Plans by group index, made when first compared.
    std::vector<std::optional<CollectivePlan>> plans;
  };

  const CollectivePlan& plan_of(const CollectiveKey& key, Collective& c, int64_t group, DeviceId member) {
    if (c.plans.empty()) c.plans.resize(static_cast<size_t>(mesh_.num_groups(key.axes)));
    auto& slot = c.plans[static_cast<size_t>(group)];
    if (!slot) {
      members_.clear();
      mesh_.group_members(member, key.axes, members_);
      slot = plan_collective(key.kind, Bytes(key.bytes), members_, topo_, costs_);
    }
    return *slot;
  }

  /// Every group's plan, translated, is its image group's plan.
  bool collectives_pass(const std::vector<DeviceId>& perm) {
    using Flow = std::tuple<DeviceId, DeviceId, double>;
    std::vector<Flow> mine, theirs;
    for (auto& [key, c] : collectives_) {
      for (int64_t d = 0; d < mesh_.devices(); ++d) {
        if (!c.stages[static_cast<size_t>(mesh_.coord(d, MeshAxis::kPp))]) continue;
        // One device per group: its coordinates on the group's axes zero.
        bool base = true;
        for (size_t a = 0; a < kAxes && base; ++a) {
          if ((key.axes & (1u << a)) && mesh_.coord(d, static_cast<MeshAxis>(a)) != 0) base = false;
        }
        if (!base) continue;
        const auto dev = static_cast<DeviceId>(d);
        const int64_t g = mesh_.group_index(d, key.axes);
        const int64_t ig = mesh_.group_index(perm[dev], key.axes);
        // Plans are kept in the map by reference: both are made first.
        plan_of(key, c, g, dev);
        const CollectivePlan& image = plan_of(key, c, ig, perm[dev]);
        const CollectivePlan& plan = *c.plans[static_cast<size_t>(g)];
        if (plan.algorithm != image.algorithm || plan.phases.size() != image.phases.size()) return false;
        for (size_t p = 0; p < plan.phases.size(); ++p) {
          const CollectivePhase& x = plan.phases[p];
          const CollectivePhase& y = image.phases[p];
          if (x.latency != y.latency || x.flows.size() != y.flows.size()) return false;
          mine.clear();
          theirs.clear();
          for (const FlowSpec& f : x.flows) mine.emplace_back(perm[f.src], perm[f.dst], f.bytes);
          for (const FlowSpec& f : y.flows) theirs.emplace_back(f.src, f.dst, f.bytes);
          std::sort(mine.begin(), mine.end());
          std::sort(theirs.begin(), theirs.end());
          if (mine != theirs) return false;
        }
      }
    }
    return true;
  }

  const Mesh& mesh_;
  const Topology& topo_;
  const CollectiveCosts& costs_;
  std::map<size_t, std::set<SendKey>> sends_;  // by stage
  std::map<CollectiveKey, Collective> collectives_;
  std::vector<LinkId> scratch_;
  std::vector<uint32_t> members_;
};

/// Union-find with the smallest id as each class's representative.
LinkId find(std::vector<LinkId>& parent, LinkId l) {
  while (parent[l] != l) {
    parent[l] = parent[parent[l]];
    l = parent[l];
  }
  return l;
}

}  // namespace

StepSymmetry find_symmetry(const ProgramSet& programs, const Mesh& mesh, const Topology& topo,
                           const CollectiveCosts& costs, const CalibrationProfile* calibration,
                           const std::vector<uint32_t>& keep) {
  StepSymmetry sym;
  sym.group = MeshSymmetry::none(mesh);
  Finder finder(programs, mesh, topo, costs, calibration);
  std::vector<std::vector<LinkId>> generators;
  std::string found, refused;
  for (size_t ai = 0; ai < kAxes; ++ai) {
    const auto a = static_cast<MeshAxis>(ai);
    const int64_t n = mesh.size(a);
    if (a == MeshAxis::kPp || n <= 1) continue;
    // A device is canonical when each coordinate is below its axis's step.
    int64_t least = 1;
    for (uint32_t d : keep) {
      if (d < mesh.devices()) least = std::max(least, mesh.coord(d, a) + 1);
    }
    std::string why = "a traced device";
    for (int64_t h = least; h < n; ++h) {
      if (n % h != 0) continue;
      std::vector<LinkId> links;
      if (finder.generator_passes(a, h, links, why)) {
        sym.group.step[ai] = h;
        generators.push_back(std::move(links));
        found += (found.empty() ? "" : ", ") + std::string(to_string(a));
        if (h > 1) found += " (every " + std::to_string(h) + ")";
        break;
      }
    }
    if (sym.group.step[ai] == n) refused += (refused.empty() ? "" : "; ") + std::string(to_string(a)) + ": " + why;
  }
  if (generators.empty()) {
    sym.note = refused.empty() ? "no axis to translate along" : "none (" + refused + ")";
    return sym;
  }
  sym.note = "translations along " + found;
  if (!refused.empty()) sym.note += "; none along " + refused;

  // Orbits of links under the group: the classes its generators join.
  const size_t nl = topo.num_links();
  std::vector<LinkId> parent(nl);
  std::iota(parent.begin(), parent.end(), LinkId{0});
  std::vector<uint8_t> unbound(nl, 0);
  for (const auto& img : generators) {
    for (size_t l = 0; l < nl; ++l) unbound[l] |= img[l] == Topology::kUnboundLink;
  }
  for (const auto& img : generators) {
    for (size_t l = 0; l < nl; ++l) {
      // A link one generator leaves out, all must (Topology::permute_links).
      SHARDSIM_ASSERT(unbound[l] == (img[l] == Topology::kUnboundLink), "fabric leaves a link out inconsistently");
      if (unbound[l]) continue;
      const LinkId x = find(parent, static_cast<LinkId>(l));
      const LinkId y = find(parent, img[l]);
      if (x != y) parent[std::max(x, y)] = std::min(x, y);
    }
  }
  std::vector<int64_t> orbit_size(nl, 0);
  sym.link_rep.resize(nl);
  for (size_t l = 0; l < nl; ++l) {
    sym.link_rep[l] = unbound[l] ? Topology::kUnboundLink : find(parent, static_cast<LinkId>(l));
    if (!unbound[l]) ++orbit_size[sym.link_rep[l]];
  }
  const auto order = static_cast<double>(sym.group.order(mesh));
  sym.link_fixers.assign(nl, 0.0);
  for (size_t l = 0; l < nl; ++l) {
    if (!unbound[l]) sym.link_fixers[l] = order / static_cast<double>(orbit_size[sym.link_rep[l]]);
  }
  return sym;
}

}  // namespace shardsim::detail
