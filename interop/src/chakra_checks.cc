// Cross-rank checks of a Chakra trace (chakra_checks.h).
#include "chakra_checks.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "chakra_io.h"
#include "shardsim/core/error.h"

namespace shardsim::chakra::detail {
namespace {

std::string coll_name(int64_t kind) {
  return std::string(to_string(static_cast<CollectiveKind>(kind)));
}

std::string describe(const CommRecord& c, bool collective) {
  return (collective ? coll_name(c.a) : std::string("transfer")) + " of " + std::to_string(c.bytes) + " bytes";
}

}  // namespace

void check_collectives(const std::vector<RankBuild>& ranks, const GroupTable& groups) {
  const auto& list = groups.list();
  for (size_t g = 0; g < list.size(); ++g) {
    const std::string gname = "\"" + groups.name(g) + "\"";
    std::vector<const CommRecord*> first;
    const RankBuild& r0 = ranks[list[g][0]];
    for (const CommRecord& c : r0.colls) {
      if (c.group == g) first.push_back(&c);
    }
    for (size_t i = 1; i < list[g].size(); ++i) {
      const uint32_t m = list[g][i];
      size_t k = 0;
      for (const CommRecord& c : ranks[m].colls) {
        if (c.group != g) continue;
        if (k == first.size()) {
          throw InputError(ranks[m].file, node_path(c.node),
                           "collective " + std::to_string(k + 1) + " on group " + gname + " has no match: rank " +
                               std::to_string(list[g][0]) + " runs " + std::to_string(first.size()) + " on it");
        }
        const CommRecord& f = *first[k];
        if (c.a != f.a || c.bytes != f.bytes) {
          throw InputError(ranks[m].file, node_path(c.node),
                           "collective " + std::to_string(k + 1) + " on group " + gname + " is " + describe(c, true) +
                               ", rank " + std::to_string(list[g][0]) + "'s (node " + std::to_string(f.node) + ") " +
                               describe(f, true));
        }
        ++k;
      }
      if (k != first.size()) {
        // The first collective of the group's first rank that rank m lacks.
        throw InputError(r0.file, node_path(first[k]->node),
                         "collective " + std::to_string(k + 1) + " on group " + gname + " has no match: rank " +
                             std::to_string(m) + " (" + std::filesystem::path(ranks[m].file).filename().string() +
                             ") runs " + std::to_string(k) + " on it");
      }
    }
  }
}

void check_transfers(const std::vector<RankBuild>& ranks) {
  using Key = std::tuple<int64_t, int64_t, int64_t>;  // sender, receiver, tag
  std::map<Key, std::pair<std::vector<const CommRecord*>, std::vector<const CommRecord*>>> channels;
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (const CommRecord& c : ranks[r].sends) channels[{static_cast<int64_t>(r), c.a, c.tag}].first.push_back(&c);
    for (const CommRecord& c : ranks[r].recvs) channels[{c.a, static_cast<int64_t>(r), c.tag}].second.push_back(&c);
  }
  for (const auto& [key, ends] : channels) {
    const auto [src, dst, tag] = key;
    const auto& [sends, recvs] = ends;
    const std::string ch =
        "rank " + std::to_string(src) + " to rank " + std::to_string(dst) + " with tag " + std::to_string(tag);
    for (size_t k = 0; k < std::min(sends.size(), recvs.size()); ++k) {
      if (sends[k]->bytes != recvs[k]->bytes) {
        throw InputError(ranks[static_cast<size_t>(dst)].file, node_path(recvs[k]->node),
                         "receive " + std::to_string(k + 1) + " from " + ch + " is of " +
                             std::to_string(recvs[k]->bytes) + " bytes, the send (node " +
                             std::to_string(sends[k]->node) + ") of " + std::to_string(sends[k]->bytes));
      }
    }
    if (sends.size() > recvs.size()) {
      throw InputError(ranks[static_cast<size_t>(src)].file, node_path(sends[recvs.size()]->node),
                       "a send from " + ch + " that no receive meets (" + std::to_string(sends.size()) + " sends, " +
                           std::to_string(recvs.size()) + " receives)");
    }
    if (recvs.size() > sends.size()) {
      throw InputError(ranks[static_cast<size_t>(dst)].file, node_path(recvs[sends.size()]->node),
                       "a receive from " + ch + " that no send meets (" + std::to_string(sends.size()) + " sends, " +
                           std::to_string(recvs.size()) + " receives)");
    }
  }
}

}  // namespace shardsim::chakra::detail
