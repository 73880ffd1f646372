#include <gtest/gtest.h>

#include <string>
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

/// The device permutation of a shift by h along axis a of `mesh`.
std::vector<DeviceId> shifted(const Mesh& mesh, MeshAxis a, int64_t h) {
  std::vector<DeviceId> perm(static_cast<size_t>(mesh.devices()));
  for (int64_t d = 0; d < mesh.devices(); ++d) {
    const int64_t to = d + (((mesh.coord(d, a) + h) % mesh.size(a)) - mesh.coord(d, a)) * mesh.stride(a);
    perm[static_cast<size_t>(d)] = static_cast<DeviceId>(to);
  }
  return perm;
}

/// Topology::permute_links's contract, over every pair of devices: the
/// links of route(perm s, perm d) that can bind are the images of route(s,
/// d)'s, in order, with the same bandwidths, and the map is one to one.
void expect_routes_map(const Topology& t, const std::vector<DeviceId>& perm, const std::vector<LinkId>& img) {
  ASSERT_EQ(img.size(), t.num_links());
  std::vector<uint8_t> hit(t.num_links(), 0);
  for (size_t l = 0; l < img.size(); ++l) {
    if (img[l] == Topology::kUnboundLink) continue;
    EXPECT_FALSE(hit[img[l]]) << "two links onto " << img[l];
    hit[img[l]] = 1;
    EXPECT_EQ(t.link(static_cast<LinkId>(l)).bandwidth.value(), t.link(img[l]).bandwidth.value());
  }
  std::vector<LinkId> a, b, mapped, bound;
  for (DeviceId s = 0; s < t.num_devices(); ++s) {
    for (DeviceId d = 0; d < t.num_devices(); ++d) {
      a.clear();
      b.clear();
      t.route(s, d, a);
      t.route(perm[s], perm[d], b);
      mapped.clear();
      bound.clear();
      for (LinkId l : a) {
        if (img[l] != Topology::kUnboundLink) mapped.push_back(img[l]);
      }
      for (LinkId l : b) {
        if (img[l] != Topology::kUnboundLink) bound.push_back(l);
      }
      ASSERT_EQ(mapped, bound) << s << " -> " << d;
    }
  }
}

// Which translations a fat tree accepts: with oversubscribed leaves (2
// nodes of 8 GPUs per rail leaf, 2:1) local-rank permutations alike in
// every node and shifts by whole leaves' worth of nodes, not by one node;
// with full bisection (switch links can never bind, and are left out) any
// shift that keeps nodes whole; never one that splits a node. Every
// accepted one maps routes onto routes.
TEST(FatTree, PermuteLinksAcceptsExactlyTheTranslationsThatKeepItsStructure) {
  FatTreeSpec over = fat_tree();
  over.nics_per_leaf = 2;
  over.oversubscription = 2;
  FatTreeSpec full = over;
  full.oversubscription = 1;
  FatTreeSpec pods = full;
  pods.oversubscription = 2;
  pods.tiers = 3;
  pods.leaves_per_pod = 8;  // pods of one unit: 2 nodes
  const Mesh mesh({4, 2, 1, 8}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});   // a node: tp x cp
  const Mesh half({4, 1, 1, 16}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});  // half a node
  struct Case {
    const FatTreeSpec* spec;
    const Mesh* m;
    MeshAxis axis;
    int64_t h;
    bool accepted;
    bool switches_left_out;
  };
  const std::vector<Case> cases = {
      {&over, &mesh, MeshAxis::kTp, 1, true, false},  {&over, &mesh, MeshAxis::kCp, 1, true, false},
      {&over, &mesh, MeshAxis::kDp, 1, false, false}, {&over, &mesh, MeshAxis::kDp, 2, true, false},
      {&full, &mesh, MeshAxis::kDp, 1, true, true},   {&full, &half, MeshAxis::kDp, 1, false, true},
      {&full, &half, MeshAxis::kDp, 2, true, true},   {&pods, &mesh, MeshAxis::kDp, 2, true, false},
      {&pods, &mesh, MeshAxis::kTp, 1, true, false},  {&over, &half, MeshAxis::kTp, 2, true, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(static_cast<int>(c.axis)) + " by " + std::to_string(c.h));
    auto t = make_fat_tree(*c.spec, 64);
    const std::vector<DeviceId> perm = shifted(*c.m, c.axis, c.h);
    std::vector<LinkId> img;
    ASSERT_EQ(t->permute_links(perm, img), c.accepted);
    if (!c.accepted) continue;
    expect_routes_map(*t, perm, img);
    EXPECT_EQ(img.back() == Topology::kUnboundLink, c.switches_left_out);
  }
}

