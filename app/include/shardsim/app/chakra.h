// A scenario's step written as a Chakra execution trace: one file per rank
// (what `shardsim export chakra` writes; ASTRA-sim and other simulators read
// it), with the communicator groups and a scenario that runs it back
// (`shardsim simulate DIR`). Conventions in docs/chakra.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "shardsim/workloads/scenario.h"

namespace shardsim {

struct ChakraExportOptions {
  std::string prefix = "shardsim";  ///< files PREFIX.<rank>.et
  /// Called after each rank's file with (ranks written, ranks): a face's
  /// progress bar.
  std::function<void(int64_t, int64_t)> progress;
};

struct ChakraExportSummary {
  std::string dir;
  std::string prefix;
  int64_t ranks = 0;
  int64_t nodes = 0;   ///< over every rank
  int64_t groups = 0;  ///< communicator groups
  int64_t bytes = 0;   ///< of the rank files
  double wall_s = 0;
};

/// Lowers `s` and writes its step into `dir`, which must not exist or be
/// empty: PREFIX.<rank>.et for every device (chakra::encode_rank: compute
/// nodes with their time alone on the scenario's chip), comm_groups.json
/// (ASTRA-sim's --comm-group-configuration) and scenario.json (the
/// scenario's cluster and simulator with this directory as its workload;
/// its files named by absolute paths). Everything is written beside `dir`
/// first and renamed into place, so an error leaves nothing. Throws
/// UsageError (a directory in the way, a trace scenario) or InputError.
ChakraExportSummary export_chakra(const Scenario& s, const std::string& dir, const ChakraExportOptions& options = {});

/// A summary of it for the command line, and as one JSON object (dir,
/// prefix, ranks, nodes, groups, bytes, wall_s).
std::string chakra_export_summary_text(const ChakraExportSummary& r);
std::string chakra_export_summary_json(const ChakraExportSummary& r);

}  // namespace shardsim
