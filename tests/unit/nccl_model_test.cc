// NCCL's cost model: its table against NCCL's formulas worked by hand, its
// choice, the realized time as a closed form, the lone collective on the
// fabric equal to that time, and the nccl-tests curves held to their record.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "shardsim/sim/collective.h"
#include "shardsim/sim/engine.h"
#include "shardsim/sim/nccl_model.h"
#include "shardsim/topology/mesh.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {
namespace {

NcclSpec spec(int cc, int links) {
  NcclSpec s;
  s.compute_capability = cc;
  s.nvlink_links = links;
  return s;
}
const NcclSpec kH100 = spec(90, 18);
const NcclSpec kA100 = spec(80, 12);
const NcclSpec kB200 = spec(100, 18);

/// H100 nodes of 8 on NVSwitch (450 GB/s NVLink at `efficiency`), 50 GB/s NICs.
std::unique_ptr<Topology> h100_nodes(double efficiency, int64_t devices) {
  FatTreeSpec f;
  f.nvlink_bandwidth = gbyte_per_s(450);
  f.nvlink_efficiency = efficiency;
  f.nic_bandwidth = gbyte_per_s(50);
  return make_fat_tree(f, devices);
}

const NcclCost& find(const std::vector<NcclCost>& t, NcclAlgorithm a, NcclProtocol p) {
  for (const NcclCost& c : t) {
    if (c.algorithm == a && c.protocol == p) return c;
  }
  ADD_FAILURE() << "no " << to_string(a) << "/" << to_string(p) << " entry";
  return t.front();
}

// 8 x H100: 18 NVLinks x 20.6 = 370.8 GB/s. Ring graph: 6 channels at 60,
// doubled to 12 at 30 (busBw 360); NVLS: (8+1)·s <= 370.8 gives s = 40 on 8
// channels, bwInter raised to 60, bw = min(40·0.85·7/8·2, 60) = 59.5.
TEST(NcclTable, H100NodeAllReduceIsNcclsFormulas) {
  const auto t = nccl_costs(CollectiveKind::kAllReduce, 8, kH100);
  ASSERT_EQ(t.size(), 7u);  // tree x 3, ring x 3, NVLS: NCCL's order
  EXPECT_EQ(t.front().algorithm, NcclAlgorithm::kTree);
  // Tree (the ring's 12 channels at 30): min(0.92 x 360, 12 x 38.7) = 331.2;
  // LL /3.8, LL128 x 7/9 inside a node; algbw = busBw / 2; latency baseLat
  // + 2 x 7 hops.
  const NcclCost& tree = find(t, NcclAlgorithm::kTree, NcclProtocol::kSimple);
  EXPECT_NEAR(tree.bandwidth_GBps, 331.2 / 2, 1e-9);
  EXPECT_NEAR(tree.latency_us, 8.4 + 14 * 4.0, 1e-9);
  EXPECT_NEAR(find(t, NcclAlgorithm::kTree, NcclProtocol::kLL).bandwidth_GBps, 331.2 / 3.8 / 2, 1e-9);
  EXPECT_NEAR(find(t, NcclAlgorithm::kTree, NcclProtocol::kLL).latency_us, 6.8 + 14 * 0.6, 1e-9);
  EXPECT_NEAR(find(t, NcclAlgorithm::kTree, NcclProtocol::kLL128).bandwidth_GBps, 331.2 * 7 / 9 / 2, 1e-9);
  EXPECT_NEAR(find(t, NcclAlgorithm::kTree, NcclProtocol::kLL128).latency_us, 14 + 14 * 1.25, 1e-9);
  const double to_alg = 8.0 / 14.0;  // nRanks / nsteps
  const NcclCost& ll = find(t, NcclAlgorithm::kRing, NcclProtocol::kLL);
  EXPECT_NEAR(ll.latency_us, 6.6 + 14 * 0.6, 1e-9);
  EXPECT_NEAR(ll.bandwidth_GBps, 141.0 * to_alg, 1e-9);  // min(llMaxBw, 360/2)
  const NcclCost& ll128 = find(t, NcclAlgorithm::kRing, NcclProtocol::kLL128);
  EXPECT_NEAR(ll128.latency_us, 14 + 14 * 1.9, 1e-9);
  EXPECT_NEAR(ll128.bandwidth_GBps, 360 * 0.92 * to_alg, 1e-9);  // under 12 x 36.7
  const NcclCost& simple = find(t, NcclAlgorithm::kRing, NcclProtocol::kSimple);
  EXPECT_EQ(simple.channels, 12);
  EXPECT_NEAR(simple.latency_us, 8.4 + 14 * 3.4, 1e-9);
  EXPECT_NEAR(simple.bandwidth_GBps, 360 * to_alg, 1e-9);
  const NcclCost& nvls = find(t, NcclAlgorithm::kNvls, NcclProtocol::kSimple);
  EXPECT_EQ(nvls.channels, 8);
  EXPECT_NEAR(nvls.latency_us, 25, 1e-9);
  EXPECT_NEAR(nvls.bandwidth_GBps, 8 * 59.5 * to_alg, 1e-4);
}

TEST(NcclTable, GraphsFollowTheChipsNvlinks) {
  // A100: 12 x 20.0 = 240: 6 channels at 40, doubled to 12 at 20; no NVLS.
  const auto a = nccl_costs(CollectiveKind::kAllReduce, 8, kA100);
  ASSERT_EQ(a.size(), 6u);  // tree and ring
  EXPECT_NEAR(find(a, NcclAlgorithm::kRing, NcclProtocol::kSimple).bandwidth_GBps, 240 * 8.0 / 14, 1e-9);
  EXPECT_NEAR(find(a, NcclAlgorithm::kRing, NcclProtocol::kLL).bandwidth_GBps, 87.7 * 8.0 / 14, 1e-9);
  // B200: 18 x 40.1 = 721.8: 8 channels at 90, doubled to 16 at 45; NVLS at
  // 80 (9 x 80 <= 721.8), bwInter 90: min(80·0.74·7/8·2, 90) = 90 on 8.
  const auto b = nccl_costs(CollectiveKind::kAllReduce, 8, kB200);
  EXPECT_EQ(find(b, NcclAlgorithm::kRing, NcclProtocol::kSimple).channels, 16);
  EXPECT_NEAR(find(b, NcclAlgorithm::kRing, NcclProtocol::kSimple).bandwidth_GBps, 720 * 8.0 / 14, 1e-9);
  EXPECT_NEAR(find(b, NcclAlgorithm::kNvls, NcclProtocol::kSimple).bandwidth_GBps, 720 * 8.0 / 14, 1e-9);
  // NVLS_ENABLE=0 leaves the ring.
  NcclSpec off = kH100;
  off.nvls = false;
  EXPECT_EQ(nccl_costs(CollectiveKind::kAllReduce, 8, off).size(), 6u);
  // Trees are all-reduce only.
  EXPECT_EQ(nccl_costs(CollectiveKind::kAllGather, 8, off).size(), 3u);
  // Not NCCL collectives, or a group of one: no table.
  EXPECT_TRUE(nccl_costs(CollectiveKind::kAllToAll, 8, kH100).empty());
  EXPECT_TRUE(nccl_costs(CollectiveKind::kAllReduce, 1, kH100).empty());
}

// One NVL72 NVLink domain (72 B200-class GPUs, 18 x 40.1 = 721.8 GB/s each):
// the ring graph is the 8-GPU node's (16 channels at 45, busBw 720); NVLS has
// 32 heads (NCCL_MAX_NVLS_ARITY), (32+1)·s <= 721.8 gives s = 20, bwInter
// raised while below 40 to 40: bw = min(20·0.74·31/32·2, 40) = 28.675 per
// head, busBw 32 · 28.675 = 917.6, so NVLS wins for large messages.
TEST(NcclTable, Nvl72DomainUsesNvlsWithThirtyTwoHeads) {
  const auto t = nccl_costs(CollectiveKind::kAllReduce, 72, kB200);
  const double to_alg = 72.0 / 142.0;
  EXPECT_NEAR(find(t, NcclAlgorithm::kRing, NcclProtocol::kSimple).bandwidth_GBps, 720 * to_alg, 1e-9);
  const NcclCost& nvls = find(t, NcclAlgorithm::kNvls, NcclProtocol::kSimple);
  EXPECT_EQ(nvls.channels, 32);
  EXPECT_NEAR(nvls.bandwidth_GBps, 32 * 20 * 0.74 * 31 / 32 * 2 * to_alg, 1e-9);
  const NcclTiming big = nccl_time(CollectiveKind::kAllReduce, Bytes(int64_t{1} << 30), 72, kB200);
  EXPECT_EQ(big.cost.algorithm, NcclAlgorithm::kNvls);
  // 64 GPUs (the NVLink domain NeMo's scripts ask Slurm for on GB200 racks:
  // --segment 16 trays of 4) take the same graph.
  EXPECT_EQ(
      find(nccl_costs(CollectiveKind::kAllReduce, 64, kB200), NcclAlgorithm::kNvls, NcclProtocol::kSimple).channels,
      32);
}

// All-gather: ring bus bandwidth becomes algbw by n/(n-1); NVLS keeps its
// busBw = 8 · min(40·0.85·7/8·7/8, 60) and so loses to the ring.
TEST(NcclTable, AllGatherPrefersTheRingOverNvls) {
  const auto t = nccl_costs(CollectiveKind::kAllGather, 8, kH100);
  EXPECT_NEAR(find(t, NcclAlgorithm::kRing, NcclProtocol::kSimple).bandwidth_GBps, 360 * 8.0 / 7, 1e-9);
  EXPECT_NEAR(find(t, NcclAlgorithm::kRing, NcclProtocol::kSimple).latency_us, 8.4 + 7 * 3.4, 1e-9);
  EXPECT_NEAR(find(t, NcclAlgorithm::kNvls, NcclProtocol::kSimple).bandwidth_GBps, 8 * 40 * 0.85 * 7 / 8 * 7 / 8, 1e-4);
  const NcclTiming big = nccl_time(CollectiveKind::kAllGather, Bytes(int64_t{1} << 30), 8, kH100);
  EXPECT_EQ(big.cost.algorithm, NcclAlgorithm::kRing);
  EXPECT_EQ(big.cost.protocol, NcclProtocol::kSimple);
  // Broadcast: ring only, one hop latency on identical channels, algbw = busBw.
  const auto bc = nccl_costs(CollectiveKind::kBroadcast, 8, kH100);
  ASSERT_EQ(bc.size(), 3u);
  EXPECT_NEAR(find(bc, NcclAlgorithm::kRing, NcclProtocol::kSimple).latency_us, 8.4 + 3.4, 1e-9);
  EXPECT_NEAR(find(bc, NcclAlgorithm::kRing, NcclProtocol::kSimple).bandwidth_GBps, 360, 1e-9);
}

// NCCL takes the least estimate: LL for small messages, NVLS for large ones.
TEST(NcclChoice, LeastEstimateWins) {
  for (int64_t size : {int64_t{4096}, int64_t{1} << 20, int64_t{1} << 22, int64_t{1} << 26, int64_t{1} << 33}) {
    const NcclTiming t = nccl_time(CollectiveKind::kAllReduce, Bytes(size), 8, kH100);
    for (const NcclCost& c : nccl_costs(CollectiveKind::kAllReduce, 8, kH100)) {
      EXPECT_LE(t.cost.model_us(Bytes(size)), c.model_us(Bytes(size))) << size;
    }
  }
  EXPECT_EQ(nccl_time(CollectiveKind::kAllReduce, Bytes(4096), 8, kH100).cost.protocol, NcclProtocol::kLL);
  EXPECT_EQ(nccl_time(CollectiveKind::kAllReduce, Bytes(int64_t{1} << 26), 8, kH100).cost.algorithm,
            NcclAlgorithm::kNvls);
  EXPECT_EQ(nccl_time(CollectiveKind::kAllReduce, Bytes(int64_t{1} << 26), 8, kA100).cost.protocol,
            NcclProtocol::kSimple);
}

// Realized time = latency + bytes / (bw · efficiency · used/graph channels)
// + fill · chunk / (that bandwidth / parallel units).
TEST(NcclRealized, ClosedFormOfTheRealization) {
  NcclSpec raw = kH100;
  raw.ll_efficiency = raw.ll128_efficiency = 1;
  raw.fill_chunks = 0;
  // With nothing realized, it is NCCL's own estimate.
  for (int64_t size : {int64_t{1} << 20, int64_t{1} << 24, int64_t{1} << 30}) {
    const NcclTiming t = nccl_time(CollectiveKind::kAllReduce, Bytes(size), 8, raw);
    EXPECT_NEAR(t.time_us, t.cost.model_us(Bytes(size)), 1e-9 * t.time_us);
  }
  // NVLS at 16 MiB: 16 runtime channels x 8 heads; 16 MiB < 8·128·64 KiB,
  // so 32 KiB chunks.
  const NcclSpec& s = kH100;
  const double S = 16 << 20;
  const NcclTiming n = nccl_time(CollectiveKind::kAllReduce, Bytes(16 << 20), 8, s);
  ASSERT_EQ(n.cost.algorithm, NcclAlgorithm::kNvls);
  EXPECT_EQ(n.chunk_bytes, 32768);
  const double bw = 8 * 59.5 * 8.0 / 14;  // GB/s
  EXPECT_NEAR(n.time_us, 25 + S / (1000 * bw) + s.fill_chunks * 32768 / (1000 * bw / 128), 1e-3);
  // Ring LL on an A100 at 1 MiB: chunk = min(32 KiB, S / (12 · 8)).
  const NcclTiming l = nccl_time(CollectiveKind::kAllReduce, Bytes(1 << 20), 8, kA100);
  ASSERT_EQ(l.cost.protocol, NcclProtocol::kLL);
  const double llbw = 87.7 * 8.0 / 14 * kA100.ll_efficiency;
  const double chunk = double{1 << 20} / 96;
  EXPECT_NEAR(l.chunk_bytes, chunk, 1e-9);
  EXPECT_NEAR(l.time_us, 15 + (1 << 20) / (1000 * llbw) + kA100.fill_chunks * chunk / (1000 * llbw / 12), 1e-6);
}

// topoGetAlgoInfo drops channels while bytes < channels · threads ·
// threshold; ring LL's threshold is 8 per thread times 8 ranks, with 512
// threads: 32 KiB per channel, so 128 KiB keeps 4 of 12 channels.
// Inside an A100 node NCCL's table picks the tree with LL128 for a 2 MiB
// all-reduce (31.5 + 2 MiB / 85.87 GB/s = 55.9 us, against ring LL's 56.9
// and ring LL128's 57.2), and pipelines it in calcCollChunking's LL128 tree
// chunks: 576,000 B halved to 72,000 while a channel's 174,763 B hold fewer
// than 1.8 x 64 / 8 of them, then to 36,000 while fewer than 1.8 x 16 / 8.
TEST(NcclRealized, TreeTakesItsOwnChunks) {
  const NcclTiming t = nccl_time(CollectiveKind::kAllReduce, Bytes(int64_t{1} << 21), 8, kA100);
  EXPECT_EQ(t.cost.algorithm, NcclAlgorithm::kTree);
  EXPECT_EQ(t.cost.protocol, NcclProtocol::kLL128);
  EXPECT_EQ(t.channels_used, 12);
  EXPECT_DOUBLE_EQ(t.chunk_bytes, 36000);
  // Its realized time lies between its neighbours' on the sweep: no spike
  // where the choice moves to the tree and back.
  const double before = nccl_time(CollectiveKind::kAllReduce, Bytes(1900000), 8, kA100).time_us;
  const double after = nccl_time(CollectiveKind::kAllReduce, Bytes(2500000), 8, kA100).time_us;
  EXPECT_LT(t.time_us, 1.1 * std::max(before, after));
}

TEST(NcclRealized, SmallMessagesUseFewerChannels) {
  const NcclTiming t = nccl_time(CollectiveKind::kAllReduce, Bytes(1 << 17), 8, kA100);
  ASSERT_EQ(t.cost.protocol, NcclProtocol::kLL);
  EXPECT_EQ(t.channels_used, 4);
  const NcclTiming big = nccl_time(CollectiveKind::kAllReduce, Bytes(int64_t{1} << 30), 8, kA100);
  EXPECT_EQ(big.channels_used, 12);
  EXPECT_EQ(nccl_time(CollectiveKind::kAllReduce, Bytes(4096), 8, kA100).channels_used, 1);
}

// Never faster for more bytes while NCCL's choice stays the same (flat while
// it drops channels in step with the size), on any chip. Where NCCL switches
// protocol by its own estimate the realized time may drop: LL and LL128 run
// slower than that estimate says (docs/model.md, section 9).
TEST(NcclRealized, TimeNeverShrinksWithSizeUnderOneChoice) {
  for (const NcclSpec& chip : {kA100, kH100, kB200}) {
    for (CollectiveKind k : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kBroadcast}) {
      for (int64_t ranks : {2, 4, 8}) {
        NcclTiming last = nccl_time(k, Bytes(512), ranks, chip);
        for (int64_t size = 1024; size <= (int64_t{1} << 33); size *= 2) {
          const NcclTiming t = nccl_time(k, Bytes(size), ranks, chip);
          if (t.cost.algorithm == last.cost.algorithm && t.cost.protocol == last.cost.protocol) {
            EXPECT_GE(t.time_us, last.time_us)
                << chip.compute_capability << " " << to_string(k) << " " << ranks << " " << size;
          }
          last = t;
        }
      }
    }
  }
}

