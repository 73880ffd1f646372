// Reading a directory of Chakra execution traces as per-rank programs
// (chakra.h; the conventions are in docs/chakra.md): the ranks' files
// found and hashed, their communicator groups, each rank read
// (rank_reader.h), then the checks across ranks.

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <string_view>
#include <vector>

#include "chakra_checks.h"
#include "chakra_groups.h"
#include "chakra_io.h"
#include "rank_reader.h"
#include "shardsim/core/error.h"
#include "shardsim/core/read_file.h"
#include "shardsim/interop/chakra.h"

namespace shardsim::chakra {

namespace {

using ChakraProtoMsg::Node;
using detail::GroupTable;
using detail::RankBuild;
namespace fs = std::filesystem;

/// FNV-1a over 8-byte words (then the tail's bytes): a content hash of
/// hundreds of megabytes at memory speed.
uint64_t fnv(uint64_t h, const std::string& bytes) {
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
  }
  for (; i < bytes.size(); ++i) h = (h ^ static_cast<unsigned char>(bytes[i])) * 0x100000001b3ull;
  return h;
}

/// The ranks' files of `dir`: PREFIX.<rank>.et or .et.gz, one prefix,
/// ranks 0..n-1.
/// A rank file's name, PREFIX.RANK.et or PREFIX.RANK.et.gz (RANK 1 to 9
/// digits, PREFIX not empty): its prefix and rank; false for another name.
bool rank_file_name_parts(std::string_view f, std::string& prefix, int64_t& rank) {
  for (std::string_view tail : {std::string_view(".et.gz"), std::string_view(".et")}) {
    if (f.size() <= tail.size() || f.substr(f.size() - tail.size()) != tail) continue;
    const std::string_view stem = f.substr(0, f.size() - tail.size());
    const size_t dot = stem.rfind('.');
    if (dot == std::string_view::npos || dot == 0) return false;
    const std::string_view digits = stem.substr(dot + 1);
    if (digits.empty() || digits.size() > 9) return false;
    rank = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      rank = rank * 10 + (c - '0');
    }
    prefix = std::string(stem.substr(0, dot));
    return true;
  }
  return false;
}

std::vector<std::string> rank_files(const std::string& dir, std::string& prefix) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir, "", "expected a directory of Chakra traces");
  std::map<int64_t, std::string> by_rank;
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(dir, ec)) entries.push_back(e.path().filename().string());
  if (ec) throw InputError(dir, "", "cannot list the directory: " + ec.message());
  std::sort(entries.begin(), entries.end());
  for (const std::string& f : entries) {
    std::string p;
    int64_t r = 0;
    if (!rank_file_name_parts(f, p, r)) continue;
    if (prefix.empty()) prefix = p;
    if (p != prefix) throw InputError(dir, "", "files of two traces: " + prefix + ".*.et and " + p + ".*.et");
    if (!by_rank.try_emplace(r, (fs::path(dir) / f).string()).second) {
      throw InputError(dir, "", "rank " + std::to_string(r) + " has two files (" + f + ")");
    }
  }
  if (by_rank.empty()) throw InputError(dir, "", "no Chakra trace files (PREFIX.<rank>.et) in the directory");
  std::vector<std::string> out;
  for (const auto& [r, f] : by_rank) {
    if (r != static_cast<int64_t>(out.size())) {
      throw InputError(dir, "",
                       "ranks 0.." + std::to_string(by_rank.rbegin()->first) + " expected, rank " +
                           std::to_string(out.size()) + " has no file");
    }
    out.push_back(f);
  }
  return out;
}

}  // namespace

Trace read_trace(const std::string& dir, const ReadOptions& opt) {
  TraceSource src;
  src.where = dir;
  src.files = rank_files(dir, src.prefix);
  src.bytes_of = [&](size_t r) { return read_file_text(src.files[r]); };
  const std::string groups_file = (fs::path(dir) / "comm_groups.json").string();
  std::error_code ec;
  std::string groups_text;
  if (fs::exists(groups_file, ec)) {
    groups_text = read_file_text(groups_file);
    src.groups_file = groups_file;
    src.groups_json = &groups_text;
  }
  return read_trace(src, opt);
}

Trace read_trace(const TraceSource& src, const ReadOptions& opt) {
  Trace t;
  const std::string& dir = src.where;
  const std::vector<std::string>& files = src.files;
  t.prefix = src.prefix;
  if (files.empty()) throw InputError(dir, "", "no Chakra trace files (PREFIX.<rank>.et)");
  t.ranks = static_cast<int64_t>(files.size());
  if (opt.devices > 0 && t.ranks > opt.devices) {
    throw InputError(
        dir, "",
        "the trace has " + std::to_string(t.ranks) + " ranks, the cluster " + std::to_string(opt.devices) + " devices");
  }
  uint64_t hash = 0xcbf29ce484222325ull;
  // Groups: comm_groups.json, else the process groups a PyTorch trace's
  // metadata nodes name (a first pass over the files).
  std::map<std::string, std::vector<int64_t>> named;
  std::string source;
  if (src.groups_json != nullptr) {
    hash = fnv(hash, *src.groups_json);
    named = detail::read_groups_file(src.groups_file, *src.groups_json, t.ranks);
    source = "comm_groups.json";
  } else {
    for (size_t r = 0; r < files.size(); ++r) {
      const detail::Messages m = detail::decode(src.bytes_of(r), files[r]);
      for (const Node* n : m.nodes) {
        if (n->type() != ChakraProtoMsg::METADATA_NODE) continue;
        for (auto& [name, ranks] : detail::process_groups(*n)) named.try_emplace(name, ranks);
      }
    }
    for (const auto& [name, ranks] : named) {
      for (int64_t r : ranks) {
        if (r < 0 || r >= t.ranks) {
          throw InputError(
              dir, "",
              "process group \"" + name + "\" names rank " + std::to_string(r) + " of " + std::to_string(t.ranks));
        }
      }
    }
    if (!named.empty()) source = "the process-group metadata";
  }
  GroupTable groups(t.ranks, named, source);
  std::vector<RankBuild> ranks;
  ranks.reserve(files.size());
  for (size_t r = 0; r < files.size(); ++r) {
    const std::string bytes = src.bytes_of(r);
    hash = fnv(hash, bytes);
    const detail::Messages m = detail::decode(bytes, files[r]);
    t.nodes += static_cast<int64_t>(m.nodes.size());
    ranks.push_back(detail::read_rank(m, files[r], static_cast<int64_t>(r), t.ranks, opt, groups, t.producer));
  }
  detail::check_collectives(ranks, groups);
  detail::check_transfers(ranks);
  for (size_t r = 0; r < ranks.size(); ++r) {
    t.programs.stages.push_back(std::move(ranks[r].program));
    t.programs.program_of.push_back(static_cast<uint32_t>(r));
    t.programs.pipelined = t.programs.pipelined || ranks[r].meta.pipelined;
    t.meta.push_back(std::move(ranks[r].meta));
    t.node_of.push_back(std::move(ranks[r].node_of));
    t.files.push_back(files[r]);
  }
  // Devices beyond the ranks idle.
  if (opt.devices > t.ranks) {
    ProgramBuilder idle;
    idle.add_stream("compute");
    t.programs.stages.push_back(std::move(idle).finish());
    for (int64_t d = t.ranks; d < opt.devices; ++d) {
      t.programs.program_of.push_back(static_cast<uint32_t>(t.ranks));
    }
  }
  t.programs.groups = groups.list();
  t.content_hash = hash;
  return t;
}

}  // namespace shardsim::chakra
