#include <gtest/gtest.h>

#include <tuple>
#include <utility>
#include <vector>

#include "shardsim/topology/mesh.h"
#include "shardsim/topology/topology.h"
#include "test_helpers.h"

namespace shardsim {
namespace {

TorusSpec torus(std::vector<int64_t> dims, std::vector<bool> wrap) {
  TorusSpec t;
  t.dims = std::move(dims);
  t.wraparound = std::move(wrap);
  t.link_bandwidth = gbyte_per_s(45);
  t.hop_latency = microseconds(1);
  return t;
}

TEST(Torus, DimensionOrderRouteTakesTheShortWayAround) {
  auto t = make_torus(torus({8, 4}, {true, true}));
  std::vector<LinkId> r;
  t->route(0, 7, r);  // x: 0 -> 7 is one hop going - with wraparound
  EXPECT_EQ(r.size(), 1u);
  r.clear();
  t->route(0, 3 + 8 * 2, r);  // 3 hops in x, 2 in y
  EXPECT_EQ(r.size(), 5u);
  r.clear();
  t->route(5, 5, r);
  EXPECT_TRUE(r.empty());
}

TEST(Torus, WithoutWraparoundRoutesStayOnTheLine) {
  auto t = make_torus(torus({8}, {false}));
  std::vector<LinkId> r;
  t->route(0, 7, r);
  EXPECT_EQ(r.size(), 7u);
}

TEST(Torus, EveryLinkIsDistinctAlongARoute) {
  auto t = make_torus(torus({4, 4, 4}, {true, true, true}));
  for (DeviceId a = 0; a < 64; a += 7) {
    for (DeviceId b = 0; b < 64; b += 5) {
      std::vector<LinkId> r;
      t->route(a, b, r);
      std::vector<LinkId> sorted = r;
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end());
      int64_t hops = 0;
      for (int ax = 0; ax < 3; ++ax) {
        const int64_t d = std::abs(t->coord(a, ax) - t->coord(b, ax));
        hops += std::min(d, 4 - d);
      }
      EXPECT_EQ(static_cast<int64_t>(r.size()), hops);
    }
  }
}

FatTreeSpec fat_tree() {
  return testing::fat_tree_450_50();
}

TEST(FatTree, RoutesByLevel) {
  auto t = make_fat_tree(fat_tree(), 64);  // 8 nodes; rail leaves of 4 nodes
  std::vector<LinkId> r;
  t->route(0, 5, r);  // same node: nvlink up + down
  EXPECT_EQ(r.size(), 2u);
  EXPECT_EQ(t->link(r[0]).kind, LinkKind::kNvlink);
  r.clear();
  t->route(0, 8, r);  // same rail, same leaf: nic up + down
  EXPECT_EQ(r.size(), 2u);
  EXPECT_EQ(t->link(r[0]).kind, LinkKind::kNic);
  r.clear();
  t->route(0, 32, r);  // same rail, other unit: through the spine
  EXPECT_EQ(r.size(), 4u);
  r.clear();
  t->route(0, 9, r);  // other rail: through the spine
  EXPECT_EQ(r.size(), 4u);
}

TEST(FatTree, OversubscriptionShrinksLeafUplinks) {
  FatTreeSpec f = fat_tree();
  f.oversubscription = 4;
  auto t = make_fat_tree(f, 64);
  std::vector<LinkId> r;
  t->route(0, 32, r);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_DOUBLE_EQ(t->link(r[1]).bandwidth.value(), 4 * 50e9 / 4);
}

// The rail shortcut's routes (Topology::rail_route) with 4 tensor-parallel
// ranks in 8-GPU nodes: a flow from a rank-0 device inside a node stands
// for its images, local rank r shifted by c inside its group of 4, each on
// its own NVLinks (a ring exchange to rank 1 wraps: 3 -> 0); between nodes
// the flow keeps its rail's links, and with pods of whole units a pod link
// carries all 4.
TEST(FatTree, RailRouteLaysEveryImageInsideANode) {
  FatTreeSpec f = fat_tree();
  f.tiers = 3;
  f.leaves_per_pod = 8;
  auto t = make_fat_tree(f, 512);
  ASSERT_EQ(t->rail_group(), 8);
  std::vector<LinkId> links;
  std::vector<double> w;
  for (const auto& [src, dst, images] : {std::tuple<DeviceId, DeviceId, std::vector<std::pair<DeviceId, DeviceId>>>{
                                             0, 4, {{0, 4}, {1, 5}, {2, 6}, {3, 7}}},
                                         {0, 1, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}},
                                         {12, 15, {{12, 15}, {13, 12}, {14, 13}, {15, 14}}}}) {
    links.clear();
    w.clear();
    t->rail_route(src, dst, 4, links, w);
    std::vector<LinkId> expected;
    for (const auto& [a, b] : images) t->route(a, b, expected);
    EXPECT_EQ(links, expected);
    EXPECT_EQ(w, std::vector<double>(expected.size(), 1.0));
  }
  links.clear();
  w.clear();
  t->rail_route(4, 260, 4, links, w);  // rail 4, other pod: nic, leaf, pod up, pod down, leaf, nic
  ASSERT_EQ(links.size(), 6u);
  EXPECT_EQ(w, (std::vector<double>{1, 1, 4, 4, 1, 1}));
}

TEST(Mesh, TensorParallelIsInnermostByDefault) {
  const Mesh m({8, 1, 1, 4}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});
  std::vector<uint32_t> g;
  m.group_members(10, axis_bit(MeshAxis::kTp), g);
  EXPECT_EQ(g, (std::vector<uint32_t>{8, 9, 10, 11, 12, 13, 14, 15}));
  g.clear();
  m.group_members(10, axis_bit(MeshAxis::kDp), g);
  EXPECT_EQ(g, (std::vector<uint32_t>{2, 10, 18, 26}));
  EXPECT_EQ(m.group_index(10, axis_bit(MeshAxis::kTp)), 1);
  EXPECT_EQ(m.group_index(10, axis_bit(MeshAxis::kDp)), 2);
  EXPECT_EQ(m.num_groups(axis_bit(MeshAxis::kDp)), 8);
}

TEST(Mesh, MeshOrderMovesAxes) {
  const Mesh m({2, 1, 1, 4}, {MeshAxis::kDp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kTp});
  std::vector<uint32_t> g;
  m.group_members(0, axis_bit(MeshAxis::kTp), g);
  EXPECT_EQ(g, (std::vector<uint32_t>{0, 4}));
}

TEST(Mesh, GroupIndicesAreDenseAndConsistent) {
  const Mesh m({2, 1, 1, 6}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});
  for (uint8_t axes : {axis_bit(MeshAxis::kTp), axis_bit(MeshAxis::kDp)}) {
    for (int64_t d = 0; d < 12; ++d) {
      std::vector<uint32_t> g;
      m.group_members(d, axes, g);
      for (uint32_t x : g) EXPECT_EQ(m.group_index(x, axes), m.group_index(d, axes));
      EXPECT_LT(m.group_index(d, axes), m.num_groups(axes));
    }
  }
}

}  // namespace
}  // namespace shardsim
