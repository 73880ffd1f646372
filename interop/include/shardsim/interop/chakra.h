// Chakra execution traces (MLCommons' interchange format for distributed
// training workloads; schema in interop/proto/et_def.proto): a step's
// per-rank programs written one file per rank, as ASTRA-sim reads them, and
// a directory of such files (shardsim's or a converted PyTorch run's) read
// back as per-rank programs (ProgramSet::per_rank). docs/chakra.md has the
// conventions; protobuf stays inside interop/src.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "shardsim/core/program.h"

namespace shardsim::chakra {

/// A rank's memory as shardsim's memory model sees it (workloads/memory.h
/// StageMemoryModel), carried in its file's metadata: what the step holds
/// besides the program's memory events, and how the report is finished.
struct RankMemory {
  bool present = false;                                   ///< false: the trace says nothing of memory
  std::vector<std::pair<std::string, int64_t>> resident;  ///< components, bytes
  bool walk_program = false;                              ///< + the program's events and working sets
  bool finish = false;                                    ///< + allocator overhead and framework reserve
  double allocator_overhead = 0;
  int64_t reserved_bytes = 0;
};

/// What shardsim writes into a rank's GlobalMetadata beyond the schema
/// (attributes named "shardsim.*"); a foreign trace has none of it.
struct RankMeta {
  std::string model;            ///< the model the step runs
  int64_t tokens_per_step = 0;  ///< 0: unknown
  bool pipelined = false;       ///< idle time is pipeline bubble
  RankMemory memory;
  /// A foreign trace whose nodes name device tensors (a converted PyTorch
  /// trace's inputs and outputs): the program carries their memory events,
  /// each storage live from the first op naming it to the last.
  bool traced_tensors = false;
};

/// One rank's file to write.
struct RankFile {
  int64_t rank = 0;
  const Program* program = nullptr;  ///< per rank (rank_program): groups and peers named
  /// Per op: a compute op's time alone on the step's chip (its
  /// duration_micros, rounded up, and shardsim.duration_ps exactly).
  std::vector<SimTime> alone;
  RankMeta meta;
};

/// The rank's file: GlobalMetadata (version "1.0.0") then one Node per op,
/// each prefixed by its length (varint32). A node's id is its op's index,
/// its data_deps the op's dependencies (stream order included, as
/// ASTRA-sim has no streams); collectives name group i of `groups` as
/// pg_name "i+1" (0 means every rank to ASTRA-sim); every op carries
/// shardsim.* attributes from which an import rebuilds it exactly.
std::string encode_rank(const RankFile& f, const std::vector<std::vector<uint32_t>>& groups);

/// ASTRA-sim's --comm-group-configuration: {"1": [ranks], ...}, group i of
/// `groups` as "i+1".
std::string comm_groups_json(const std::vector<std::vector<uint32_t>>& groups);

/// A rank's file name: PREFIX.RANK.et (ASTRA-sim's
/// --workload-configuration=DIR/PREFIX reads DIR/PREFIX.<rank>.et).
std::string rank_file_name(const std::string& prefix, int64_t rank);

struct ReadOptions {
  /// Compute nodes that carry FLOPs or bytes (num_ops, tensor_size, or
  /// shardsim's description) take the compute model's time on the cluster's
  /// chip instead of their recorded duration (a trace captured on one
  /// chip replayed on another).
  bool retime = false;
  /// The cluster's devices: rank r runs on device r; there must be at
  /// least as many devices as ranks (the rest stay idle).
  int64_t devices = 0;
};

/// A trace read back.
struct Trace {
  ProgramSet programs;  ///< per rank; devices beyond the ranks run an empty program
  int64_t ranks = 0;
  std::vector<RankMeta> meta;                  ///< per rank
  std::vector<std::vector<uint64_t>> node_of;  ///< per rank, per op: the node it came from
  std::vector<std::string> files;              ///< per rank: its file
  std::string prefix;                          ///< of the files' names
  std::string producer;                        ///< the version or schema the files name
  int64_t nodes = 0;                           ///< nodes read (metadata and invalid ones included)
  uint64_t content_hash = 0;                   ///< FNV-1a 64 of the files' bytes, in rank order
};

/// Reads every PREFIX.<rank>.et (or .et.gz; gzip is detected by its magic)
/// of `dir`, ranks 0..n-1 of one prefix, with the communicator groups of
/// DIR/comm_groups.json or of a PyTorch trace's process-group metadata node.
/// Checks what a run needs, with Boost.Graph where it is a graph: a known
/// schema version, node types shardsim runs, attributes of the right types,
/// no duplicate ids, no dependency on a missing node, no cycle, groups that
/// exist and hold their members, collectives that agree across a group
/// (count, type, size), sends and receives that pair up. Throws InputError
/// naming the file, the node and what was expected.
Trace read_trace(const std::string& dir, const ReadOptions& options);

/// Where read_trace(TraceSource) takes a trace's bytes from: rank r's file
/// is named files[r] (for messages) and its bytes are bytes_of(r) (asked
/// for when needed, possibly twice, so that a large trace is never held
/// whole); groups_json, when set, is the text of comm_groups.json, named
/// groups_file. What the fuzzer reads from memory.
struct TraceSource {
  std::string where;   ///< the directory, for messages about the whole trace
  std::string prefix;  ///< of the files' names
  std::vector<std::string> files;
  std::function<std::string(size_t)> bytes_of;
  std::string groups_file;
  const std::string* groups_json = nullptr;
};
/// read_trace(dir, options) with the files given.
Trace read_trace(const TraceSource& source, const ReadOptions& options);

/// A rank's file as text: "# GlobalMetadata" and each "# Node" on a line,
/// then the message in protobuf text format. For reading a trace and for
/// writing one by hand (text_to_et turns it back into a file).
std::string et_to_text(const std::string& bytes, const std::string& name);
/// Throws InputError naming `name`, the message and the line.
std::string text_to_et(const std::string& text, const std::string& name);

}  // namespace shardsim::chakra
