#include "shardsim/topology/mesh.h"

#include <algorithm>

namespace shardsim {

Mesh::Mesh(std::array<int64_t, kNumMeshAxes> sizes, std::array<MeshAxis, kNumMeshAxes> order, int64_t ep, int64_t ds) {
  for (int a = 0; a < kNumMeshAxes; ++a) sizes_[static_cast<size_t>(a)] = sizes[static_cast<size_t>(a)];
  sizes_[idx(MeshAxis::kEp)] = ep;
  sizes_[idx(MeshAxis::kDs)] = ds;
  sizes_[idx(MeshAxis::kDp)] /= ep * ds;
  size_t i = 0;
  for (MeshAxis a : order) {
    if (a == MeshAxis::kDp) {
      order_[i++] = MeshAxis::kEp;
      order_[i++] = MeshAxis::kDs;
    }
    order_[i++] = a;
  }
  int64_t stride = 1;
  for (MeshAxis a : order_) {
    strides_[idx(a)] = stride;
    stride *= sizes_[idx(a)];
  }
  devices_ = stride;
}

int64_t Mesh::group_size(uint8_t axes) const {
  int64_t n = 1;
  for (int a = 0; a < kNumMeshAxesWithEp; ++a) {
    if (axes & (1u << a)) n *= sizes_[static_cast<size_t>(a)];
  }
  return n;
}

void Mesh::group_members(int64_t device, uint8_t axes, std::vector<uint32_t>& out) const {
  // Base: the device with its coordinates on the group's axes set to zero.
  int64_t base = device;
  for (int a = 0; a < kNumMeshAxesWithEp; ++a) {
    if (axes & (1u << a)) base -= coord(device, static_cast<MeshAxis>(a)) * strides_[static_cast<size_t>(a)];
  }
  const size_t first = out.size();
  out.push_back(static_cast<uint32_t>(base));
  for (int a = 0; a < kNumMeshAxesWithEp; ++a) {
    if (!(axes & (1u << a))) continue;
    const size_t n = out.size() - first;
    for (int64_t c = 1; c < sizes_[static_cast<size_t>(a)]; ++c) {
      for (size_t i = 0; i < n; ++i) {
        out.push_back(static_cast<uint32_t>(out[first + i] + c * strides_[static_cast<size_t>(a)]));
      }
    }
  }
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

int64_t Mesh::group_index(int64_t device, uint8_t axes) const {
  // Mixed-radix number of the coordinates on the axes outside the group.
  int64_t index = 0;
  int64_t radix = 1;
  for (MeshAxis a : order_) {
    if (axes & axis_bit(a)) continue;
    index += coord(device, a) * radix;
    radix *= sizes_[idx(a)];
  }
  return index;
}

int64_t Mesh::translate(int64_t x, int64_t from, int64_t to) const {
  int64_t out = x;
  for (size_t a = 0; a < kNumMeshAxesWithEp; ++a) {
    const int64_t n = sizes_[a];
    if (n <= 1) continue;
    const auto axis = static_cast<MeshAxis>(a);
    const int64_t delta = coord(to, axis) - coord(from, axis);
    const int64_t c = coord(x, axis);
    out += (((c + delta) % n + n) % n - c) * strides_[a];
  }
  return out;
}

MeshSymmetry MeshSymmetry::none(const Mesh& mesh) {
  MeshSymmetry s;
  for (size_t a = 0; a < kNumMeshAxesWithEp; ++a) s.step[a] = mesh.size(static_cast<MeshAxis>(a));
  return s;
}

int64_t MeshSymmetry::order(const Mesh& mesh) const {
  int64_t n = 1;
  for (size_t a = 0; a < kNumMeshAxesWithEp; ++a)
    n *= mesh.size(static_cast<MeshAxis>(a)) / step_of(mesh, static_cast<MeshAxis>(a));
  return n;
}

int64_t MeshSymmetry::canonical(const Mesh& mesh, int64_t d) const {
  int64_t out = d;
  for (size_t a = 0; a < kNumMeshAxesWithEp; ++a) {
    const auto axis = static_cast<MeshAxis>(a);
    const int64_t h = step_of(mesh, axis);
    const int64_t c = mesh.coord(d, axis);
    out -= (c - c % h) * mesh.stride(axis);
  }
  return out;
}

int64_t MeshSymmetry::canonical_members(const Mesh& mesh, uint8_t axes) const {
  int64_t n = 1;
  for (size_t a = 0; a < kNumMeshAxesWithEp; ++a) {
    if (axes & (1u << a)) n *= step_of(mesh, static_cast<MeshAxis>(a));
  }
  return n;
}

}  // namespace shardsim
