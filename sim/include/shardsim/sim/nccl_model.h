// NCCL's own cost model for collectives inside one NVSwitch node or across
// whole nodes, and how long they really take.
//
// NCCL picks an algorithm (ring, NVLS; across nodes also tree, NVLS-tree and,
// with one GPU per node, PAT) and a protocol (LL, LL128, Simple) for every
// call from a table of latencies and bandwidths it builds at start-up
// (src/graph/tuning.cc, ncclTopoTuneModel), from the channels its topology
// search found (src/graph/search.cc) and its per-link NVLink, PCIe and NIC
// figures (src/graph/topo.h, topo.cc). nccl_costs() rebuilds that table;
// nccl_time() picks the entry NCCL would pick and times it as it runs: the
// protocol's achieved bandwidth, the channels NCCL really uses at that size
// and the pipeline fill of its chunks (src/enqueue.cc). Numbers are quoted
// from NVIDIA/nccl at 5067397 (June 2026).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/core/units.h"
#include "shardsim/topology/topology.h"

namespace shardsim {

enum class NcclAlgorithm : uint8_t { kRing, kNvls, kTree, kNvlsTree, kPat };
enum class NcclProtocol : uint8_t { kLL, kLL128, kSimple };

std::string_view to_string(NcclAlgorithm a);
std::string_view to_string(NcclProtocol p);

/// One entry of NCCL's table for a collective on `ranks` GPUs.
struct NcclCost {
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  double latency_us = 0;      ///< comm->latencies[coll][algo][proto]
  double bandwidth_GBps = 0;  ///< comm->bandwidths[...]: algorithm bandwidth
  int channels = 0;           ///< channels of the algorithm's graph
  /// NCCL's estimate (ncclTopoGetAlgoTime): latency + bytes / bandwidth.
  double model_us(Bytes size) const;
};

/// The entries NCCL enables for `kind` (all-reduce, all-gather,
/// reduce-scatter, broadcast) on `ranks` GPUs spread evenly over `nodes`
/// NVSwitch nodes (ranks / nodes GPUs each, every GPU with its own NIC), in
/// NCCL's algorithm-then-protocol order. Empty for other kinds, ranks < 2,
/// ranks not a multiple of nodes, or several nodes without spec.nic_GBps.
std::vector<NcclCost> nccl_costs(CollectiveKind kind, int64_t ranks, int64_t nodes, const NcclSpec& spec);
/// The same inside one node.
std::vector<NcclCost> nccl_costs(CollectiveKind kind, int64_t ranks, const NcclSpec& spec);

/// A collective as NCCL runs it: the entry it picks (least model_us; the
/// first on ties, as NCCL's strict `<` does) and its realized time
///   time = latency + bytes / (bandwidth · efficiency · used/graph channels)
///          + fill_chunks · chunk / (that bandwidth / parallel units),
/// where efficiency is 1 for Simple and the spec's LL / LL128 figure, the
/// used channels are NCCL's per-size reduction (enqueue.cc topoGetAlgoInfo),
/// chunk is NCCL's chunk at that size (calcCollChunking) and the parallel
/// units are the channels (ring, tree, PAT) or channels x heads (NVLS,
/// NVLS-tree). The realization figures were fitted inside one node; across
/// nodes they are applied unchecked (no multi-node curve is in the
/// references).
struct NcclTiming {
  NcclCost cost;
  int channels_used = 0;
  double chunk_bytes = 0;
  double transfer_us = 0;  ///< bytes over the realized bandwidth
  double fill_us = 0;
  double time_us = 0;  ///< latency + transfer + fill
};
NcclTiming nccl_time(CollectiveKind kind, Bytes size, int64_t ranks, int64_t nodes, const NcclSpec& spec);
NcclTiming nccl_time(CollectiveKind kind, Bytes size, int64_t ranks, const NcclSpec& spec);

/// Whether nccl_time models `kind` (all-to-all and point-to-point are not
/// NCCL collectives with a tuning model).
bool nccl_models(CollectiveKind kind);

}  // namespace shardsim
