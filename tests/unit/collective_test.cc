// Property tests of collectives alone on the fabric: closed-form α-β times,
// bandwidth monotonicity, contention, and conservation of bytes.
#include <gtest/gtest.h>

#include "shardsim/sim/collective.h"
#include "shardsim/sim/engine.h"
#include "shardsim/topology/mesh.h"
#include "shardsim/topology/topology.h"

namespace shardsim {
namespace {

constexpr uint8_t kTp = axis_bit(MeshAxis::kTp);
constexpr uint8_t kDp = axis_bit(MeshAxis::kDp);

Mesh mesh(int64_t tp, int64_t dp) {
  return Mesh({tp, 1, 1, dp}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});
}

FatTreeSpec gpu_fabric(double nvlink_GBps = 450, double nic_GBps = 50) {
  FatTreeSpec f;
  f.nvlink_bandwidth = gbyte_per_s(nvlink_GBps);
  f.nic_bandwidth = gbyte_per_s(nic_GBps);
  f.nvlink_latency = microseconds(0.95);
  f.nic_latency = microseconds(2);
  f.switch_latency = microseconds(0.5);
  f.nics_per_leaf = 4;
  return f;
}

TorusSpec torus(std::vector<int64_t> dims, double link_GBps = 45) {
  TorusSpec t;
  t.dims = dims;
  t.wraparound.assign(dims.size(), true);
  t.link_bandwidth = gbyte_per_s(link_GBps);
  t.hop_latency = microseconds(1);
  return t;
}

double seconds(CollectiveKind k, int64_t bytes, const Mesh& m, uint8_t axes, const Topology& t,
               SimTime base = SimTime(), bool all = false, Bytes chunk = Bytes(0)) {
  return simulate_collective(k, Bytes(bytes), m, axes, t, ChipSpec{},
                             CollectiveCosts{base, chunk, NcclSpec{}, CustomAllReduce{}}, all)
      .step_time.seconds();
}

// A lone ring all-gather of S bytes on p devices: (p-1)/p·S/B + (p-1)·α.
TEST(CollectiveClosedForm, RingAllGatherInsideANode) {
  const auto topo = make_fat_tree(gpu_fabric(), 8);
  const double S = 256e6, B = 450e9, alpha = 2 * 0.95e-6, p = 8;
  const double expect = (p - 1) / p * S / B + (p - 1) * alpha;
  EXPECT_NEAR(seconds(CollectiveKind::kAllGather, 256'000'000, mesh(8, 1), kTp, *topo), expect, expect * 0.01);
}

// A pipelined ring fills in r-1 steps of one chunk: (r-1)·min(chunk, S/r)/B
// more than the α-β time.
TEST(CollectiveClosedForm, RingPipelineFillAddsOneChunkPerStep) {
  const auto topo = make_fat_tree(gpu_fabric(), 8);
  const double S = 256e6, B = 450e9, alpha = 2 * 0.95e-6, p = 8, chunk = 4 << 20;
  const double expect = (p - 1) / p * S / B + (p - 1) * (alpha + chunk / B);
  EXPECT_NEAR(
      seconds(CollectiveKind::kAllGather, 256'000'000, mesh(8, 1), kTp, *topo, SimTime(), false, Bytes(4 << 20)),
      expect, expect * 0.01);
  // A small message fills with S/p per step instead.
  const double small = 1e6;
  const double expect_small = (p - 1) / p * small / B + (p - 1) * (alpha + small / p / B);
  EXPECT_NEAR(seconds(CollectiveKind::kAllGather, 1'000'000, mesh(8, 1), kTp, *topo, SimTime(), false, Bytes(4 << 20)),
              expect_small, expect_small * 0.01);
}

TEST(CollectiveClosedForm, RingAllReduceAcrossNodesWithBaseLatency) {
  const auto topo = make_fat_tree(gpu_fabric(), 64);
  const double S = 1e9, B = 50e9, alpha = 2 * 2e-6, p = 8, base = 10e-6;
  const double expect = 2 * (p - 1) / p * S / B + 2 * (p - 1) * alpha + base;
  // dp group of device 0: one GPU per node over 8 nodes (same rail leaf).
  EXPECT_NEAR(seconds(CollectiveKind::kAllReduce, 1'000'000'000, mesh(8, 8), kDp, *topo, microseconds(10)), expect,
              expect * 0.01);
}

TEST(CollectiveClosedForm, BidirectionalTorusRingHalvesTheBandwidthTerm) {
  const auto topo = make_torus(torus({16}));
  const double S = 1e9, B = 45e9, p = 16, alpha = 1e-6;
  const double expect = (p - 1) / p * S / (2 * B) + p / 2 * alpha;  // floor(p/2) hops each way
  EXPECT_NEAR(seconds(CollectiveKind::kAllGather, 1'000'000'000, mesh(1, 16), kDp, *topo), expect, expect * 0.01);
}

// Two axes at once: each half of S visits the axes in its own order, so at
// every step both axes carry a half. Reduce-scatter: both halves on their
// first axis (S/2 each), then on the other (S/8 each); all-gather back.
TEST(CollectiveClosedForm, TwoAxisTorusAllReduceUsesBothAxesAtOnce) {
  const auto topo = make_torus(torus({4, 4}));
  const double S = 64e6, B = 45e9, alpha = 1e-6;
  const double first = 3.0 / 4 * (S / 2) / (2 * B) + 2 * alpha;
  const double second = 3.0 / 4 * (S / 8) / (2 * B) + 2 * alpha;
  const double expect = 2 * (first + second);
  EXPECT_NEAR(seconds(CollectiveKind::kAllReduce, 64'000'000, mesh(1, 16), kDp, *topo), expect, expect * 0.01);
}

// The scaling book's all-gather over N_axes torus axes of V bytes with
// bidirectional ICI bandwidth W = 2·B per axis: T = max(T_min·Σ|X_i|/2,
// V / (W·N_axes)) ("How to Scale Your Model", sharded matmuls). Bandwidth
// bound, 16x16 and 8x8x8 wrapped tori come within (n-1)/n·(1 + 1/n + ...)
// of it, and the all-reduce costs twice the all-gather.
TEST(CollectiveClosedForm, ScalingBookAllGatherOverSeveralAxes) {
  const double V = 4e9, B = 45e9, W = 2 * B;
  const auto one = make_torus(torus({16}));
  const auto two = make_torus(torus({16, 16}));
  const auto three = make_torus(torus({8, 8, 8}));
  const double t1 = seconds(CollectiveKind::kAllGather, 4'000'000'000, mesh(1, 16), kDp, *one);
  const double t2 = seconds(CollectiveKind::kAllGather, 4'000'000'000, mesh(1, 256), kDp, *two);
  const double t3 = seconds(CollectiveKind::kAllGather, 4'000'000'000, mesh(1, 512), kDp, *three);
  EXPECT_NEAR(t1, V / W, 0.07 * V / W);  // (15/16) of V/W
  EXPECT_NEAR(t2, V / (W * 2), 0.02 * V / (W * 2));
  EXPECT_NEAR(t3, V / (W * 3), 0.03 * V / (W * 3));
  EXPECT_NEAR(seconds(CollectiveKind::kAllReduce, 4'000'000'000, mesh(1, 256), kDp, *two), 2 * t2, 0.01 * t2);
  EXPECT_NEAR(seconds(CollectiveKind::kReduceScatter, 4'000'000'000, mesh(1, 256), kDp, *two), t2, 0.01 * t2);
  // Latency bound: a tiny gather pays the longest path's hops,
  // T_min·Σ|X_i|/2 with T_min = 1 us: 8 + 8 hops.
  EXPECT_NEAR(seconds(CollectiveKind::kAllGather, 1024, mesh(1, 256), kDp, *two), 16e-6, 0.1e-6);
}

// Multislice: slices of a 4-chip ring joined by the DCN. A data-parallel
// all-reduce over 2 slices of S bytes runs x on S (bidirectional ICI ring),
// then the DCN pair on S/4 at the chip's DCN share D each way (one link),
// and back: 2·(x + ½·(S/4)/D + α_dcn).
TEST(CollectiveClosedForm, MultisliceAllReduceCrossesTheDcnOnOneShard) {
  TorusSpec spec = torus({4});
  spec.dcn_slices = 2;
  spec.dcn_bandwidth = gbyte_per_s(6.25);
  spec.dcn_latency = microseconds(10);
  const auto topo = make_torus(spec);
  ASSERT_EQ(topo->num_devices(), 8);
  const double S = 64e6, B = 45e9, D = 6.25e9, alpha = 1e-6;
  const double x = 3.0 / 4 * S / (2 * B) + 2 * alpha;
  const double dcn = 1.0 / 2 * (S / 4) / D + 10e-6;
  EXPECT_NEAR(seconds(CollectiveKind::kAllReduce, 64'000'000, mesh(1, 8), kDp, *topo), 2 * (x + dcn),
              2 * (x + dcn) * 0.01);
  // Four slices: a DCN ring whose two directions share the NIC, so the
  // bandwidth term is the unidirectional ring's, (3/4)·(S/4)/D.
  spec.dcn_slices = 4;
  const auto four = make_torus(spec);
  const double dcn4 = 3.0 / 4 * (S / 4) / D + 2 * 10e-6;
  EXPECT_NEAR(seconds(CollectiveKind::kAllReduce, 64'000'000, mesh(1, 16), kDp, *four), 2 * (x + dcn4),
              2 * (x + dcn4) * 0.01);
}

TEST(CollectiveClosedForm, HierarchicalAllGatherUsesTheNetworkForOneShardPerNode) {
  const auto topo = make_fat_tree(gpu_fabric(), 16);
  const double S = 512e6;
  // Inter-node rings of 2 on S/8, then NVLink rings of 8 on S; the latency
  // of one ring over all 16 ranks: 1 step crosses the network (4 us), 14
  // stay on NVLink (1.9 us), as NCCL's tuning model counts them.
  const double expect = 1.0 / 2 * (S / 8) / 50e9 + 7.0 / 8 * S / 450e9 + 1 * 4e-6 + 14 * 2 * 0.95e-6;
  EXPECT_NEAR(seconds(CollectiveKind::kAllGather, 512'000'000, mesh(1, 16), kDp, *topo), expect, expect * 0.01);
}

TEST(CollectiveProperties, DoublingBandwidthNeverSlowsALoneCollective) {
  for (auto kind : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter, CollectiveKind::kAllReduce,
                    CollectiveKind::kAllToAll, CollectiveKind::kBroadcast}) {
    for (int64_t bytes : {int64_t{4096}, int64_t{1} << 20, int64_t{1} << 30}) {
      double last = 1e30;
      for (double nic : {12.5, 25.0, 50.0, 100.0, 200.0}) {
        const auto topo = make_fat_tree(gpu_fabric(450, nic), 32);
        const double t = seconds(kind, bytes, mesh(1, 32), kDp, *topo);
        EXPECT_LE(t, last * (1 + 1e-9)) << to_string(kind) << " " << bytes << " at " << nic;
        last = t;
      }
    }
  }
}

TEST(CollectiveProperties, TwoRingsThroughOneLinkEachTakeAboutTwiceAsLong) {
  // Two tp groups of 4 on a 1D torus of 8 without wraparound: their rings'
  // closing flows cross the same links. Compare with one group alone.
  TorusSpec spec = torus({8});
  spec.wraparound = {false};
  const auto topo = make_torus(spec);
  const double alone = seconds(CollectiveKind::kAllGather, 1'000'000'000, mesh(8, 1), kTp, *topo);
  // Two overlapping rings: groups {0,2,4,6} and {1,3,5,7} interleaved.
  const Mesh interleaved = mesh(2, 4);
  const double one = seconds(CollectiveKind::kAllGather, 1'000'000'000, interleaved, kDp, *topo);
  const double both = seconds(CollectiveKind::kAllGather, 1'000'000'000, interleaved, kDp, *topo, SimTime(), true);
  EXPECT_GT(alone, 0);
  EXPECT_NEAR(both / one, 2.0, 0.05);
}

TEST(CollectiveProperties, OversubscribedAllToAllSlowsDown) {
  FatTreeSpec full = gpu_fabric();
  FatTreeSpec over = gpu_fabric();
  over.oversubscription = 4;
  const auto a = make_fat_tree(full, 64);
  const auto b = make_fat_tree(over, 64);
  const double ta = seconds(CollectiveKind::kAllToAll, 1 << 30, mesh(1, 64), kDp, *a);
  const double tb = seconds(CollectiveKind::kAllToAll, 1 << 30, mesh(1, 64), kDp, *b);
  EXPECT_GT(tb, 1.5 * ta);
}

TEST(CollectiveProperties, BytesAreConservedOverLinks) {
  const auto topo = make_torus(torus({4, 4}));
  const Mesh m = mesh(1, 16);
  const EngineResult r = simulate_collective(CollectiveKind::kAllGather, Bytes(16'000'000), m, kDp, *topo, ChipSpec{},
                                             CollectiveCosts{}, false);
  double link_sum = 0;
  for (double b : r.link_bytes) link_sum += b;
  EXPECT_NEAR(link_sum, r.flow_byte_hops, 1e-6 * link_sum);
  // Every device sends (p-1)/p·S in an all-gather: here over one hop each.
  EXPECT_NEAR(link_sum, 16 * 15.0 / 16 * 16e6, 1.0);
}

TEST(CollectivePlan, AlgorithmFollowsTheGroupShape) {
  const auto topo = make_fat_tree(gpu_fabric(), 32);
  std::vector<DeviceId> node{0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<DeviceId> rail{0, 8, 16, 24};
  std::vector<DeviceId> two_nodes{0, 1, 8, 9};
  EXPECT_EQ(plan_collective(CollectiveKind::kAllReduce, Bytes(1), node, *topo, CollectiveCosts{}).algorithm,
            "ring (nvlink)");
  EXPECT_EQ(plan_collective(CollectiveKind::kAllReduce, Bytes(1), rail, *topo, CollectiveCosts{}).algorithm,
            "ring (network)");
  EXPECT_EQ(plan_collective(CollectiveKind::kAllReduce, Bytes(1), two_nodes, *topo, CollectiveCosts{}).phases.size(),
            4u);
}

// nccl-tests' sweep: -b 1K -e 1M -f 2 gives 1K, 2K, ..., 1M; a factor that
// does not land on max stops below it.
TEST(CollectiveSweep, SizesGrowByTheFactorFromMinToMax) {
  const std::vector<int64_t> doubling = sweep_sizes(1024, 1 << 20, 2);
  ASSERT_EQ(doubling.size(), 11u);
  for (size_t i = 0; i < doubling.size(); ++i) EXPECT_EQ(doubling[i], int64_t{1024} << i);
  const std::vector<int64_t> by4 = sweep_sizes(1000, 100000, 4);
  EXPECT_EQ(by4, (std::vector<int64_t>{1000, 4000, 16000, 64000}));
  EXPECT_EQ(sweep_sizes(7, 7, 2), std::vector<int64_t>{7});
  // A factor close to 1 never repeats a size.
  const std::vector<int64_t> fine = sweep_sizes(1, 64, 1.01);
  for (size_t i = 1; i < fine.size(); ++i) EXPECT_GT(fine[i], fine[i - 1]);
  EXPECT_LE(fine.back(), 64);
  EXPECT_GE(fine.back(), 63);  // the last size within a factor of max
}

// busbw = algbw · 2(n-1)/n (all-reduce), (n-1)/n (all-gather,
// reduce-scatter, all-to-all), 1 (broadcast): nccl-tests doc/PERFORMANCE.md.
TEST(CollectiveSweep, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kBroadcast, 16), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::kAllReduce, 1), 0.0);
}

}  // namespace
}  // namespace shardsim