// The lone collective on the fabric takes exactly the model's time: its
// flows move for the transfer time, then the latency and fill.
TEST(NcclOnTheFabric, LoneCollectiveEqualsTheModel) {
  const auto topo = h100_nodes(0.822, 16);
  CollectiveCosts costs;
  costs.base_latency = microseconds(10);  // not NCCL's: unused inside a node
  costs.nccl = kH100;
  const Mesh m({8, 1, 1, 2}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});
  for (CollectiveKind k : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
                           CollectiveKind::kBroadcast}) {
    for (int64_t size : {int64_t{1} << 16, int64_t{1} << 22, int64_t{1} << 28}) {
      const double want = nccl_time(k, Bytes(size), 8, kH100).time_us * 1e-6;
      const double got = simulate_collective(k, Bytes(size), m, axis_bit(MeshAxis::kTp), *topo, ChipSpec{}, costs, true)
                             .step_time.seconds();
      EXPECT_NEAR(got, want, 1e-6 * want + 2e-9) << to_string(k) << " " << size;
    }
  }
  // Across nodes the generic hierarchical plan still runs.
  const auto plan =
      plan_collective(CollectiveKind::kAllReduce, Bytes(1 << 20), std::vector<DeviceId>{0, 8}, *topo, costs);
  EXPECT_EQ(plan.algorithm.find("nccl"), std::string::npos);
}

