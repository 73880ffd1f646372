// A k-dimensional torus (or mesh, per axis) with dimension-order routing.
// Each device has a + and a - link on every axis of size > 1; a route moves
// along x, then y, then z, taking the shorter way around when the axis wraps
// (ties go the + way), as TPU ICI routing does.
#include <stdexcept>

#include "shardsim/core/error.h"
#include "shardsim/topology/topology.h"

namespace shardsim {
namespace {

class Torus final : public Topology {
 public:
  explicit Torus(const TorusSpec& s) : spec_(s) {
    // The DCN is switched: a chip's NIC share carries dcn_bandwidth out of
    // it in all. Two slices: one link each way between the pair, no wrap.
    // More: a ring whose two directions split the NIC's egress, so that a
    // bidirectional ring collective still leaves each chip at dcn_bandwidth.
    BytesPerSec dcn_link = s.dcn_bandwidth;
    if (s.dcn_slices > 1) {
      spec_.dims.push_back(s.dcn_slices);
      spec_.wraparound.push_back(s.dcn_slices > 2);
      if (s.dcn_slices > 2) dcn_link = s.dcn_bandwidth * 0.5;
    }
    devices_ = 1;
    for (int64_t d : spec_.dims) {
      strides_.push_back(devices_);
      devices_ *= d;
    }
    const BytesPerSec bw = s.link_bandwidth * s.link_efficiency;
    const size_t nd = spec_.dims.size();
    links_.assign(static_cast<size_t>(devices_) * nd * 2, LinkSpec{bw, s.hop_latency, LinkKind::kIci});
    if (s.dcn_slices > 1) {
      for (int64_t dev = 0; dev < devices_; ++dev) {
        for (int64_t dir : {+1, -1}) {
          links_[static_cast<size_t>(link_id(dev, nd - 1, dir))] = LinkSpec{dcn_link, s.dcn_latency, LinkKind::kNic};
        }
      }
    }
  }
  FabricKind kind() const override { return FabricKind::kTorus; }
  int64_t num_devices() const override { return devices_; }
  std::vector<int64_t> dims() const override { return spec_.dims; }
  std::vector<bool> wraparound() const override { return spec_.wraparound; }
  int64_t coord(DeviceId d, int axis) const override {
    return (static_cast<int64_t>(d) / strides_[static_cast<size_t>(axis)]) % spec_.dims[static_cast<size_t>(axis)];
  }

  void route(DeviceId src, DeviceId dst, std::vector<LinkId>& out) const override {
    int64_t cur = src;
    const size_t nd = spec_.dims.size();
    for (size_t a = 0; a < nd; ++a) {
      const int64_t n = spec_.dims[a];
      const int64_t c0 = (cur / strides_[a]) % n;
      const int64_t c1 = (static_cast<int64_t>(dst) / strides_[a]) % n;
      if (c0 == c1) continue;
      int64_t fwd = (c1 - c0 + n) % n;  // hops going +
      int64_t dir = +1;
      int64_t hops = 0;
      if (spec_.wraparound[a]) {
        if (fwd <= n - fwd) {
          hops = fwd;
        } else {
          dir = -1;
          hops = n - fwd;
        }
      } else {
        dir = c1 > c0 ? +1 : -1;
        hops = c1 > c0 ? c1 - c0 : c0 - c1;
      }
      int64_t c = c0;
      for (int64_t h = 0; h < hops; ++h) {
        out.push_back(link_id(cur, a, dir));
        const int64_t next = (c + dir + n) % n;
        cur += (next - c) * strides_[a];
        c = next;
      }
    }
  }

  /// Translations: the same coordinate offset for every device, none on an
  /// axis that does not wrap. Links of an axis are alike and routes depend
  /// only on coordinate differences (ties go +), so a translation moves
  /// every route onto the translated one.
  bool permute_links(std::span<const DeviceId> perm, std::vector<LinkId>& links) const override {
    links.clear();
    if (static_cast<int64_t>(perm.size()) != devices_) return false;
    const size_t nd = spec_.dims.size();
    std::vector<int64_t> delta(nd);
    for (size_t a = 0; a < nd; ++a) {
      const int64_t n = spec_.dims[a];
      delta[a] = ((coord(perm[0], static_cast<int>(a)) - coord(0, static_cast<int>(a))) % n + n) % n;
      if (delta[a] != 0 && !spec_.wraparound[a]) return false;
    }
    for (int64_t d = 0; d < devices_; ++d) {
      for (size_t a = 0; a < nd; ++a) {
        const int64_t n = spec_.dims[a];
        if ((coord(static_cast<DeviceId>(d), static_cast<int>(a)) + delta[a]) % n !=
            coord(perm[static_cast<size_t>(d)], static_cast<int>(a))) {
          return false;
        }
      }
    }
    links.resize(num_links());
    for (int64_t d = 0; d < devices_; ++d) {
      for (size_t a = 0; a < nd; ++a) {
        for (int64_t dir : {+1, -1}) {
          links[link_id(d, a, dir)] = link_id(perm[static_cast<size_t>(d)], a, dir);
        }
      }
    }
    return true;
  }

  std::string link_name(LinkId id) const override {
    const size_t nd = spec_.dims.size();
    const int64_t dev = id / static_cast<int64_t>(nd * 2);
    const size_t axis = (id / 2) % nd;
    const char* axes = "xyzwuv";
    if (spec_.dcn_slices > 1 && axis == nd - 1) return "dcn dev" + std::to_string(dev) + (id % 2 == 0 ? " +" : " -");
    return "ici dev" + std::to_string(dev) + (id % 2 == 0 ? " +" : " -") + axes[axis % 6];
  }

 private:
  LinkId link_id(int64_t dev, size_t axis, int64_t dir) const {
    return static_cast<LinkId>((dev * static_cast<int64_t>(spec_.dims.size()) + static_cast<int64_t>(axis)) * 2 +
                               (dir > 0 ? 0 : 1));
  }
  TorusSpec spec_;
  std::vector<int64_t> strides_;
  int64_t devices_ = 0;
};

}  // namespace

std::unique_ptr<Topology> make_torus(const TorusSpec& spec) {
  SHARDSIM_ASSERT(spec.dims.size() == spec.wraparound.size(), "torus dims and wraparound differ in length");
  return std::make_unique<Torus>(spec);
}

}  // namespace shardsim
