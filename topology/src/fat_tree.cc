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
  /// Rail-optimised: GPU r of every node reaches GPU r of another over its
  /// NIC, rail r's leaves and their uplinks, and with three tiers the pods'
  /// links, which every rail of the pod's units crosses alike when pods
  /// hold whole units (leaves_per_pod a multiple of gpus_per_node); whole
  /// nodes only.
  int64_t rail_group() const override {
    const int64_t g = spec_.gpus_per_node;
    if (!spec_.rail_optimized || devices_ % g != 0) return 0;
    if (pods_ > 0 && spec_.leaves_per_pod % g != 0) return 0;
    return g;
  }
  bool rails_share_links() const override { return pods_ > 0; }
  /// Inside a node the images' NVLinks (one up, one down link each, no
  /// two images alike); between nodes a pod link carries every image.
  void rail_route(DeviceId src, DeviceId dst, int64_t copies, std::vector<LinkId>& links,
                  std::vector<double>& weights) const override {
    const size_t first = links.size();
    if (node_of(src) == node_of(dst)) {
      // Image c: local rank r -> r - r % copies + (r % copies + c) % copies.
      const auto image = [copies](DeviceId d, int64_t c) {
        return static_cast<DeviceId>(d - d % copies + (d % copies + c) % copies);
      };
      for (int64_t c = 0; c < copies; ++c) route(image(src, c), image(dst, c), links);
      weights.resize(weights.size() + links.size() - first, 1.0);
      return;
    }
    route(src, dst, links);
    const auto pod_links = static_cast<LinkId>(4 * devices_ + 2 * leaves_);
    for (size_t i = first; i < links.size(); ++i) {
      weights.push_back(links[i] >= pod_links ? static_cast<double>(copies) : 1.0);
    }
  }

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

}  // namespace

std::unique_ptr<Topology> make_fat_tree(const FatTreeSpec& spec, int64_t devices) {
  SHARDSIM_ASSERT(spec.gpus_per_node > 0 && spec.nics_per_leaf > 0, "fat tree sizes must be positive");
  return std::make_unique<FatTree>(spec, devices);
}

}  // namespace shardsim