NcclSpec with_nics(NcclSpec s, double nic_GBps) {
  s.nic_GBps = nic_GBps;
  return s;
}

// Four 8-GPU H100 nodes, a 400 Gb/s NIC per GPU (50 GB/s; the Gen5 x16 path
// to it 48): ring graph 8 channels at 48 (8 x 48 x 7/8 = 336 per GPU within
// the NVLinks' 370.8; 384 >= 370.8 ends the search; no doubling below 50 with
// more than 4 channels). Every figure is NCCL's tuning.cc worked by hand.
TEST(NcclAcrossNodes, H100AllReduceIsNcclsFormulas) {
  const NcclSpec h100 = with_nics(kH100, 50);
  const auto t = nccl_costs(CollectiveKind::kAllReduce, 32, 4, h100);
  ASSERT_EQ(t.size(), 7u);  // ring x 3, tree x 3, NVLS-tree
  const double to_alg = 32.0 / 62.0;
  const NcclCost& simple = find(t, NcclAlgorithm::kRing, NcclProtocol::kSimple);
  EXPECT_EQ(simple.channels, 8);
  EXPECT_NEAR(simple.bandwidth_GBps, 384 * to_alg, 1e-9);
  // 62 steps, 6 across the network: 56 at max(3.4, 3 x 1 us net overhead), 6 at 14.
  EXPECT_NEAR(simple.latency_us, 8.4 + 56 * 3.4 + 6 * 14.0, 1e-9);
  const NcclCost& ll = find(t, NcclAlgorithm::kRing, NcclProtocol::kLL);
  EXPECT_NEAR(ll.bandwidth_GBps, 20.4 * to_alg, 1e-9);  // llMaxBws[Intel][N4]
  EXPECT_NEAR(ll.latency_us, 6.6 + 56 * 1.0 + 6 * 2.7, 1e-9);
  EXPECT_NEAR(find(t, NcclAlgorithm::kRing, NcclProtocol::kLL128).bandwidth_GBps, 8 * 36.7 * to_alg, 1e-9);
  const NcclCost& tree = find(t, NcclAlgorithm::kTree, NcclProtocol::kSimple);
  EXPECT_NEAR(tree.bandwidth_GBps, 8 * 36.0 / 2, 1e-9);  // min(0.92 x 384, 8 x perChMaxTreeBw)
  EXPECT_NEAR(tree.latency_us, 8.4 + 2 * (7 * 4.0 + 2 * 14.0), 1e-9);
  const NcclCost& tree_ll = find(t, NcclAlgorithm::kTree, NcclProtocol::kLL);
  EXPECT_NEAR(tree_ll.bandwidth_GBps, 20.4 / 2, 1e-9);
  EXPECT_NEAR(tree_ll.latency_us, 6.8 + 2 * (7 * 0.6 + 2 * 5.0), 1e-9);
  // NVLS-tree: 9 x 40 <= 370.8 on 8 heads, bwInter raised to 48;
  // min(40·0.85·7/8·2, 48, perChMaxNVLSTreeBw 45.5) = 45.5.
  const NcclCost& nvls_tree = find(t, NcclAlgorithm::kNvlsTree, NcclProtocol::kSimple);
  EXPECT_EQ(nvls_tree.channels, 8);
  EXPECT_NEAR(nvls_tree.bandwidth_GBps, 8 * 45.5 * to_alg, 1e-4);
  EXPECT_NEAR(nvls_tree.latency_us, 25 + 2 * 2 * 20.9, 1e-9);
  // Two nodes: NVLS-tree's network counts twice and the N2 cap 57.7 binds.
  const auto two = nccl_costs(CollectiveKind::kAllReduce, 16, 2, h100);
  EXPECT_NEAR(find(two, NcclAlgorithm::kNvlsTree, NcclProtocol::kSimple).bandwidth_GBps, 8 * 57.7 * 16.0 / 30.0, 1e-4);
  // All-gather: rings only (PAT needs one GPU per node).
  const auto ag = nccl_costs(CollectiveKind::kAllGather, 32, 4, h100);
  ASSERT_EQ(ag.size(), 3u);
  EXPECT_NEAR(find(ag, NcclAlgorithm::kRing, NcclProtocol::kSimple).bandwidth_GBps, 384 * 32.0 / 31.0, 1e-9);
  EXPECT_NEAR(find(ag, NcclAlgorithm::kRing, NcclProtocol::kSimple).latency_us, 8.4 + 28 * 3.4 + 3 * 14.0, 1e-9);
  // Large all-reduces take the ring, mid-sized ones NVLS-tree.
  EXPECT_EQ(nccl_time(CollectiveKind::kAllReduce, Bytes(int64_t{1} << 32), 32, 4, h100).cost.algorithm,
            NcclAlgorithm::kRing);
  EXPECT_EQ(nccl_time(CollectiveKind::kAllReduce, Bytes(int64_t{1} << 26), 32, 4, h100).cost.algorithm,
            NcclAlgorithm::kNvlsTree);
  // Without NICs, or with uneven nodes, there is no multi-node table.
  EXPECT_TRUE(nccl_costs(CollectiveKind::kAllReduce, 32, 4, kH100).empty());
  EXPECT_TRUE(nccl_costs(CollectiveKind::kAllReduce, 30, 4, h100).empty());
}

