// Fabrics: TPU tori and GPU clusters of NVSwitch nodes on a fat tree.
//
// A Topology is immutable: devices, directed links with a bandwidth and a
// latency, and deterministic routes between devices. Collective algorithms in
// sim/ ask it for its structure (torus coordinates, node of a GPU).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardsim/core/units.h"
#include "shardsim/topology/chip.h"

namespace shardsim {

using LinkId = uint32_t;
using DeviceId = uint32_t;

enum class LinkKind : uint8_t { kIci, kNvlink, kNic, kSwitch };
inline constexpr int kLinkKinds = 4;
/// "ici", "nvlink", "nic", "switch".
std::string_view to_string(LinkKind k);

struct LinkSpec {
  BytesPerSec bandwidth{0};  ///< usable one-way bandwidth (line rate · efficiency)
  SimTime latency;
  LinkKind kind = LinkKind::kIci;
};

/// kGraph: read from a graph file or built by a generator (fabric_graph.h);
/// its NVLink domains play the fat tree's nodes.
enum class FabricKind : uint8_t { kTorus, kNvswitchFatTree, kGraph };

/// A torus or mesh of chips. Axis sizes multiply to the device count.
struct TorusSpec {
  std::vector<int64_t> dims;      ///< x first; device id = x + X·(y + Y·z)
  std::vector<bool> wraparound;   ///< per axis
  BytesPerSec link_bandwidth{0};  ///< one direction of one link, line rate
  double link_efficiency = 1.0;
  SimTime hop_latency;
  /// Multislice: this many slices of `dims`, joined by the data-center
  /// network. Each chip reaches the same chip of the other slices through
  /// its share of its host's DCN NICs, modelled as one more torus axis (the
  /// last, wrapping around) whose links run at dcn_bandwidth.
  int64_t dcn_slices = 1;
  BytesPerSec dcn_bandwidth{0};  ///< per chip, one way
  SimTime dcn_latency;
};

/// GPUs in NVSwitch nodes; each GPU has a NIC into a fat tree of leaf
/// switches (and pods under a core tier when tiers == 3).
struct FatTreeSpec {
  int64_t gpus_per_node = 8;
  BytesPerSec nvlink_bandwidth{0};  ///< per GPU, one way, line rate
  double nvlink_efficiency = 1.0;
  SimTime nvlink_latency;        ///< per link (GPU to switch, switch to GPU)
  BytesPerSec nic_bandwidth{0};  ///< per GPU, one way, line rate
  double nic_efficiency = 1.0;
  SimTime nic_latency;         ///< GPU to leaf (and leaf to GPU) link
  SimTime switch_latency;      ///< leaf to spine, spine to core links
  bool rail_optimized = true;  ///< leaf r serves GPU r of each node
  int64_t nics_per_leaf = 32;  ///< down ports of a leaf switch
  int tiers = 2;
  int64_t leaves_per_pod = 16;    ///< tiers == 3 only
  double oversubscription = 1.0;  ///< leaf down capacity / leaf up capacity
};

/// What NCCL's cost model needs to know about a GPU node (sim/nccl_model.h).
/// compute_capability 0 means the fabric's collectives are not NCCL's (CPU
/// hosts, tests of the generic ring model).
struct NcclSpec {
  int compute_capability = 0;  ///< 80 Ampere, 90 Hopper, 100 Blackwell
  int nvlink_links = 0;        ///< NVLinks from a GPU to its node's NVSwitches
  bool nvls = true;            ///< NVLink SHARP may be used (NCCL_NVLS_ENABLE)
  /// A GPU's NIC as NCCL's topology counts it (link speed / 8000, GB/s), one
  /// NIC per GPU (rail-optimized nodes). 0: groups that span nodes keep the
  /// hierarchical rings instead of NCCL's multi-node model.
  double nic_GBps = 0;
  // Realization of NCCL's model: fitted by scripts/fit_nccl.py on the
  // nccl-tests curves in examples/validation/nccl/ (docs/model.md, section 9).
  double ll_efficiency = 0.68;     ///< achieved / NCCL-modelled bandwidth of LL
  double ll128_efficiency = 0.72;  ///< the same for LL128 (Simple is 1)
  double fill_chunks = 2.25;       ///< pipeline fill, in chunks of one channel
  /// What-if only (simulator.speedup "net:nvlink"): NCCL's modelled
  /// bandwidth times this; its latencies and algorithm choice unchanged.
  double bandwidth_speedup = 1.0;
};

/// The custom all-reduce serving engines run inside an NVLink node instead
/// of NCCL for small messages (vLLM csrc/custom_all_reduce.cuh, TensorRT-LLM's
/// oneshot / twoshot kernels): one-shot, every rank reads every peer's whole
/// buffer over NVLink and sums; two-shot, a reduce-scatter then an
/// all-gather over peer-to-peer reads, with a barrier each. max_bytes 0:
/// not used (training, NCCL only). Both engines run a group of two ranks
/// one-shot up to their workspace. Past the one-shot bound vLLM runs
/// two-shot; TensorRT-LLM's engine plugin (AUTO, releases of 2024-25) has
/// two-shot disabled and calls NCCL (two_shot false).
struct CustomAllReduce {
  int64_t max_bytes = 0;           ///< larger messages go to NCCL (vLLM 8 MiB; TensorRT-LLM 8 MB)
  int64_t one_shot_max_bytes = 0;  ///< one-shot below, beyond one_shot_max_ranks (vLLM 256 KiB)
  int one_shot_max_ranks = 4;      ///< groups up to this size use one_shot_small_max_bytes
  int64_t one_shot_small_max_bytes = 0;
  double one_shot_latency_us = 0;  ///< fixed time of a one-shot call (launch, flag exchange)
  double two_shot_latency_us = 0;  ///< the same for two-shot (two barriers)
  int64_t pair_max_bytes = 0;      ///< the workspace for a group of two ranks (0: max_bytes; TensorRT-LLM 16 MB)
  bool two_shot = true;            ///< past the one-shot bound: two-shot, or NCCL when false
};

/// Fixed costs of a collective beyond its bytes over the links.
struct CollectiveCosts {
  /// Paid once per collective call (NCCL's base latency).
  SimTime base_latency;
  /// Data one pipelined ring step moves before the next rank can forward it:
  /// a ring of r ranks fills its pipeline in (r-1) steps of this size, i.e.
  /// (r-1)·chunk/B on top of the α-β time (Patarasuk & Yuan 2009). 0: no fill.
  Bytes pipeline_chunk{0};
  /// Single-node GPU collectives follow NCCL's cost model when set; the
  /// latency and chunk above then apply only to other groups.
  NcclSpec nccl;
  /// Small all-reduces of a serving engine inside an NVLink node.
  CustomAllReduce custom_all_reduce;
};

class Topology {
 public:
  virtual ~Topology() = default;
  virtual FabricKind kind() const = 0;
  virtual int64_t num_devices() const = 0;
  size_t num_links() const { return links_.size(); }
  const LinkSpec& link(LinkId id) const { return links_[id]; }
  /// Appends the links from src to dst (empty when src == dst).
  virtual void route(DeviceId src, DeviceId dst, std::vector<LinkId>& out) const = 0;
  /// Whether a flow is split over several paths (a graph fabric with ecmp
  /// "split"); route() then gives one representative path of them.
  virtual bool splits_flows() const { return false; }
  /// The links a flow from src to dst crosses and the fraction of its bytes
  /// each carries, appended to the two lists: the links of route() with
  /// fraction 1, unless splits_flows().
  virtual void route_split(DeviceId src, DeviceId dst, std::vector<LinkId>& links,
                           std::vector<double>& fractions) const {
    const size_t first = links.size();
    route(src, dst, links);
    fractions.resize(fractions.size() + links.size() - first, 1.0);
  }
  /// Human-readable name of a link for traces and errors.
  virtual std::string link_name(LinkId id) const = 0;

