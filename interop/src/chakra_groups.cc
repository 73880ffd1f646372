// Communicator groups of a Chakra trace (chakra_groups.h).
#include "chakra_groups.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "shardsim/core/error.h"

namespace shardsim::chakra::detail {

// Groups named by a PyTorch trace's process-group metadata node
// (inputs.values holds a JSON list of {"pg_name", "ranks", ...}, as
// Python writes the list of one string: ['[...]']; empty ranks: every
// rank). Empty when the node holds none.
std::map<std::string, std::vector<int64_t>> process_groups(const ChakraProtoMsg::Node& n) {
  std::map<std::string, std::vector<int64_t>> out;
  std::string text = n.inputs().values();
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() && text.size() >= 4) j = nlohmann::json::parse(text.substr(2, text.size() - 4), nullptr, false);
  if (j.is_array() && j.size() == 1 && j[0].is_string())
    j = nlohmann::json::parse(j[0].get<std::string>(), nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& pg : j) {
    if (!pg.is_object() || !pg.contains("pg_name") || !pg.contains("ranks") || !pg["ranks"].is_array()) continue;
    const std::string name = pg["pg_name"].is_string() ? pg["pg_name"].get<std::string>() : pg["pg_name"].dump();
    std::vector<int64_t> ranks;
    for (const auto& r : pg["ranks"]) {
      if (!r.is_number_integer()) return {};
      ranks.push_back(r.get<int64_t>());
    }
    out[name] = ranks;
  }
  return out;
}

// comm_groups.json: {"<id>": [ranks], ...}.
std::map<std::string, std::vector<int64_t>> read_groups_file(const std::string& file, const std::string& text,
                                                             int64_t ranks) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw InputError(file, "", "expected a JSON object of groups: {\"1\": [0, 1], ...}");
  }
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& [name, members] : j.items()) {
    if (!members.is_array() || members.empty()) {
      throw InputError(file, "/" + name, "expected a non-empty array of ranks");
    }
    std::set<int64_t> seen;
    std::vector<int64_t>& list = out[name];
    for (size_t i = 0; i < members.size(); ++i) {
      const auto& r = members[i];
      if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() >= ranks) {
        throw InputError(file, "/" + name + "/" + std::to_string(i),
                         "expected a rank of the trace (0.." + std::to_string(ranks - 1) + ")");
      }
      if (!seen.insert(r.get<int64_t>()).second) {
        throw InputError(file, "/" + name + "/" + std::to_string(i), "rank " + r.dump() + " is listed twice");
      }
      list.push_back(r.get<int64_t>());
    }
  }
  return out;
}

int32_t GroupTable::use(const std::string& name, int64_t rank, const std::string& file, const std::string& where) {
  auto [it, fresh] = index_.try_emplace(name, static_cast<int32_t>(list_.size()));
  if (fresh) {
    std::vector<uint32_t> members;
    if (name.empty() || name == "0") {
      for (int64_t r = 0; r < ranks_; ++r) members.push_back(static_cast<uint32_t>(r));
    } else {
      const auto g = named_.find(name);
      if (g == named_.end()) {
        index_.erase(it);
        throw InputError(file, where + "/pg_name",
                         "group \"" + name + "\" is not defined (" +
                             (source_.empty() ? "the trace has no comm_groups.json and no process-group metadata"
                                              : "not in " + source_) +
                             ")");
      }
      for (int64_t r : g->second) members.push_back(static_cast<uint32_t>(r));
      if (members.empty()) {
        for (int64_t r = 0; r < ranks_; ++r) members.push_back(static_cast<uint32_t>(r));
      }
    }
    list_.push_back(std::move(members));
    names_.push_back(name);
  }
  const auto& m = list_[static_cast<size_t>(it->second)];
  if (std::find(m.begin(), m.end(), static_cast<uint32_t>(rank)) == m.end()) {
    throw InputError(
        file, where + "/pg_name",
        "rank " + std::to_string(rank) + " runs a collective of group \"" + name + "\", which does not hold it");
  }
  return it->second;
}

}  // namespace shardsim::chakra::detail