// One GPU per node (a data-parallel group under tp 8): one channel at 48
// through the GPU's own NIC, doubled to 2 at 24; the network latency is the
// tree's; PAT gathers with busBw 0.75 x 48 kept as algbw. A100 (AMD hosts,
// Gen4 x16 path of 24, 25 GB/s NICs): 8 channels at 24 and llMaxBws[AMD].
TEST(NcclAcrossNodes, OneGpuPerNodeAndA100) {
  const NcclSpec h100 = with_nics(kH100, 50);
  const auto ag = nccl_costs(CollectiveKind::kAllGather, 8, 8, h100);
  ASSERT_EQ(ag.size(), 4u);
  const NcclCost& ring = find(ag, NcclAlgorithm::kRing, NcclProtocol::kSimple);
  EXPECT_EQ(ring.channels, 2);
  EXPECT_NEAR(ring.bandwidth_GBps, 48 * 8.0 / 7.0, 1e-9);
  EXPECT_NEAR(ring.latency_us, 8.4 + 7 * 14.0, 1e-9);
  const NcclCost& pat = find(ag, NcclAlgorithm::kPat, NcclProtocol::kSimple);
  EXPECT_NEAR(pat.bandwidth_GBps, 36, 1e-9);
  EXPECT_NEAR(pat.latency_us, 8 + 3 * 14.0 / 3.5 + 2.8 * 8, 1e-9);
  EXPECT_EQ(nccl_time(CollectiveKind::kAllGather, Bytes(1 << 20), 8, 8, h100).cost.algorithm, NcclAlgorithm::kPat);
  // No NVLS-tree without two GPUs per node to be its heads.
  EXPECT_EQ(nccl_costs(CollectiveKind::kAllReduce, 8, 8, h100).size(), 6u);
  const NcclSpec a100 = with_nics(kA100, 25);
  const auto ar = nccl_costs(CollectiveKind::kAllReduce, 16, 2, a100);
  ASSERT_EQ(ar.size(), 6u);
  EXPECT_NEAR(find(ar, NcclAlgorithm::kRing, NcclProtocol::kSimple).bandwidth_GBps, 192 * 16.0 / 30.0, 1e-9);
  EXPECT_NEAR(find(ar, NcclAlgorithm::kRing, NcclProtocol::kSimple).latency_us, 8.4 + 28 * 6.0 + 2 * 14.0, 1e-9);
  EXPECT_NEAR(find(ar, NcclAlgorithm::kRing, NcclProtocol::kLL).bandwidth_GBps, 22.5 * 16.0 / 30.0, 1e-9);
}

