// `shardsim collective`: one collective alone on the fabric, reported the
// way nccl-tests reports it (algbw and busbw: sim/collective.h), at one
// size or over a sweep of sizes (`--sweep MIN:MAX`, nccl-tests' -b/-e/-f).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.h"
#include "commands.h"
#include "shardsim/core/program.h"
#include "shardsim/sim/collective.h"
#include "shardsim/sim/engine.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::cli {
namespace {

CollectiveKind parse_op(const std::string& s) {
  if (s == "all-reduce" || s == "allreduce") return CollectiveKind::kAllReduce;
  if (s == "all-gather" || s == "allgather") return CollectiveKind::kAllGather;
  if (s == "reduce-scatter" || s == "reducescatter") return CollectiveKind::kReduceScatter;
  if (s == "all-to-all" || s == "alltoall") return CollectiveKind::kAllToAll;
  if (s == "broadcast") return CollectiveKind::kBroadcast;
  throw UsageError("--op: expected all-reduce, all-gather, reduce-scatter, all-to-all or broadcast, got \"" + s + "\"");
}

bool is_scenario_file(const std::string& file) {
  std::ifstream in(file);
  if (!in) return false;
  try {
    const auto j = nlohmann::json::parse(in);
    return j.is_object() && j.contains("plan");
  } catch (const std::exception&) {
    return false;  // load_cluster reports the problem with its location
  }
}

}  // namespace

