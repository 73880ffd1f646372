// One collective alone on a fabric, reported the way nccl-tests reports it
// (algbw and busbw: sim/collective.h), at one size or over a sweep of sizes.
// What `shardsim collective` and `shardsim.collective` call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shardsim/workloads/scenario.h"

namespace shardsim {

struct CollectiveRequest {
  std::string op;                    ///< all-reduce, all-gather, reduce-scatter, all-to-all, broadcast
  std::vector<int64_t> sizes_bytes;  ///< one size, or a sweep (sweep_sizes in sim/collective.h)
  /// "all" (every device), "tp" or "dp" (the scenario plan's group of device
  /// 0: needs a scenario), or a device count that divides the cluster.
  std::string group = "all";
  bool concurrent = false;  ///< every group of that shape at once, sharing the fabric
  bool sweep = false;       ///< report as a table of sizes (nccl-tests' -b/-e/-f)
  bool nccl_table = false;  ///< also report NCCL's tuning table for the group
};

/// One entry of NCCL's tuning table (sim/nccl_model.h NcclCost): what NCCL
/// logs per algorithm and protocol with NCCL_DEBUG_SUBSYS=TUNING.
struct NcclTableRow {
  std::string algorithm;
  std::string protocol;
  int channels = 0;
  double latency_us = 0;
  double bandwidth_GBps = 0;  ///< algorithm bandwidth
};

struct CollectivePoint {
  int64_t bytes = 0;
  std::string algorithm;  ///< the algorithm and protocol chosen
  double time_s = 0;
  double algbw_GBps = 0;  ///< bytes / time
  double busbw_GBps = 0;  ///< algbw x nccl-tests' bus factor
  uint64_t flows = 0;
};

struct CollectiveResult {
  std::string op;
  int64_t group_size = 0;
  int64_t groups_running = 1;
  bool concurrent = false;
  bool sweep = false;
  std::vector<CollectivePoint> points;
  bool nccl_table_asked = false;
  /// The nodes NCCL's model sees for the group (sim/collective.h nccl_nodes):
  /// 0 when the group's plan does not come from NCCL's model.
  int64_t nccl_nodes = 0;
  std::vector<NcclTableRow> nccl_table;
};

/// The sizes of a sweep from `min_bytes` to `max_bytes`, each `factor` times
/// the last (sim/collective.h sweep_sizes), after the checks both faces
/// share: 1 <= min <= max, factor in [1.01, 1024], at most 4096 sizes.
/// Throws UsageError.
std::vector<int64_t> collective_sweep_sizes(int64_t min_bytes, int64_t max_bytes, double factor);

/// Times `request` on `input`: a scenario file (its cluster, and its plan for
/// tp / dp groups), a cluster file or a cluster preset name, with `overrides`
/// applied. Throws InputError for a bad file, UsageError for a bad request.
CollectiveResult time_collective(const std::string& input, const std::vector<Override>& overrides,
                                 const CollectiveRequest& request);
/// The same on a cluster in memory; `plan` (may be null) gives tp / dp groups.
CollectiveResult time_collective(const ClusterSpec& cluster, const Plan* plan, const CollectiveRequest& request);

/// `shardsim collective --json` and its table or line.
std::string collective_json(const CollectiveResult& r);
std::string collective_text(const CollectiveResult& r);

}  // namespace shardsim