// Across nodes, the lone collective on the fabric takes exactly the model's
// time too (the fabric's core keeps up); a group that is uneven over its
// nodes keeps the hierarchical rings.
TEST(NcclAcrossNodes, LoneCollectiveEqualsTheModel) {
  const auto topo = h100_nodes(0.822, 32);
  CollectiveCosts costs;
  costs.nccl = with_nics(kH100, 50);
  const Mesh all({1, 1, 1, 32}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});
  const Mesh per_node({8, 1, 1, 4}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});
  for (CollectiveKind k : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
                           CollectiveKind::kBroadcast}) {
    for (int64_t size : {int64_t{1} << 16, int64_t{1} << 22, int64_t{1} << 28}) {
      const double want = nccl_time(k, Bytes(size), 32, 4, costs.nccl).time_us * 1e-6;
      const double got =
          simulate_collective(k, Bytes(size), all, axis_bit(MeshAxis::kDp), *topo, ChipSpec{}, costs, true)
              .step_time.seconds();
      EXPECT_NEAR(got, want, 1e-6 * want + 2e-9) << to_string(k) << " " << size;
      // One GPU of each node (the dp axis under tp 8).
      const double want1 = nccl_time(k, Bytes(size), 4, 4, costs.nccl).time_us * 1e-6;
      const double got1 =
          simulate_collective(k, Bytes(size), per_node, axis_bit(MeshAxis::kDp), *topo, ChipSpec{}, costs, true)
              .step_time.seconds();
      EXPECT_NEAR(got1, want1, 1e-6 * want1 + 2e-9) << to_string(k) << " " << size;
    }
  }
  const auto uneven =
      plan_collective(CollectiveKind::kAllReduce, Bytes(1 << 20), std::vector<DeviceId>{0, 1, 8}, *topo, costs);
  EXPECT_EQ(uneven.algorithm.find("nccl"), std::string::npos);
  const auto even =
      plan_collective(CollectiveKind::kAllReduce, Bytes(1 << 20), std::vector<DeviceId>{0, 1, 8, 9}, *topo, costs);
  EXPECT_NE(even.algorithm.find("nccl, 2 nodes"), std::string::npos);
}

