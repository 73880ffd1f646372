// GPUs in NVSwitch nodes, joined by a two- or three-tier fat tree.
//
// Inside a node every GPU has one up link to the NVSwitch and one down link
// from it, each at the GPU's NVLink bandwidth: a transfer between two GPUs of a
// node crosses [nvlink up(src), nvlink down(dst)].
//
// Between nodes each GPU has a NIC (up and down link) to a leaf switch. With
// rail_optimized, leaf r of a scalable unit connects GPU r of nics_per_leaf
// nodes (DGX SuperPOD: 32 nodes, 8 rails); otherwise a leaf connects
// nics_per_leaf consecutive GPUs. Each leaf's links to the spine tier are one
// aggregated up and one down link of capacity
//   nics_per_leaf · nic_bandwidth / oversubscription,
// i.e. ECMP is assumed to spread flows evenly over the parallel uplinks. With
// three tiers, leaves_per_pod leaves form a pod whose aggregate link to the
// core tier has the pod's full leaf-up capacity (the core is non-blocking).
#include <algorithm>

#include "shardsim/core/error.h"
#include "shardsim/topology/topology.h"

namespace shardsim {
namespace {

class FatTree final : public Topology {
 public:
  FatTree(const FatTreeSpec& s, int64_t devices) : spec_(s), devices_(devices) {
    const int64_t g = devices;
    const int64_t nodes = (g + s.gpus_per_node - 1) / s.gpus_per_node;
    if (s.rail_optimized) {
      const int64_t nodes_per_unit = s.nics_per_leaf;
      units_ = (nodes + nodes_per_unit - 1) / nodes_per_unit;
      leaves_ = units_ * s.gpus_per_node;
    } else {
      leaves_ = (g + s.nics_per_leaf - 1) / s.nics_per_leaf;
    }
    pods_ = s.tiers == 3 ? (leaves_ + s.leaves_per_pod - 1) / s.leaves_per_pod : 0;
    const BytesPerSec nvl = s.nvlink_bandwidth * s.nvlink_efficiency;
    const BytesPerSec nic = s.nic_bandwidth * s.nic_efficiency;
    const BytesPerSec leaf_up = nic * (static_cast<double>(s.nics_per_leaf) / s.oversubscription);
    const BytesPerSec pod_up = leaf_up * static_cast<double>(s.leaves_per_pod);
    links_.reserve(static_cast<size_t>(4 * g + 2 * leaves_ + 2 * pods_));
    for (int64_t i = 0; i < g; ++i) links_.push_back({nvl, s.nvlink_latency, LinkKind::kNvlink});  // up
    for (int64_t i = 0; i < g; ++i) links_.push_back({nvl, s.nvlink_latency, LinkKind::kNvlink});  // down
    for (int64_t i = 0; i < g; ++i) links_.push_back({nic, s.nic_latency, LinkKind::kNic});        // up
    for (int64_t i = 0; i < g; ++i) links_.push_back({nic, s.nic_latency, LinkKind::kNic});        // down
    for (int64_t i = 0; i < 2 * leaves_; ++i) links_.push_back({leaf_up, s.switch_latency, LinkKind::kSwitch});
    for (int64_t i = 0; i < 2 * pods_; ++i) links_.push_back({pod_up, s.switch_latency, LinkKind::kSwitch});
  }

  FabricKind kind() const override { return FabricKind::kNvswitchFatTree; }
  int64_t num_devices() const override { return devices_; }
  int64_t node_of(DeviceId d) const override { return d / spec_.gpus_per_node; }
  int64_t gpus_per_node() const override { return spec_.gpus_per_node; }
  /// Permutations that map nodes onto nodes (and, unless switch links can
  /// never bind, leaves onto leaves and pods onto pods).
  bool permute_links(std::span<const DeviceId> perm, std::vector<LinkId>& links) const override;

  void route(DeviceId src, DeviceId dst, std::vector<LinkId>& out) const override {
    if (src == dst) return;
    const int64_t g = devices_;
    if (node_of(src) == node_of(dst)) {
      out.push_back(static_cast<LinkId>(src));
      out.push_back(static_cast<LinkId>(g + dst));
      return;
    }
    out.push_back(static_cast<LinkId>(2 * g + src));
    const int64_t ls = leaf_of(src);
    const int64_t ld = leaf_of(dst);
    if (ls != ld) {
      const int64_t base = 4 * g;
      out.push_back(static_cast<LinkId>(base + ls));
      if (pods_ > 0 && ls / spec_.leaves_per_pod != ld / spec_.leaves_per_pod) {
        const int64_t pbase = base + 2 * leaves_;
        out.push_back(static_cast<LinkId>(pbase + ls / spec_.leaves_per_pod));
        out.push_back(static_cast<LinkId>(pbase + pods_ + ld / spec_.leaves_per_pod));
      }
      out.push_back(static_cast<LinkId>(base + leaves_ + ld));
    }
    out.push_back(static_cast<LinkId>(3 * g + dst));
  }

