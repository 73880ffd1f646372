// NCCL's cost model inside one NVSwitch node (see nccl_model.h). Every
// constant below is NCCL's, quoted with the file it comes from
// (NVIDIA/nccl at 5067397); the three realization figures of NcclSpec are the
// only fitted numbers (scripts/fit_nccl.py).
#include "shardsim/sim/nccl_model.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "shardsim/core/error.h"

namespace shardsim {
namespace {

constexpr int kProtocols = 3;  // LL, LL128, Simple: NCCL's protocol order
constexpr int kSteps = 8;      // NCCL_STEPS (src/include/device.h)

/// NCCL's index of a GPU generation: 0 Volta, 1 Ampere, 2 Hopper, 3 Blackwell.
int generation(int cc) {
  return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0;
}

/// NVLink bandwidth of one link as NCCL's topology counts it, GB/s
/// (src/graph/topo.h: SM70/SM80_NVLINK_BW 20.0, SM90 20.6, SM100 40.1).
double nvlink_link_GBps(int cc) {
  return cc >= 100 ? 40.1 : cc >= 90 ? 20.6 : 20.0;
}

/// Per-channel speeds the intra-node graph search tries, fastest first
/// (src/graph/search.cc: speedArrayIntra, sm90SpeedArrayIntra,
/// sm100SpeedArrayIntra).
std::vector<double> intra_speeds(int cc) {
  if (cc >= 100) return {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
  if (cc >= 90) return {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
  return {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
}

// src/graph/tuning.cc, ncclTunerConstantsDefaults; [protocol] = LL, LL128, Simple.
constexpr std::array<double, kProtocols> kRingBaseLatency_us{6.6, 14.0, 8.4};
constexpr std::array<double, kProtocols> kRingNvlinkHopLatency_us{0.6, 1.9, 3.4};
constexpr double kNvlsNvlinkLatency_us = 25;  // hwLatencies[NVLINK][NVLS][Simple]; NVLS base latency is 0
constexpr std::array<double, 4> kPerChRingLl128Bw_GBps{20.0, 20.0, 36.7, 40.0};  // perChMaxRingLL128Bws[gen][N1]
constexpr std::array<double, 4> kNvlsEfficiency{0.0, 0.0, 0.85, 0.74};           // nvlsEfficiency[gen]

// Across nodes (the same file): base latencies of tree and PAT, hardware
// latencies per hop over NVLink and over the network, and the per-channel
// caps indexed [row][N1, N2, N4], N the column of nNodes (1, 2, more). The
// LL cap's row is the GPU generation inside one node and the host CPU
// across nodes (0 Intel and others, 1 AMD).
constexpr std::array<double, kProtocols> kTreeBaseLatency_us{6.8, 14.0, 8.4};
constexpr std::array<double, kProtocols> kTreeNvlinkHopLatency_us{0.6, 1.25, 4.0};
constexpr std::array<double, kProtocols> kTreeNetLatency_us{5.0, 8.5, 14.0};
constexpr std::array<double, kProtocols> kRingNetLatency_us{2.7, 4.0, 14.0};
constexpr double kNvlsTreeNetLatency_us = 20.9;  // hwLatencies[NET][NVLSTree][Simple]
constexpr double kPatBaseLatency_us = 8.0;
using PerNodes = std::array<std::array<double, 3>, 4>;
constexpr PerNodes kLlMaxBws{{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}}};
constexpr PerNodes kPerChMaxTreeBws{{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};
constexpr PerNodes kPerChMaxTreeLl128Bws{
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};
constexpr PerNodes kPerChMaxNvlsTreeBws{{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}}};

// Threads and per-thread work before NCCL adds channels (src/include/device.h,
// comm.h; tuning.cc: ring LL's threshold is multiplied by nRanks).
constexpr std::array<int, kProtocols> kMaxThreads{512, 640, 512};  // NCCL_LL/LL128/SIMPLE_MAX_NTHREADS
constexpr std::array<int, kProtocols> kThreadThreshold{8, 8, 64};  // NCCL_*_THREAD_THRESHOLD

/// A ring's chunk: NCCL_STEPS slots share a protocol's buffer (src/init.cc:
/// LL 8 lines x 512 threads x 8 steps x 16 B, LL128 120 x 640 x 8 x 8 B,
/// Simple 4 MiB); Simple's chunk is 4 steps (ALLREDUCE/ALLGATHER_CHUNKSTEPS),
/// LL carries half its bytes as flags, LL128 15 of every 16 words
/// (enqueue.cc, calcCollChunking).
double ring_chunk_bytes(NcclProtocol p) {
  switch (p) {
    case NcclProtocol::kLL:
      return 8.0 * 512 * kSteps * 16 / kSteps / 2;
    case NcclProtocol::kLL128:
      return 120.0 * 640 * kSteps * 8 / kSteps * 15 / 16;
    case NcclProtocol::kSimple:
      break;
  }
  return double{1 << 22} / kSteps * 4;
}

/// Per-channel speeds the search tries when the graph leaves the node
/// (search.cc: speedArrayInter, sm90SpeedArrayInter, sm100SpeedArrayInter).
std::vector<double> inter_speeds(int cc) {
  if (cc >= 100) {
    return {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
            20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
  }
  if (cc >= 90)
    return {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12};
  return {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12};
}

/// The host CPU NCCL reads for its LL cap and network overhead across nodes:
/// AMD EPYC on DGX A100 (and HGX A100 boards built like it), Intel Xeon on
/// DGX H100/H200/B200, Grace (neither) on GB200. An assumption by
/// generation, not a chip rate.
bool amd_host(int cc) {
  return cc < 90;
}

/// The bandwidth of a GPU's path to its NIC as NCCL counts it (topo.cc: PCIe
/// width x kvDictPciGen / 80, the NIC's speed / 8000): a x16 PCIe switch of
/// Gen4 (24 GB/s) on Ampere, Gen5 (48) on Hopper and Blackwell, and the NIC.
double net_path_GBps(const NcclSpec& spec) {
  const double pcie = spec.compute_capability >= 90 ? 48.0 : 24.0;
  return std::min(pcie, spec.nic_GBps);
}

/// NCCL's log2i: floor(log2(n)).
int log2i(int64_t n) {
  int l = 0;
  while (n > 1) {
    n >>= 1;
    ++l;
  }
  return l;
}

/// NVLS's chunk at `bytes` (enqueue.cc, calcCollChunking): NCCL_NVLS_CHUNKSIZE
/// (128 KiB) shrinks to 64, 32 and 16 KiB as the message gets small compared
/// with the concurrent operations (channels x heads).
double nvls_chunk_bytes(double bytes, double ops) {
  double c = 128 * 1024;
  if (bytes < 64 * ops * c && c > 65536) c = 65536;
  if (bytes < 8 * ops * c && c > 32768) c = 32768;
  if (bytes < 2 * ops * c && c > 16384) c = 16384;
  return c;
}

/// NVLS-tree's chunk (enqueue.cc calcCollChunking; transport/nvls.cc): the
/// NVLS chunk capped at treeMaxChunkSize (64 KiB from 4 nodes, else 128
/// KiB), then 64 KiB below 4 x ops x chunk and 32 KiB below 1 x ops x chunk
/// (the 256 and 128 KiB steps cannot apply under those caps). Blackwell's
/// own multi-node NVLS-tree tuning (ncclNvlsTreeSm100Tuning) is not modelled.
double nvls_tree_chunk_bytes(double bytes, double ops, int64_t nodes) {
  double c = nodes >= 4 ? 65536 : 128 * 1024;
  if (bytes < 4 * ops * c && c > 65536) c = 65536;
  if (bytes < 1 * ops * c && c > 32768) c = 32768;
  return c;
}

/// A tree's chunk (calcCollChunking): one step of the protocol's buffer
/// (NCCL_BUFFSIZE / NCCL_STEPS = 512 KiB for Simple, the ring's for LL and
/// LL128), and for LL128 halved while the channel's share is under
/// nsteps·64/ppn chunks (down to 128 KiB) and nsteps·16/ppn (down to 32 KiB),
/// nsteps = 1 + log2i(nodes) + 0.1·ppn; at most the channel's share.
double tree_chunk_bytes(NcclProtocol p, double bytes, int channels, int64_t nodes, int64_t ranks) {
  double c = p == NcclProtocol::kSimple ? double{1 << 22} / kSteps : ring_chunk_bytes(p);
  if (p == NcclProtocol::kLL128) {
    const double ppn = static_cast<double>(ranks) / static_cast<double>(nodes);
    const double nsteps = 1 + log2i(nodes) + 0.1 * ppn;
    auto chunks = [&] { return std::floor(bytes / (channels * c)); };  // NCCL's integer division
    while (chunks() < nsteps * 64 / ppn && c > 131072) c = std::floor(c / 2);
    while (chunks() < nsteps * 16 / ppn && c > 32768) c = std::floor(c / 2);
  }
  return std::min(c, bytes / channels);
}

/// PAT's chunk (calcCollChunking): one Simple step (512 KiB), halved while
/// channels x chunk x 32 (all-gather) or x 16 (reduce-scatter) exceeds the
/// message, down to 64 KiB; at most a rank's share of a channel.
double pat_chunk_bytes(CollectiveKind kind, double bytes, int channels, double ranks) {
  double c = double{1 << 22} / kSteps;
  const double k = kind == CollectiveKind::kAllGather ? 32 : 16;
  while (c * channels * k > bytes && c > 65536) c /= 2;
  return std::min(c, bytes / (channels * ranks));
}

/// NVLS channels (CTAs) at run time (src/transport/nvls.cc): 16 on Hopper,
/// 24 on a single Blackwell NVLink domain.
int nvls_runtime_channels(int cc) {
  return cc >= 100 ? 24 : 16;
}

struct Graph {
  int channels = 0;
  double bw_intra = 0;  // per channel, GB/s
  double bw_inter = 0;
};

/// ncclTopoDupChannels (search.cc) on a ring graph: channels doubled (at
/// most MAXCHANNELS/2 = 32) at the speed divided accordingly when the speed
/// is 25 or more, except past Ampere below 50 with more than 4 channels;
/// bwInter follows bwIntra.
void dup_channels(Graph& g, int cc) {
  const bool dup = g.bw_intra >= 25.0 && !(cc > 80 && g.bw_intra < 50.0 && g.channels > 4);
  if (dup) {
    const int doubled = std::min(2 * g.channels, 32);
    const int factor = (doubled + g.channels - 1) / g.channels;
    g.bw_intra /= factor;
    g.channels = doubled;
  }
  g.bw_inter = g.bw_intra;
}

/// The ring graph NCCL's search finds in an NVSwitch node: the fastest speed
/// s of the array for which one channel fits, as many channels as the GPU's
/// NVLinks carry at s, then doubled at half the speed when s >= 25 (and, past
/// Ampere, s >= 50 or at most 4 channels) by ncclTopoDupChannels, at most
/// MAXCHANNELS/2 = 32 (init.cc).
Graph ring_graph(double total_GBps, int cc) {
  Graph g;
  const std::vector<double> speeds = intra_speeds(cc);
  double s = speeds.back();
  for (double v : speeds) {
    if (v <= total_GBps) {
      s = v;
      break;
    }
  }
  g.channels = std::clamp(static_cast<int>(std::floor(total_GBps / s + 1e-9)), 1, 32);
  g.bw_intra = s;
  dup_channels(g, cc);
  return g;
}

/// The NVLS graph (search.cc): one channel per head, a head per GPU up to
/// NCCL_MAX_NVLS_ARITY (32; an NVL72 domain has more GPUs than heads), each
/// GPU sending and receiving s for every other head's channel and 2s for
/// its own, so (heads + 1)·s must fit its NVLinks; the second search pass
/// then raises bwInter one speed at a time while it is below 2·bwIntra.
Graph nvls_graph(double total_GBps, int cc, int64_t ranks) {
  Graph g;
  g.channels = static_cast<int>(std::min<int64_t>(ranks, 32));  // NCCL_MAX_NVLS_ARITY
  const std::vector<double> speeds = intra_speeds(cc);
  size_t i = 0;
  while (i + 1 < speeds.size() && static_cast<double>(g.channels + 1) * speeds[i] > total_GBps) ++i;
  g.bw_intra = speeds[i];
  size_t j = i;
  while (j > 0 && speeds[j] < 2 * g.bw_intra) --j;
  g.bw_inter = speeds[j];
  return g;
}

/// The ring (and tree, and PAT) graph of a communicator spanning nodes with
/// ppn GPUs each (search.cc, ncclTopoCompute with system->inter): every
/// channel enters a node through one GPU's NIC and leaves through another's
/// (cross-NIC rings, which NCCL_CROSS_NIC's default 2 lets the search try),
/// so at speed s a NIC carries floor(maxBw / s) channels, maxBw the
/// GPU-to-NIC path, and a GPU forwards ppn - 1 of every ppn channels over
/// NVLink (channels x s x (ppn-1)/ppn within the NVLinks' total). The search
/// starts at the fastest speed within maxBw and keeps lowering it while the
/// speed is above 0.49 of the best graph's and that graph's channels x speed
/// stay below the NVLinks' total, taking a graph only if it moves strictly
/// more; ncclTopoDupChannels then applies as inside a node. Trees are taken
/// to find the ring's channels (the search tries to match them: "Try to get
/// the same nChannels between Rings and Trees").
Graph net_ring_graph(const NcclSpec& spec, double total_GBps, int64_t ppn) {
  const int cc = spec.compute_capability;
  const double max_bw = net_path_GBps(spec);
  const std::vector<double> speeds = inter_speeds(cc);
  size_t i = 0;
  while (i + 1 < speeds.size() && (speeds[i] > max_bw || speeds[i] > total_GBps)) ++i;
  auto channels_at = [&](double s) {
    int64_t ch = ppn * static_cast<int64_t>(std::floor(max_bw / s + 1e-9));
    if (ppn > 1) {
      const double forwarded = s * static_cast<double>(ppn - 1) / static_cast<double>(ppn);
      ch = std::min(ch, static_cast<int64_t>(std::floor(total_GBps / forwarded + 1e-9)));
    }
    return static_cast<int>(std::clamp<int64_t>(ch, 1, 32));
  };
  Graph g;
  for (size_t j = i; j < speeds.size(); ++j) {
    if (g.channels > 0 && (g.channels * g.bw_intra >= total_GBps || speeds[j] / g.bw_intra <= 0.49)) break;
    const int ch = channels_at(speeds[j]);
    if (ch * speeds[j] > g.channels * g.bw_intra) {
      g.channels = ch;
      g.bw_intra = speeds[j];
    }
  }
  dup_channels(g, cc);
  return g;
}

/// The NVLS graph of a communicator spanning nodes (NVLS-tree): as inside a
/// node, one channel per head with (heads + 1)·s within the NVLinks, from the
/// inter-node speeds and within the NIC path; the second pass raises bwInter
/// while below 2·bwIntra and within the NIC path.
Graph net_nvls_graph(const NcclSpec& spec, double total_GBps, int64_t ppn) {
  Graph g;
  g.channels = static_cast<int>(std::min<int64_t>(ppn, 32));
  const double max_bw = net_path_GBps(spec);
  const std::vector<double> speeds = inter_speeds(spec.compute_capability);
  size_t i = 0;
  while (i + 1 < speeds.size() &&
         (speeds[i] > max_bw || static_cast<double>(g.channels + 1) * speeds[i] > total_GBps)) {
    ++i;
  }
  g.bw_intra = speeds[i];
  size_t j = i;
  while (j > 0 && speeds[j] < 2 * g.bw_intra && speeds[j - 1] <= max_bw) --j;
  g.bw_inter = speeds[j];
  return g;
}

int protocol_index(NcclProtocol p) {
  return static_cast<int>(p);
}

}  // namespace

std::string_view to_string(NcclAlgorithm a) {
  switch (a) {
    case NcclAlgorithm::kRing:
      return "ring";
    case NcclAlgorithm::kNvls:
      return "nvls";
    case NcclAlgorithm::kTree:
      return "tree";
    case NcclAlgorithm::kNvlsTree:
      return "nvls-tree";
    case NcclAlgorithm::kPat:
      break;
  }
  return "pat";
}

std::string_view to_string(NcclProtocol p) {
  switch (p) {
    case NcclProtocol::kLL:
      return "LL";
    case NcclProtocol::kLL128:
      return "LL128";
    case NcclProtocol::kSimple:
      break;
  }
  return "Simple";
}

double NcclCost::model_us(Bytes size) const {
  return latency_us + static_cast<double>(size.value()) / (1000.0 * bandwidth_GBps);
}

bool nccl_models(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kAllGather ||
         kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kBroadcast;
}

namespace {

/// NCCL's tree entries for an all-reduce over `ranks` GPUs on `nodes` nodes
/// (tuning.cc; the tree graph taken as the ring's channels and speed):
/// busBw = min(0.92 · channels · bw, channels · perChMaxTreeBw); LL
/// min(busBw / 3.8, llMaxBw); LL128 min(busBw · (7/9 inside a node, 120/128
/// across), channels · perChMaxTreeLL128Bw); algbw = busBw / 2. Latency =
/// baseLat + 2((ppn-1)·hwLat[NVLink] + log2i(nodes)·hwLat[net]). A balanced
/// tree is assumed found (no 0.85 for a plain tree). NCCL lists the tree
/// before the ring, so it wins exact ties.
void append_tree_costs(const Graph& graph, int gen, int64_t ranks, int64_t nodes, double ll_max,
                       std::vector<NcclCost>& out) {
  const size_t col = nodes <= 1 ? 0 : nodes <= 2 ? 1 : 2;
  const auto g = static_cast<size_t>(gen);
  const int64_t ppn = ranks / nodes;
  const int levels = log2i(nodes);
  for (int p = 0; p < kProtocols; ++p) {
    const auto pi = static_cast<size_t>(p);
    double bus = std::min(graph.channels * graph.bw_intra * 0.92, graph.channels * kPerChMaxTreeBws[g][col]);
    if (p == protocol_index(NcclProtocol::kLL)) bus = std::min(bus / 3.8, ll_max);
    if (p == protocol_index(NcclProtocol::kLL128)) {
      bus = std::min(bus * (nodes <= 1 ? 7.0 / 9.0 : 120.0 / 128.0), graph.channels * kPerChMaxTreeLl128Bws[g][col]);
    }
    NcclCost c;
    c.algorithm = NcclAlgorithm::kTree;
    c.protocol = static_cast<NcclProtocol>(p);
    c.channels = graph.channels;
    c.bandwidth_GBps = bus * 0.5;
    c.latency_us = kTreeBaseLatency_us[pi] +
                   2 * (static_cast<double>(ppn - 1) * kTreeNvlinkHopLatency_us[pi] + levels * kTreeNetLatency_us[pi]);
    out.push_back(c);
  }
}

// ncclTopoTuneModel (src/graph/tuning.cc) for one node (nNodes = 1, so
// ppn = nRanks and every hop is NVLink):
//   busBw = channels · bw; LL: min(llMaxBw, busBw/2); LL128: min(0.92·busBw,
//   channels · perChMaxRingLL128Bw); NVLS: bw = min(bwIntra · nvlsEfficiency ·
//   (ch-1)/ch · (2 for all-reduce, else (n-1)/n), bwInter).
//   Ring and NVLS bandwidths become algorithm bandwidths by nRanks / nsteps
//   (nsteps = 2(n-1) all-reduce, n-1 all-gather / reduce-scatter, n
//   broadcast) except NVLS all-gather / reduce-scatter, which keep busBw.
//   Latency: ring = baseLat + nsteps · hwLat[NVLink] (broadcast on identical
//   channels: baseLat + hwLat); NVLS = hwLat[NVLink][NVLS] = 25 us.
std::vector<NcclCost> single_node_costs(CollectiveKind kind, int64_t ranks, const NcclSpec& spec) {
  std::vector<NcclCost> out;
  if (!nccl_models(kind) || ranks < 2 || spec.compute_capability <= 0 || spec.nvlink_links <= 0) return out;
  const int cc = spec.compute_capability;
  const int gen = generation(cc);
  const double total = spec.nvlink_links * nvlink_link_GBps(cc);
  const auto n = static_cast<double>(ranks);
  const double nsteps = kind == CollectiveKind::kAllReduce   ? 2 * (n - 1)
                        : kind == CollectiveKind::kBroadcast ? n
                                                             : n - 1;
  const Graph ring = ring_graph(total, cc);
  const double ll_max = kLlMaxBws[static_cast<size_t>(gen)][0];  // inside a node: the GPU's row, column N1
  if (kind == CollectiveKind::kAllReduce) append_tree_costs(ring, gen, ranks, 1, ll_max, out);
  for (int p = 0; p < kProtocols; ++p) {
    double bus = ring.channels * ring.bw_intra;
    if (p == protocol_index(NcclProtocol::kLL)) bus = std::min(ll_max, bus * 0.5);
    if (p == protocol_index(NcclProtocol::kLL128)) {
      bus = std::min(bus * 0.92, ring.channels * kPerChRingLl128Bw_GBps[static_cast<size_t>(gen)]);
    }
    NcclCost c;
    c.algorithm = NcclAlgorithm::kRing;
    c.protocol = static_cast<NcclProtocol>(p);
    c.channels = ring.channels;
    c.bandwidth_GBps = bus * n / nsteps;
    const auto pi = static_cast<size_t>(p);
    c.latency_us =
        kRingBaseLatency_us[pi] + (kind == CollectiveKind::kBroadcast ? 1.0 : nsteps) * kRingNvlinkHopLatency_us[pi];
    out.push_back(c);
  }
  // NVLS needs NVSwitch multicast (Hopper and later) and two channels; any
  // number of GPUs on one NVLink domain (an NVL72 rack's 72).
  if (spec.nvls && cc >= 90 && kind != CollectiveKind::kBroadcast) {
    const Graph g = nvls_graph(total, cc, ranks);
    if (g.channels >= 2) {
      double intra = g.bw_intra * kNvlsEfficiency[static_cast<size_t>(gen)] * (g.channels - 1) / g.channels;
      intra *= kind == CollectiveKind::kAllReduce ? 2.0 : (n - 1) / n;
      const double bw = std::min(intra, g.bw_inter);
      NcclCost c;
      c.algorithm = NcclAlgorithm::kNvls;
      c.protocol = NcclProtocol::kSimple;
      c.channels = g.channels;
      const double bus = g.channels * bw;
      c.bandwidth_GBps = kind == CollectiveKind::kAllReduce ? bus * n / nsteps : bus;
      c.latency_us = kNvlsNvlinkLatency_us;
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::vector<NcclCost> nccl_costs(CollectiveKind kind, int64_t ranks, const NcclSpec& spec) {
  return nccl_costs(kind, ranks, 1, spec);
}

// ncclTopoTuneModel across nodes (nNodes > 1, ppn = nRanks / nNodes GPUs
// each; the column N of the per-channel caps is nNodes = 2 or more):
//   Ring: bw per channel as its graph; LL min(llMaxBw, busBw/2), LL128
//     min(0.92·busBw, channels · perChMaxRingLL128Bw); algbw = busBw · nRanks
//     / nsteps. Latency = baseLat + (nsteps - nInterSteps) · max(intraLat,
//     netOverhead) + nInterSteps · interLat, nInterSteps = 2(nNodes-1) for
//     all-reduce and nNodes-1 otherwise; netOverhead 1 us (Intel and other
//     hosts) or 2 (AMD), three times that for Simple; interLat the network's
//     ring latency, the tree's with one GPU per node. Broadcast (channels
//     that differ between nodes): baseLat + nRanks · the network's ring
//     latency (the tree's for Simple).
//   Tree (all-reduce): busBw = min(0.92·channels·bw, channels ·
//     perChMaxTreeBw); LL min(busBw/3.8, llMaxBw); LL128 min(busBw·120/128,
//     channels · perChMaxTreeLL128Bw); algbw = busBw / 2. Latency = baseLat
//     + 2((ppn-1)·intraLat + log2i(nNodes)·interLat). A balanced tree is
//     assumed found (no 0.85 for a plain tree).
//   NVLS-tree (all-reduce, NVLS, ppn >= 2): bw = min(bwIntra · nvlsEfficiency
//     · (ch-1)/ch · 2, bwInter · (2 for two nodes), perChMaxNVLSTreeBw);
//     algbw = ch · bw · nRanks / nsteps; latency = 25 + 2·log2i(nNodes)·20.9.
//   PAT (all-gather, reduce-scatter, one GPU per node): busBw = 0.75 ·
//     channels · bw, kept as algbw; latency = 8 + log2i(nNodes) · interLat /
//     3.5 + 2.8 · nRanks.
//   NVLS alone needs CollNet across nodes and is off, as is CollNet.
std::vector<NcclCost> nccl_costs(CollectiveKind kind, int64_t ranks, int64_t nodes, const NcclSpec& spec) {
  std::vector<NcclCost> out;
  if (nodes <= 1) return single_node_costs(kind, ranks, spec);
  if (!nccl_models(kind) || ranks < 2 || ranks % nodes != 0 || spec.compute_capability <= 0 || spec.nvlink_links <= 0 ||
      !(spec.nic_GBps > 0)) {
    return out;
  }
  const int cc = spec.compute_capability;
  const auto gen = static_cast<size_t>(generation(cc));
  const double total = spec.nvlink_links * nvlink_link_GBps(cc);
  const int64_t ppn = ranks / nodes;
  const auto n = static_cast<double>(ranks);
  const size_t col = nodes <= 2 ? 1 : 2;
  const bool amd = amd_host(cc);
  const double ll_max = kLlMaxBws[amd ? 1 : 0][col];
  const double nsteps = kind == CollectiveKind::kAllReduce   ? 2 * (n - 1)
                        : kind == CollectiveKind::kBroadcast ? n
                                                             : n - 1;
  const double inter_steps =
      kind == CollectiveKind::kAllReduce ? 2.0 * static_cast<double>(nodes - 1) : static_cast<double>(nodes - 1);
  const Graph ring = net_ring_graph(spec, total, ppn);
  if (kind == CollectiveKind::kAllReduce) append_tree_costs(ring, static_cast<int>(gen), ranks, nodes, ll_max, out);
  for (int p = 0; p < kProtocols; ++p) {
    const auto pi = static_cast<size_t>(p);
    double bus = ring.channels * ring.bw_intra;
    if (p == protocol_index(NcclProtocol::kLL)) bus = std::min(ll_max, bus * 0.5);
    if (p == protocol_index(NcclProtocol::kLL128))
      bus = std::min(bus * 0.92, ring.channels * kPerChRingLl128Bw_GBps[gen]);
    NcclCost c;
    c.algorithm = NcclAlgorithm::kRing;
    c.protocol = static_cast<NcclProtocol>(p);
    c.channels = ring.channels;
    c.bandwidth_GBps = bus * n / nsteps;
    const bool simple = p == protocol_index(NcclProtocol::kSimple);
    const double inter_lat = ppn == 1 ? kTreeNetLatency_us[pi] : kRingNetLatency_us[pi];
    if (kind == CollectiveKind::kBroadcast) {
      c.latency_us = kRingBaseLatency_us[pi] + n * (simple ? kTreeNetLatency_us[pi] : kRingNetLatency_us[pi]);
    } else {
      const double overhead = (amd ? 2.0 : 1.0) * (simple ? 3.0 : 1.0);
      const double intra_lat = std::max(kRingNvlinkHopLatency_us[pi], overhead);
      c.latency_us = kRingBaseLatency_us[pi] + (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
    }
    out.push_back(c);
  }
  const int levels = log2i(nodes);
  if (kind == CollectiveKind::kAllReduce) {
    if (spec.nvls && cc >= 90 && ppn >= 2) {
      const Graph g = net_nvls_graph(spec, total, ppn);
      const double intra = g.bw_intra * kNvlsEfficiency[gen] * (g.channels - 1) / g.channels * 2.0;
      const double inter = g.bw_inter * (nodes <= 2 ? 2.0 : 1.0);
      const double bw = std::min({intra, inter, kPerChMaxNvlsTreeBws[gen][col]});
      NcclCost c;
      c.algorithm = NcclAlgorithm::kNvlsTree;
      c.protocol = NcclProtocol::kSimple;
      c.channels = g.channels;
      c.bandwidth_GBps = g.channels * bw * n / nsteps;
      c.latency_us = kNvlsNvlinkLatency_us + 2.0 * levels * kNvlsTreeNetLatency_us;
      out.push_back(c);
    }
  }
  if (ppn == 1 && (kind == CollectiveKind::kAllGather || kind == CollectiveKind::kReduceScatter)) {
    NcclCost c;
    c.algorithm = NcclAlgorithm::kPat;
    c.protocol = NcclProtocol::kSimple;
    c.channels = ring.channels;
    c.bandwidth_GBps = 0.75 * ring.channels * ring.bw_intra;
    const auto simple = static_cast<size_t>(protocol_index(NcclProtocol::kSimple));
    c.latency_us = kPatBaseLatency_us + levels * kTreeNetLatency_us[simple] / 3.5 + 2.8 * n;
    out.push_back(c);
  }
  return out;
}

NcclTiming nccl_time(CollectiveKind kind, Bytes size, int64_t ranks, const NcclSpec& spec) {
  return nccl_time(kind, size, ranks, 1, spec);
}

NcclTiming nccl_time(CollectiveKind kind, Bytes size, int64_t ranks, int64_t nodes, const NcclSpec& spec) {
  const std::vector<NcclCost> costs = nccl_costs(kind, ranks, nodes, spec);
  SHARDSIM_ASSERT(!costs.empty(), "nccl_time needs a collective NCCL models on two or more GPUs");
  NcclTiming t;
  t.cost = costs.front();
  for (const NcclCost& c : costs) {
    if (c.model_us(size) < t.cost.model_us(size)) t.cost = c;
  }
  const auto bytes = static_cast<double>(size.value());
  const auto n = static_cast<double>(ranks);
  const NcclCost& c = t.cost;
  double efficiency = 1.0;
  if (c.protocol == NcclProtocol::kLL) efficiency = spec.ll_efficiency;
  if (c.protocol == NcclProtocol::kLL128) efficiency = spec.ll128_efficiency;
  double units = 0;  // pipelines that run side by side
  if (c.algorithm == NcclAlgorithm::kNvls || c.algorithm == NcclAlgorithm::kNvlsTree) {
    t.channels_used = c.channels;
    units = static_cast<double>(nvls_runtime_channels(spec.compute_capability)) * c.channels;  // channels x heads
    t.chunk_bytes = c.algorithm == NcclAlgorithm::kNvls ? nvls_chunk_bytes(bytes, units)
                                                        : nvls_tree_chunk_bytes(bytes, units, nodes);
  } else {
    // topoGetAlgoInfo: drop channels while bytes < channels · threads ·
    // threshold (ring LL's threshold times nRanks).
    const auto pi = static_cast<size_t>(protocol_index(c.protocol));
    const bool ring_ll = c.algorithm == NcclAlgorithm::kRing && c.protocol == NcclProtocol::kLL;
    const double threshold = kThreadThreshold[pi] * (ring_ll ? n : 1.0);
    int nc = c.channels;
    while (nc > 1 && bytes < nc * kMaxThreads[pi] * threshold) --nc;
    t.channels_used = nc;
    // A ring channel loops over nRanks chunks (broadcast: one) at a time; a
    // tree channel pipelines its share up and down the tree in chunks of
    // its own size; PAT as calcCollChunking sizes its chunks.
    if (c.algorithm == NcclAlgorithm::kTree) {
      t.chunk_bytes = tree_chunk_bytes(c.protocol, bytes, nc, nodes, ranks);
    } else if (c.algorithm == NcclAlgorithm::kPat) {
      t.chunk_bytes = pat_chunk_bytes(kind, bytes, nc, n);
    } else {
      const double slots = kind == CollectiveKind::kBroadcast ? 1.0 : n;
      t.chunk_bytes = std::min(ring_chunk_bytes(c.protocol), bytes / (nc * slots));
    }
    units = nc;
  }
  // GB/s = bytes per ns; bandwidth_speedup is a what-if (1 unless asked).
  const double bw = c.bandwidth_GBps * efficiency * t.channels_used / c.channels * spec.bandwidth_speedup;
  t.transfer_us = bytes / (1000.0 * bw);
  t.fill_us = spec.fill_chunks * t.chunk_bytes / (1000.0 * bw / units);
  t.time_us = c.latency_us + t.transfer_us + t.fill_us;
  return t;
}

}  // namespace shardsim