// Properties across nodes, for every chip, kind and node shape: under one
// choice a larger message never takes less time; a slower NIC (25 GB/s,
// 200 Gb/s, under the Gen5 path's 48) never makes NCCL's estimate for its
// pick better; the chosen entry is the least estimate.
TEST(NcclAcrossNodes, PropertiesOfTheTableAndTheTime) {
  for (const NcclSpec& base : {kA100, kH100, kB200}) {
    for (CollectiveKind k : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
                             CollectiveKind::kBroadcast}) {
      for (auto [ranks, nodes] : {std::pair<int64_t, int64_t>{16, 2}, {64, 8}, {8, 8}, {256, 32}}) {
        const NcclSpec spec = with_nics(base, 50);
        NcclTiming last = nccl_time(k, Bytes(512), ranks, nodes, spec);
        for (int64_t size = 1024; size <= (int64_t{1} << 33); size *= 4) {
          const NcclTiming t = nccl_time(k, Bytes(size), ranks, nodes, spec);
          if (t.cost.algorithm == last.cost.algorithm && t.cost.protocol == last.cost.protocol) {
            EXPECT_GE(t.time_us, last.time_us) << to_string(k) << " " << ranks << "/" << nodes << " " << size;
          }
          for (const NcclCost& c : nccl_costs(k, ranks, nodes, spec)) {
            EXPECT_LE(t.cost.model_us(Bytes(size)), c.model_us(Bytes(size)));
          }
          const NcclTiming slower = nccl_time(k, Bytes(size), ranks, nodes, with_nics(base, 25));
          EXPECT_GE(slower.cost.model_us(Bytes(size)), t.cost.model_us(Bytes(size)) * (1 - 1e-12))
              << to_string(k) << " " << ranks << "/" << nodes << " " << size;
          last = t;
        }
      }
    }
  }
}