  // Structure, for collective algorithms.
  /// Torus: coordinates and axis sizes. Empty for other fabrics.
  virtual std::vector<int64_t> dims() const { return {}; }
  virtual std::vector<bool> wraparound() const { return {}; }
  virtual int64_t coord(DeviceId, int /*axis*/) const { return 0; }
  /// What-if (simulator.speedup "net:KIND"): every link of a kind carries
  /// factor[kind] times its bandwidth; latencies unchanged. For the
  /// scenario loader, right after construction.
  void speed_up_links(const std::array<double, kLinkKinds>& factor);

  /// A link's image that a network may leave out (permute_links).
  static constexpr LinkId kUnboundLink = ~LinkId{0};
  /// For the engine's symmetry reduction (sim/src/symmetry.h): whether the
  /// device permutation `perm` (perm[d] is d's image) maps the fabric's
  /// rates onto themselves. If it does, `links` gets each link's image, so
  /// that for every pair the links of route(perm[s], perm[d]) are the
  /// images of those of route(s, d), in order, with the same bandwidths;
  /// a link that can never limit a rate (it can carry all that the links
  /// feeding it can deliver) may instead get kUnboundLink, and the network
  /// may then leave it out. Latencies are not compared here: the engine
  /// compares those of the routes and collective plans a step uses.
  /// Fabrics without the structure to tell (graph files) answer false.
  virtual bool permute_links(std::span<const DeviceId> perm, std::vector<LinkId>& links) const {
    (void)perm;
    links.clear();
    return false;
  }

  /// GPU clusters: NVSwitch node of a device; tori: 0.
  virtual int64_t node_of(DeviceId) const { return 0; }
  virtual int64_t gpus_per_node() const { return 1; }

 protected:
  std::vector<LinkSpec> links_;
};

std::unique_ptr<Topology> make_torus(const TorusSpec& spec);
std::unique_ptr<Topology> make_fat_tree(const FatTreeSpec& spec, int64_t devices);

}  // namespace shardsim
