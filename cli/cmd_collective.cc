// `shardsim collective`: one collective alone on the fabric, reported the
// way nccl-tests reports it (algbw = size / time; busbw = algbw times
// 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and
// all-to-all, 1 for broadcast).
#include <cstdio>
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

double bus_factor(CollectiveKind k, double n) {
  switch (k) {
    case CollectiveKind::kAllReduce:
      return 2 * (n - 1) / n;
    case CollectiveKind::kBroadcast:
      return 1;
    default:
      return (n - 1) / n;
  }
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
  std::string input, op_text, bytes_text, group = "all";
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
  if (bytes_text.empty()) throw UsageError("collective: --bytes is required");
  const CollectiveKind kind = parse_op(op_text);
  const int64_t size = parse_bytes("--bytes", bytes_text);

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
  const EngineResult r =
      simulate_collective(kind, Bytes(size), mesh, axes, *topo, cluster.chip, cluster.collective, concurrent);
  const std::string algo = plan_collective(kind, Bytes(size), members, *topo, cluster.collective).algorithm;

  const double t = r.step_time.seconds();
  const double n = static_cast<double>(members.size());
  const double algbw = t > 0 ? static_cast<double>(size) / t : 0;
  const double busbw = algbw * bus_factor(kind, n);
  if (json) {
    nlohmann::ordered_json j;
    j["op"] = std::string(to_string(kind));
    j["bytes"] = size;
    j["group_size"] = members.size();
    j["groups_running"] = concurrent ? mesh.num_groups(axes) : 1;
    j["algorithm"] = algo;
    j["time_s"] = t;
    j["algbw_GBps"] = algbw / 1e9;
    j["busbw_GBps"] = busbw / 1e9;
    j["flows"] = r.flows;
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  } else {
    std::printf("%s of %lld bytes over %zu devices (%s%s): %.3f us, algbw %.2f GB/s, busbw %.2f GB/s\n",
                std::string(to_string(kind)).c_str(), static_cast<long long>(size), members.size(), algo.c_str(),
                concurrent ? ", all groups at once" : "", t * 1e6, algbw / 1e9, busbw / 1e9);
  }
  return 0;
}

}  // namespace shardsim::cli