// Tori accept translations along the axes that wrap, and nothing else.
TEST(Torus, PermuteLinksAcceptsTranslationsAlongWrappedAxes) {
  auto t = make_torus(torus({4, 4, 2}, {true, true, false}));
  std::vector<DeviceId> perm(32);
  std::vector<LinkId> img;
  for (const auto& [dx, dy, dz, accepted] :
       {std::tuple{1, 0, 0, true}, std::tuple{0, 3, 0, true}, std::tuple{2, 1, 0, true}, std::tuple{0, 0, 1, false}}) {
    for (DeviceId d = 0; d < 32; ++d) {
      const int64_t x = (d % 4 + dx) % 4, y = (d / 4 % 4 + dy) % 4, z = (d / 16 + dz) % 2;
      perm[d] = static_cast<DeviceId>(x + 4 * y + 16 * z);
    }
    ASSERT_EQ(t->permute_links(perm, img), accepted) << dx << dy << dz;
    if (accepted) expect_routes_map(*t, perm, img);
  }
  // A rotation inside blocks of two along x is no translation of the torus.
  for (DeviceId d = 0; d < 32; ++d) perm[d] = d % 2 == 0 ? d + 1 : d - 1;
  EXPECT_FALSE(t->permute_links(perm, img));
}

TEST(Mesh, TranslationsAndCanonicalDevices) {
  const Mesh m({4, 2, 2, 4}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});
  // translate: the offset that takes 1 (tp 1) to 6 (tp 2, cp 1), applied to 15 (tp 3, cp 1, pp 1).
  // The offset from device 1 (tp 1) to 6 (tp 2, cp 1), applied to 15 (tp
  // 3, cp 1, pp 1), wraps both: tp 0, cp 0, pp 1.
  EXPECT_EQ(m.translate(15, 1, 6), 8);
  MeshSymmetry sym = MeshSymmetry::none(m);
  EXPECT_TRUE(sym.trivial(m));
  EXPECT_EQ(sym.order(m), 1);
  sym.step[static_cast<size_t>(MeshAxis::kTp)] = 1;
  sym.step[static_cast<size_t>(MeshAxis::kDp)] = 2;
  EXPECT_EQ(sym.order(m), 4 * 2);
  // Device 4·2·2·3 + 4·2·1 + 3 = dp 3, pp 1, tp 3 -> dp 1, pp 1, tp 0.
  EXPECT_EQ(sym.canonical(m, 48 + 8 + 3), 16 + 8);
  EXPECT_TRUE(sym.is_canonical(m, 16 + 8));
  EXPECT_EQ(sym.canonical_members(m, axis_bit(MeshAxis::kTp) | axis_bit(MeshAxis::kCp)), 1 * 2);
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

// Megatron's frameworks number their ranks tensor, context, data (expert
// inside it), pipeline outermost (megatron/core/parallel_state.py, order
// "tp-cp-ep-dp-pp"): with tp 1 and ep 8 on 8-GPU nodes an expert group is
// one node and a pipeline's stages lie a dp·tp apart. The generic default
// keeps data parallelism outermost.
TEST(Mesh, MegatronPlacesPipelineOutermostAndExpertsInsideANode) {
  const std::string json = R"({"model": "mixtral-8x7b", "cluster": {"chip": "h100-sxm", "devices": 64,
      "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8}},
      "plan": {"framework": "megatron-core", "dp": 16, "pp": 4, "ep": 8, "global_batch": 256, "seq_len": 4096}})";
  const Scenario s = testing::scenario(json);
  const Mesh m = build_mesh(s.plan);
  std::vector<uint32_t> ep, pp;
  m.group_members(0, axis_bit(MeshAxis::kEp), ep);
  m.group_members(0, axis_bit(MeshAxis::kPp), pp);
  EXPECT_EQ(ep, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(pp, (std::vector<uint32_t>{0, 16, 32, 48}));
  for (const char* f : {"megatron-2021", "deepspeed"}) {
    const Scenario dense = testing::scenario(json, {{"model", "llama3-8b"}, {"plan.framework", f}, {"plan.ep", "1"}});
    EXPECT_EQ(build_mesh(dense.plan).stride(MeshAxis::kPp), 16) << f;
  }
  const Mesh generic = build_mesh(testing::scenario(json, {{"plan.framework", "generic"}}).plan);
  EXPECT_EQ(generic.stride(MeshAxis::kPp), 1);
  // A plan's own order still wins.
  const Mesh own = build_mesh(testing::scenario(json, {{"plan.mesh_order", R"(["tp", "cp", "pp", "dp"])"}}).plan);
  EXPECT_EQ(own.stride(MeshAxis::kPp), 1);
}

}  // namespace
}  // namespace shardsim