  std::string link_name(LinkId id) const override {
    const int64_t g = devices_;
    const int64_t i = id;
    if (i < g) return "nvlink up gpu" + std::to_string(i);
    if (i < 2 * g) return "nvlink down gpu" + std::to_string(i - g);
    if (i < 3 * g) return "nic up gpu" + std::to_string(i - 2 * g);
    if (i < 4 * g) return "nic down gpu" + std::to_string(i - 3 * g);
    const int64_t j = i - 4 * g;
    if (j < leaves_) return "leaf" + std::to_string(j) + " up";
    if (j < 2 * leaves_) return "leaf" + std::to_string(j - leaves_) + " down";
    const int64_t k = j - 2 * leaves_;
    if (k < pods_) return "pod" + std::to_string(k) + " up";
    return "pod" + std::to_string(k - pods_) + " down";
  }

 private:
  /// Whether no switch link can limit a rate: each carries only what the
  /// NICs below it send or receive, and its bandwidth is at least theirs
  /// together (oversubscription at most 1, also after a what-if speed-up).
  bool switches_never_bind() const {
    const int64_t g = devices_;
    const double nic = links_[static_cast<size_t>(2 * g)].bandwidth.value();
    const double below_leaf = nic * static_cast<double>(spec_.nics_per_leaf) * (1 - 1e-12);
    if (leaves_ > 0 && links_[static_cast<size_t>(4 * g)].bandwidth.value() < below_leaf) return false;
    return pods_ == 0 || links_[static_cast<size_t>(4 * g + 2 * leaves_)].bandwidth.value() >=
                             below_leaf * static_cast<double>(spec_.leaves_per_pod);
  }

  int64_t leaf_of(DeviceId d) const {
    if (spec_.rail_optimized) {
      const int64_t unit = node_of(d) / spec_.nics_per_leaf;
      return unit * spec_.gpus_per_node + d % spec_.gpus_per_node;
    }
    return d / spec_.nics_per_leaf;
  }
  FatTreeSpec spec_;
  int64_t devices_ = 0;
  int64_t units_ = 0;
  int64_t leaves_ = 0;
  int64_t pods_ = 0;
};

bool FatTree::permute_links(std::span<const DeviceId> perm, std::vector<LinkId>& links) const {
  links.clear();
  const int64_t n = devices_;
  const int64_t g = spec_.gpus_per_node;
  if (n % g != 0 || static_cast<int64_t>(perm.size()) != n) return false;
  // Nodes onto nodes: NVLink routes stay NVLink routes.
  for (int64_t node = 0; node < n / g; ++node) {
    const int64_t image = perm[static_cast<size_t>(node * g)] / g;
    for (int64_t r = 1; r < g; ++r) {
      if (perm[static_cast<size_t>(node * g + r)] / g != image) return false;
    }
  }
  links.assign(num_links(), kUnboundLink);
  for (int64_t d = 0; d < n; ++d) {
    const int64_t p = perm[static_cast<size_t>(d)];
    for (int64_t kind = 0; kind < 4; ++kind)
      links[static_cast<size_t>(kind * n + d)] = static_cast<LinkId>(kind * n + p);
  }
  if (switches_never_bind()) return true;
  // Otherwise leaves onto leaves and pods onto pods, one to one.
  std::vector<int64_t> leaf_image(static_cast<size_t>(leaves_), -1);
  std::vector<uint8_t> leaf_taken(static_cast<size_t>(leaves_), 0);
  for (int64_t d = 0; d < n; ++d) {
    const int64_t from = leaf_of(static_cast<DeviceId>(d));
    const int64_t to = leaf_of(perm[static_cast<size_t>(d)]);
    int64_t& img = leaf_image[static_cast<size_t>(from)];
    if (img < 0) {
      if (leaf_taken[static_cast<size_t>(to)]) return false;
      leaf_taken[static_cast<size_t>(to)] = 1;
      img = to;
    } else if (img != to) {
      return false;
    }
  }
  std::vector<int64_t> pod_image(static_cast<size_t>(pods_), -1);
  for (int64_t l = 0; l < leaves_; ++l) {
    const int64_t to = leaf_image[static_cast<size_t>(l)];
    if (to < 0) continue;  // no device (cannot happen with whole units)
    links[static_cast<size_t>(4 * n + l)] = static_cast<LinkId>(4 * n + to);
    links[static_cast<size_t>(4 * n + leaves_ + l)] = static_cast<LinkId>(4 * n + leaves_ + to);
    if (pods_ == 0) continue;
    int64_t& img = pod_image[static_cast<size_t>(l / spec_.leaves_per_pod)];
    if (img < 0) {
      img = to / spec_.leaves_per_pod;
    } else if (img != to / spec_.leaves_per_pod) {
      return false;
    }
  }
  for (int64_t p = 0; p < pods_; ++p) {
    const int64_t to = pod_image[static_cast<size_t>(p)];
    if (to < 0) return false;
    links[static_cast<size_t>(4 * n + 2 * leaves_ + p)] = static_cast<LinkId>(4 * n + 2 * leaves_ + to);
    links[static_cast<size_t>(4 * n + 2 * leaves_ + pods_ + p)] = static_cast<LinkId>(4 * n + 2 * leaves_ + pods_ + to);
  }
  return true;
}

}  // namespace

std::unique_ptr<Topology> make_fat_tree(const FatTreeSpec& spec, int64_t devices) {
  SHARDSIM_ASSERT(spec.gpus_per_node > 0 && spec.nics_per_leaf > 0, "fat tree sizes must be positive");
  return std::make_unique<FatTree>(spec, devices);
}

}  // namespace shardsim