// The scenario field turns it on; by default groups across nodes keep the
// hierarchical rings (evaluation 21).
TEST(NcclAcrossNodes, OffUnlessTheFabricAsks) {
  nlohmann::json j = {{"chip", "h100-sxm"},
                      {"devices", 16},
                      {"fabric", {{"kind", "nvswitch_fat_tree"}, {"gpus_per_node", 8}, {"nic_GBps_per_gpu", 50}}}};
  EXPECT_EQ(parse_cluster_text(j.dump(), "c.json").collective.nccl.nic_GBps, 0);
  j["fabric"]["nccl_across_nodes"] = true;
  EXPECT_EQ(parse_cluster_text(j.dump(), "c.json").collective.nccl.nic_GBps, 50);
}

// A serving engine's custom all-reduce alone on the NVSwitch: one-shot, each
// GPU takes (n-1) whole buffers through its NVLink, t = 7 us + (n-1)·S/W;
// two-shot, two phases of (n-1) slices of S/n, t = 14 us + 2(n-1)/n·S/W,
// with W the GPU's NVLink bandwidth; thresholds as vLLM's; beyond 8 MiB NCCL.
TEST(CustomAllReduce, LoneCallIsTheClosedForm) {
  const auto topo = h100_nodes(1.0, 8);
  CollectiveCosts costs;
  costs.nccl = kH100;
  costs.custom_all_reduce = {int64_t{8} << 20, 256 << 10, 4, 512 << 10, 7.0, 14.0};
  const double W = 450e9;
  for (int ranks : {4, 8}) {
    const Mesh m({ranks, 1, 1, 8 / ranks}, {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp});
    const double n = ranks;
    for (int64_t size : {int64_t{16} << 10, int64_t{300} << 10, int64_t{4} << 20}) {
      const bool one_shot = size < (ranks <= 4 ? 512 << 10 : 256 << 10);
      const double S = static_cast<double>(size);
      const double want = one_shot ? 7e-6 + (n - 1) * S / W : 14e-6 + 2 * (n - 1) / n * S / W;
      const double got = simulate_collective(CollectiveKind::kAllReduce, Bytes(size), m, axis_bit(MeshAxis::kTp), *topo,
                                             ChipSpec{}, costs, true)
                             .step_time.seconds();
      EXPECT_NEAR(got, want, 1e-6 * want + 2e-9) << ranks << " ranks, " << size << " B";
    }
  }
  const std::vector<DeviceId> node = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(plan_collective(CollectiveKind::kAllReduce, Bytes(int64_t{16} << 20), node, *topo, costs)
                .algorithm.find("custom"),
            std::string::npos);
  EXPECT_NE(plan_collective(CollectiveKind::kAllReduce, Bytes(int64_t{8} << 20), node, *topo, costs)
                .algorithm.find("two-shot"),
            std::string::npos);
}

