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
  /// `x` moved by the translation that takes `from` to `to`: on every axis
  /// the same coordinate difference, wrapping around.
  int64_t translate(int64_t x, int64_t from, int64_t to) const;

 private:
  static size_t idx(MeshAxis a) { return static_cast<size_t>(a); }
  std::array<int64_t, kNumMeshAxesWithEp> sizes_{};
  std::array<int64_t, kNumMeshAxesWithEp> strides_{};
  std::array<MeshAxis, kNumMeshAxesWithEp> order_{};
  int64_t devices_ = 1;
};

/// A group of translations of a mesh: along each axis a, shifts by the
/// multiples of step[a] (a divisor of size(a); step[a] == size(a) allows
/// none). The engine's symmetry reduction runs one device per orbit, the
/// canonical one, whose coordinates are each below their axis's step; each
/// stands for the |group| devices of its orbit.
struct MeshSymmetry {
  std::array<int64_t, kNumMeshAxesWithEp> step{};  ///< 0 (unset) counts as size(a)
  /// The identity alone: every step unset or equal to its axis's size.
  static MeshSymmetry none(const Mesh& mesh);
  bool trivial(const Mesh& mesh) const { return order(mesh) == 1; }
  /// Devices per orbit: the product of size(a) / step[a].
  int64_t order(const Mesh& mesh) const;
  int64_t step_of(const Mesh& mesh, MeshAxis a) const {
    const int64_t s = step[static_cast<size_t>(a)];
    return s > 0 ? s : mesh.size(a);
  }
  /// The canonical device of d's orbit: each coordinate reduced modulo its step.
  int64_t canonical(const Mesh& mesh, int64_t d) const;
  bool is_canonical(const Mesh& mesh, int64_t d) const { return canonical(mesh, d) == d; }
  /// Canonical devices in a group of the axes `axes`: the product of their steps.
  int64_t canonical_members(const Mesh& mesh, uint8_t axes) const;
};

}  // namespace shardsim