int cmd_collective(const std::vector<std::string>& args) {
  std::string input, op_text, bytes_text, group = "all", sweep_text, factor_text;
  std::vector<Override> sets;
  bool json = false, concurrent = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json")
      json = true;
    else if (a == "--concurrent")
      concurrent = true;
    else if (a == "--op")
      op_text = take_value(args, i);
    else if (a == "--bytes")
      bytes_text = take_value(args, i);
    else if (a == "--group")
      group = take_value(args, i);
    else if (a == "--sweep")
      sweep_text = take_value(args, i);
    else if (a == "--factor")
      factor_text = take_value(args, i);
    else if (a == "--set")
      sets.push_back(parse_set(take_value(args, i)));
    else if (!a.empty() && a[0] == '-')
      throw UsageError("collective: unknown option " + a);
    else if (input.empty())
      input = a;
    else
      throw UsageError("collective: one scenario or cluster expected, got a second: " + a);
  }
  if (input.empty()) throw UsageError("collective: expected a scenario file, cluster file or cluster preset");
  if (op_text.empty()) throw UsageError("collective: --op is required");
  if (bytes_text.empty() == sweep_text.empty()) throw UsageError("collective: give --bytes SIZE or --sweep MIN:MAX");
  if (!factor_text.empty() && sweep_text.empty()) throw UsageError("collective: --factor needs --sweep");
  const CollectiveKind kind = parse_op(op_text);
  std::vector<int64_t> sizes_bytes;
  if (!bytes_text.empty()) {
    sizes_bytes.push_back(parse_bytes("--bytes", bytes_text));
  } else {
    const size_t colon = sweep_text.find(':');
    if (colon == std::string::npos) {
      throw UsageError("--sweep: expected MIN:MAX such as 1KB:8GB, got \"" + sweep_text + "\"");
    }
    const int64_t lo = parse_bytes("--sweep", sweep_text.substr(0, colon));
    const int64_t hi = parse_bytes("--sweep", sweep_text.substr(colon + 1));
    if (lo > hi) throw UsageError("--sweep: MIN must not exceed MAX, got \"" + sweep_text + "\"");
    double factor = 2;
    if (!factor_text.empty()) {
      char* end = nullptr;
      factor = std::strtod(factor_text.c_str(), &end);
      if (end != factor_text.c_str() + factor_text.size() || !(factor >= 1.01 && factor <= 1024)) {
        throw UsageError("--factor: expected a number from 1.01 to 1024, got \"" + factor_text + "\"");
      }
    }
    sizes_bytes = sweep_sizes(lo, hi, factor);
    if (sizes_bytes.size() > 4096) throw UsageError("--sweep: more than 4096 sizes; raise --factor");
  }

  ClusterSpec cluster;
  std::array<int64_t, kNumMeshAxes> sizes{1, 1, 1, 1};
  std::array<MeshAxis, kNumMeshAxes> order{MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp};
  uint8_t axes = axis_bit(MeshAxis::kDp);
  if (group == "tp" || group == "dp") {
    if (!is_scenario_file(input)) throw UsageError("--group " + group + ": needs a scenario file with a plan");
    const Scenario s = load_scenario(input, sets);
    cluster = s.cluster;
    sizes = {s.plan.tp, s.plan.cp, s.plan.pp, s.plan.dp};
    order = s.plan.mesh_order;
    axes = axis_bit(group == "tp" ? MeshAxis::kTp : MeshAxis::kDp);
  } else {
    cluster = is_scenario_file(input) ? load_scenario(input, sets).cluster : load_cluster(input, sets);
    int64_t n = cluster.devices;
    if (group != "all") {
      if (group.empty() || group.size() > 9 || group.find_first_not_of("0123456789") != std::string::npos) {
        throw UsageError("--group: expected all, tp, dp or a device count, got \"" + group + "\"");
      }
      n = std::stoll(group);
      if (n < 1 || n > cluster.devices || cluster.devices % n != 0) {
        throw UsageError("--group: " + group + " must divide the cluster's " + std::to_string(cluster.devices) +
                         " devices");
      }
    }
    sizes = {n, 1, 1, cluster.devices / n};
    axes = axis_bit(MeshAxis::kTp);
  }
  const Mesh mesh(sizes, order);
  const auto topo = build_topology(cluster);

  std::vector<uint32_t> members;
  mesh.group_members(0, axes, members);
  struct Point {
    int64_t bytes;
    std::string algorithm;
    double time_s, algbw, busbw;
    uint64_t flows;
  };
  std::vector<Point> points;
  for (const int64_t size : sizes_bytes) {
    const EngineResult r =
        simulate_collective(kind, Bytes(size), mesh, axes, *topo, cluster.chip, cluster.collective, concurrent);
    const double t = r.step_time.seconds();
    const double algbw = t > 0 ? static_cast<double>(size) / t : 0;
    points.push_back({size, plan_collective(kind, Bytes(size), members, *topo, cluster.collective).algorithm, t, algbw,
                      algbw * bus_bandwidth_factor(kind, static_cast<int64_t>(members.size())),
                      static_cast<uint64_t>(r.flows)});
  }
  const size_t groups_running = concurrent ? static_cast<size_t>(mesh.num_groups(axes)) : 1;
  if (!sweep_text.empty()) {
    if (json) {
      nlohmann::ordered_json j;
      j["op"] = std::string(to_string(kind));
      j["group_size"] = members.size();
      j["groups_running"] = groups_running;
      j["rows"] = nlohmann::ordered_json::array();
      for (const Point& p : points) {
        nlohmann::ordered_json row;
        row["bytes"] = p.bytes;
        row["time_s"] = p.time_s;
        row["algbw_GBps"] = p.algbw / 1e9;
        row["busbw_GBps"] = p.busbw / 1e9;
        row["algorithm"] = p.algorithm;
        j["rows"].push_back(std::move(row));
      }
      std::printf("%s\n", j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    } else {
      std::printf("# %s over %zu devices%s, simulated alone on the fabric (nccl-tests columns)\n",
                  std::string(to_string(kind)).c_str(), members.size(), concurrent ? ", all groups at once" : "");
      std::printf("# %14s %14s %12s %12s  %s\n", "size_B", "time_us", "algbw_GBps", "busbw_GBps", "algorithm");
      for (const Point& p : points) {
        std::printf("  %14lld %14.2f %12.2f %12.2f  %s\n", static_cast<long long>(p.bytes), p.time_s * 1e6,
                    p.algbw / 1e9, p.busbw / 1e9, p.algorithm.c_str());
      }
    }
    return 0;
  }
  const Point& p = points.front();
  if (json) {
    nlohmann::ordered_json j;
    j["op"] = std::string(to_string(kind));
    j["bytes"] = p.bytes;
    j["group_size"] = members.size();
    j["groups_running"] = groups_running;
    j["algorithm"] = p.algorithm;
    j["time_s"] = p.time_s;
    j["algbw_GBps"] = p.algbw / 1e9;
    j["busbw_GBps"] = p.busbw / 1e9;
    j["flows"] = p.flows;
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  } else {
    std::printf("%s of %lld bytes over %zu devices (%s%s): %.3f us, algbw %.2f GB/s, busbw %.2f GB/s\n",
                std::string(to_string(kind)).c_str(), static_cast<long long>(p.bytes), members.size(),
                p.algorithm.c_str(), concurrent ? ", all groups at once" : "", p.time_s * 1e6, p.algbw / 1e9,
                p.busbw / 1e9);
  }
  return 0;
}

}  // namespace shardsim::cli