// Each engine's kernel choice. vLLM (csrc/custom_all_reduce.cuh): two ranks
// one-shot up to its 8 MiB workspace, past the one-shot bound two-shot.
// TensorRT-LLM's engine plugin under AUTO (allreducePlugin.cpp
// selectImplementation): two ranks one-shot up to their 16 MB workspace,
// below 1 MB up to four ranks and 500 kB beyond; two-shot disabled, so NCCL
// past those bounds.
TEST(CustomAllReduce, EnginesPickTheirOwnKernels) {
  const auto topo = h100_nodes(1.0, 8);
  const CustomAllReduce vllm{int64_t{8} << 20, 256 << 10, 4, 512 << 10, 7.0, 14.0};
  const CustomAllReduce trt{8'000'000, 500'000, 4, 1'000'000, 7.0, 14.0, 16'000'000, false};
  auto algorithm = [&](const CustomAllReduce& c, int ranks, int64_t bytes) {
    CollectiveCosts costs;
    costs.nccl = kH100;
    costs.custom_all_reduce = c;
    std::vector<DeviceId> members;
    for (int i = 0; i < ranks; ++i) members.push_back(static_cast<DeviceId>(i));
    return plan_collective(CollectiveKind::kAllReduce, Bytes(bytes), members, *topo, costs).algorithm;
  };
  const std::string one = "one-shot (custom)", two = "two-shot (custom)";
  EXPECT_EQ(algorithm(vllm, 2, int64_t{8} << 20), one);
  EXPECT_NE(algorithm(vllm, 2, (int64_t{8} << 20) + 2), one);
  EXPECT_EQ(algorithm(vllm, 4, 512 << 10), two);
  EXPECT_EQ(algorithm(vllm, 8, (256 << 10) - 2), one);
  EXPECT_EQ(algorithm(trt, 2, 16'000'000), one);
  EXPECT_EQ(algorithm(trt, 2, 16'000'002).find("custom"), std::string::npos);
  EXPECT_EQ(algorithm(trt, 4, 999'998), one);
  EXPECT_EQ(algorithm(trt, 4, 1'000'000).find("custom"), std::string::npos);
  EXPECT_EQ(algorithm(trt, 8, 499'998), one);
  EXPECT_EQ(algorithm(trt, 8, 500'000).find("custom"), std::string::npos);
  EXPECT_EQ(algorithm(trt, 8, 4'000'000).find("custom"), std::string::npos);
}

// The nccl-tests curves: every point's error stays within tolerance of the
// error recorded by scripts/fit_nccl.py --check --record.
TEST(NcclCurves, ErrorsStayAtTheirRecord) {
  const std::string dir = SHARDSIM_SOURCE_DIR "/examples/validation/nccl/";
  std::ifstream in(dir + "allreduce_8gpu.json");
  ASSERT_TRUE(in.good());
  const auto data = nlohmann::json::parse(in);
  const double tol = data.at("tolerance_points").get<double>();
  int points = 0;
  for (const auto& c : data.at("curves")) {
    const ClusterSpec cl = load_cluster(dir + c.at("cluster").get<std::string>());
    ASSERT_GT(cl.collective.nccl.compute_capability, 0);
    for (const auto& p : c.at("points")) {
      const auto size = p.at("size_bytes").get<int64_t>();
      const double t_s = nccl_time(CollectiveKind::kAllReduce, Bytes(size), 8, cl.collective.nccl).time_us * 1e-6;
      const double busbw = static_cast<double>(size) * 2 * 7 / 8 / t_s / 1e9;
      const double err = 100 * (busbw / p.at("busbw_GBps").get<double>() - 1);
      EXPECT_LE(std::abs(err), std::abs(p.at("recorded_error_pct").get<double>()) + tol)
          << c.at("name").get<std::string>() << " " << size << " B: " << err << "%";
      ++points;
    }
  }
  EXPECT_EQ(points, 21);
}

}  // namespace
}  // namespace shardsim
