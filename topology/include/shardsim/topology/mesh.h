// The device mesh: how the plan's axes (tp, cp, pp, dp) map to device ids.
//
// `order` lists the axes innermost first; the default (tp, cp, pp, dp) puts
// tensor-parallel peers on consecutive devices, i.e. inside one NVSwitch node
// or along the torus x axis. Device d has coordinate
//   coord(d, a) = (d / stride(a)) % size(a), stride(a) = Π sizes of axes inner to a.
// With expert parallelism, dp splits into ep (inner) and dp / ep (outer):
// size(kDp) is then dp / ep and the data-parallel group is {kEp, kDp}.
// Hybrid FSDP splits it the same way into its shard group ds (inner) and
// the replicas (outer): the data-parallel group is {kEp, kDs, kDp}.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "shardsim/core/program.h"

namespace shardsim {

class Mesh {
 public:
  /// sizes and order name tp, cp, pp, dp (indexed by MeshAxis); ep · ds
  /// must divide the dp size.
  Mesh(std::array<int64_t, kNumMeshAxes> sizes, std::array<MeshAxis, kNumMeshAxes> order, int64_t ep = 1,
       int64_t ds = 1);
  int64_t devices() const { return devices_; }
  int64_t size(MeshAxis a) const { return sizes_[idx(a)]; }
  int64_t stride(MeshAxis a) const { return strides_[idx(a)]; }
  int64_t coord(int64_t device, MeshAxis a) const { return (device / stride(a)) % size(a); }
  /// Devices in the group of the axes in `axes` (bitmask) that holds `device`,
  /// in increasing id order.
  void group_members(int64_t device, uint8_t axes, std::vector<uint32_t>& out) const;
  int64_t group_size(uint8_t axes) const;
  int64_t num_groups(uint8_t axes) const { return devices_ / group_size(axes); }
  /// Dense index in [0, num_groups) of the group holding `device`.
  int64_t group_index(int64_t device, uint8_t axes) const;

 private:
  static size_t idx(MeshAxis a) { return static_cast<size_t>(a); }
  std::array<int64_t, kNumMeshAxesWithEp> sizes_{};
  std::array<int64_t, kNumMeshAxesWithEp> strides_{};
  std::array<MeshAxis, kNumMeshAxesWithEp> order_{};
  int64_t devices_ = 1;
};

}  // namespace shardsim
