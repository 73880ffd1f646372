// Communicator groups of a Chakra trace (private to interop/): the groups
// comm_groups.json or a PyTorch trace's process-group metadata names, and
// the table that numbers them as collectives first use them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "et_def.pb.h"

namespace shardsim::chakra::detail {

/// Groups named by a PyTorch trace's process-group metadata node
/// (inputs.values holds a JSON list of {"pg_name", "ranks", ...}, as
/// Python writes the list of one string: ['[...]']; empty ranks: every
/// rank). Empty when the node holds none.
std::map<std::string, std::vector<int64_t>> process_groups(const ChakraProtoMsg::Node& n);

/// comm_groups.json: {"<id>": [ranks], ...}, each rank of the trace's
/// `ranks` at most once; throws InputError(file, /<id>[/i], ...) otherwise.
std::map<std::string, std::vector<int64_t>> read_groups_file(const std::string& file, const std::string& text,
                                                             int64_t ranks);

/// The communicator groups collectives name by pg_name: "" and "0" are
/// every rank (ASTRA-sim's default group), others come from
/// comm_groups.json or a PyTorch process-group metadata node. Numbered as
/// first used (ProgramSet::groups).
class GroupTable {
 public:
  GroupTable(int64_t ranks, std::map<std::string, std::vector<int64_t>> named, std::string source)
      : ranks_(ranks), named_(std::move(named)), source_(std::move(source)) {}
  /// The index of group `name`; throws InputError at the node when it is
  /// unknown or `rank` is not in it.
  int32_t use(const std::string& name, int64_t rank, const std::string& file, const std::string& where);
  const std::vector<std::vector<uint32_t>>& list() const { return list_; }
  const std::string& name(size_t g) const { return names_[g]; }

 private:
  int64_t ranks_;
  std::map<std::string, std::vector<int64_t>> named_;
  std::string source_;
  std::map<std::string, int32_t> index_;
  std::vector<std::vector<uint32_t>> list_;
  std::vector<std::string> names_;
};

}  // namespace shardsim::chakra::detail
