#include <nlohmann/json.hpp>

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "output.h"
#include "shardsim/app/chakra.h"
#include "shardsim/interop/chakra.h"
#include "shardsim/sim/compute_model.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"
#include "shardsim/workloads/per_rank.h"

namespace shardsim {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

/// A file the cluster names (a fabric graph, a calibration profile), by
/// absolute path: the exported scenario lives elsewhere.
void absolute_path(Json& node, const char* key, const std::string& scenario_file) {
  if (!node.is_object() || !node.contains(key) || !node[key].is_string()) return;
  const std::string name = node[key].get<std::string>();
  const fs::path rel =
      name.empty() || name.front() == '/' ? fs::path(name) : fs::path(scenario_file).parent_path() / name;
  node[key] = fs::absolute(rel).lexically_normal().string();
}

/// The scenario that runs the trace: the cluster and simulator `s` has,
/// this directory as its workload.
std::string trace_scenario_json(const Scenario& s) {
  const Json root = Json::parse(scenario_json(s));
  Json out;
  out["description"] = "The step of " + s.file + " as a Chakra trace (shardsim export chakra)";
  Json cluster = root.at("cluster");
  absolute_path(cluster, "calibration", s.file);
  if (cluster.is_object() && cluster.contains("fabric")) absolute_path(cluster["fabric"], "file", s.file);
  out["cluster"] = cluster;
  if (root.contains("simulator")) out["simulator"] = root["simulator"];
  out["workload"] = {{"kind", "chakra"}, {"dir", "."}};
  if (s.plan.inference() && s.plan.custom_all_reduce) out["workload"]["custom_all_reduce"] = true;
  return out.dump(2) + "\n";
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) throw UsageError("cannot write " + path.string());
}

}  // namespace

ChakraExportSummary export_chakra(const Scenario& s, const std::string& dir, const ChakraExportOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (s.workload.present) throw UsageError("the scenario's workload is already a trace (" + s.workload.dir + ")");
  if (options.prefix.empty() || options.prefix.find('/') != std::string::npos) {
    throw UsageError("the prefix must be a non-empty file name");
  }
  std::error_code ec;
  const fs::path target(dir);
  if (fs::exists(target, ec) && !(fs::is_directory(target, ec) && fs::is_empty(target, ec))) {
    throw UsageError(dir + " exists and is not an empty directory: export into a new one");
  }
  const ProgramSet ps = lower_step(s);
  const Mesh mesh = build_mesh(s.plan);
  // Written beside the target, renamed into place at the end.
  const fs::path partial = target.string() + ".partial-" + std::to_string(::getpid());
  fs::remove_all(partial, ec);
  if (!fs::create_directories(partial, ec)) throw UsageError("cannot create " + partial.string() + ": " + ec.message());
  ChakraExportSummary out;
  out.dir = dir;
  out.prefix = options.prefix;
  try {
    std::vector<chakra::RankMemory> memory(static_cast<size_t>(s.plan.pp));
    for (int64_t stage = 0; stage < s.plan.pp; ++stage) {
      const StageMemoryModel m = stage_memory_model(s, stage);
      chakra::RankMemory& rm = memory[static_cast<size_t>(stage)];
      rm.present = true;
      for (const auto& c : m.resident) rm.resident.emplace_back(c.name, c.bytes);
      rm.walk_program = m.walk_program;
      rm.finish = m.finish;
      rm.allocator_overhead = m.allocator_overhead;
      rm.reserved_bytes = m.reserved_bytes;
    }
    // Each stage's compute times alone (rank programs are their stage's,
    // op for op).
    std::vector<std::vector<SimTime>> alone(ps.stages.size());
    for (size_t st = 0; st < ps.stages.size(); ++st) {
      for (const Op& o : ps.stages[st].ops()) {
        alone[st].push_back(o.kind == OpKind::kCompute ? op_compute_time(o, s.cluster.chip, s.cluster.calibration.get())
                                                       : SimTime());
      }
    }
    RankGroups groups;
    const int64_t n = mesh.devices();
    for (int64_t d = 0; d < n; ++d) {
      const auto stage = static_cast<size_t>(mesh.coord(d, MeshAxis::kPp));
      const Program rp = rank_program(ps, mesh, static_cast<uint32_t>(d), groups);
      chakra::RankFile f;
      f.rank = d;
      f.program = &rp;
      f.alone = alone[stage];
      f.meta.model = s.model.name;
      f.meta.tokens_per_step = s.plan.tokens_per_step();
      f.meta.pipelined = s.plan.pp > 1;
      f.meta.memory = memory[stage];
      const std::string bytes = chakra::encode_rank(f, groups.list());
      write_file(partial / chakra::rank_file_name(options.prefix, d), bytes);
      out.bytes += static_cast<int64_t>(bytes.size());
      out.nodes += static_cast<int64_t>(rp.size());
      if (options.progress) options.progress(d + 1, n);
    }
    out.ranks = n;
    out.groups = static_cast<int64_t>(groups.list().size());
    write_file(partial / "comm_groups.json", chakra::comm_groups_json(groups.list()));
    write_file(partial / "scenario.json", trace_scenario_json(s));
    if (fs::exists(target, ec)) fs::remove(target, ec);  // empty, checked above
    fs::rename(partial, target, ec);
    if (ec) throw UsageError("cannot move the trace into " + dir + ": " + ec.message());
  } catch (...) {
    fs::remove_all(partial, ec);
    throw;
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::string chakra_export_summary_text(const ChakraExportSummary& r) {
  std::string o;
  detail::appendf(o, "wrote %s: %lld ranks (%s.<rank>.et), %lld nodes, %lld communicator groups, %.1f MB, %.2f s\n",
                  r.dir.c_str(), static_cast<long long>(r.ranks), r.prefix.c_str(), static_cast<long long>(r.nodes),
                  static_cast<long long>(r.groups), static_cast<double>(r.bytes) / 1e6, r.wall_s);
  detail::appendf(o, "  simulate it:  shardsim simulate %s\n", r.dir.c_str());
  detail::appendf(o, "  ASTRA-sim:    --workload-configuration=%s/%s --comm-group-configuration=%s/comm_groups.json\n",
                  r.dir.c_str(), r.prefix.c_str(), r.dir.c_str());
  return o;
}

std::string chakra_export_summary_json(const ChakraExportSummary& r) {
  Json j;
  j["dir"] = r.dir;
  j["prefix"] = r.prefix;
  j["ranks"] = r.ranks;
  j["nodes"] = r.nodes;
  j["groups"] = r.groups;
  j["bytes"] = r.bytes;
  j["wall_s"] = r.wall_s;
  return j.dump(2) + "\n";
}

}  // namespace shardsim
