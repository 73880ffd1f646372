#include "shardsim/app/collective.h"

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "shardsim/core/error.h"
#include "shardsim/core/program.h"
#include "shardsim/sim/collective.h"
#include "shardsim/sim/engine.h"
#include "shardsim/sim/nccl_model.h"

namespace shardsim {
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

std::vector<int64_t> collective_sweep_sizes(int64_t min_bytes, int64_t max_bytes, double factor) {
  if (min_bytes < 1) throw UsageError("--sweep: sizes start at 1 byte, got " + std::to_string(min_bytes));
  if (min_bytes > max_bytes) {
    throw UsageError("--sweep: MIN must not exceed MAX, got " + std::to_string(min_bytes) + ":" +
                     std::to_string(max_bytes));
  }
  if (!(factor >= 1.01 && factor <= 1024)) {
    throw UsageError("--factor: expected a number from 1.01 to 1024, got " + std::to_string(factor));
  }
  std::vector<int64_t> sizes = sweep_sizes(min_bytes, max_bytes, factor);
  if (sizes.size() > 4096) throw UsageError("--sweep: more than 4096 sizes; raise --factor");
  return sizes;
}

CollectiveResult time_collective(const std::string& input, const std::vector<Override>& overrides,
                                 const CollectiveRequest& request) {
  if (is_scenario_file(input)) {
    const Scenario s = load_scenario(input, overrides);
    return time_collective(s.cluster, &s.plan, request);
  }
  if (request.group == "tp" || request.group == "dp") {
    throw UsageError("--group " + request.group + ": needs a scenario file with a plan");
  }
  return time_collective(load_cluster(input, overrides), nullptr, request);
}

CollectiveResult time_collective(const ClusterSpec& cluster, const Plan* plan, const CollectiveRequest& request) {
  const CollectiveKind kind = parse_op(request.op);
  if (request.sizes_bytes.empty()) throw UsageError("collective: no message size given");
  if (request.sizes_bytes.size() > 4096) throw UsageError("collective: more than 4096 sizes");
  for (const int64_t b : request.sizes_bytes) {
    if (b < 0) throw UsageError("--bytes: expected a size of at least 0 bytes, got " + std::to_string(b));
  }
  std::array<int64_t, kNumMeshAxes> sizes{1, 1, 1, 1};
  std::array<MeshAxis, kNumMeshAxes> order{MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp};
  uint8_t axes = axis_bit(MeshAxis::kDp);
  const std::string& group = request.group;
  if (group == "tp" || group == "dp") {
    if (plan == nullptr) throw UsageError("--group " + group + ": needs a scenario file with a plan");
    sizes = {plan->tp, plan->cp, plan->pp, plan->dp};
    order = plan->mesh_order;
    axes = axis_bit(group == "tp" ? MeshAxis::kTp : MeshAxis::kDp);
  } else {
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
  CollectiveResult out;
  out.op = std::string(to_string(kind));
  out.group_size = static_cast<int64_t>(members.size());
  out.groups_running = request.concurrent ? mesh.num_groups(axes) : 1;
  out.concurrent = request.concurrent;
  out.sweep = request.sweep;
  if (request.nccl_table) {
    out.nccl_table_asked = true;
    out.nccl_nodes = nccl_nodes(kind, members, *topo, cluster.collective);
    if (out.nccl_nodes > 0) {
      for (const NcclCost& c : nccl_costs(kind, out.group_size, out.nccl_nodes, cluster.collective.nccl)) {
        out.nccl_table.push_back({std::string(to_string(c.algorithm)), std::string(to_string(c.protocol)), c.channels,
                                  c.latency_us, c.bandwidth_GBps});
      }
    }
  }
  for (const int64_t size : request.sizes_bytes) {
    const EngineResult r =
        simulate_collective(kind, Bytes(size), mesh, axes, *topo, cluster.chip, cluster.collective, request.concurrent);
    const double t = r.step_time.seconds();
    const double algbw = t > 0 ? static_cast<double>(size) / t : 0;
    // nccl-tests' algbw = bytes / time and busbw = algbw x its bus factor
    // (sim/collective.h bus_bandwidth_factor).
    out.points.push_back({size, plan_collective(kind, Bytes(size), members, *topo, cluster.collective).algorithm, t,
                          algbw / 1e9, algbw * bus_bandwidth_factor(kind, out.group_size) / 1e9,
                          static_cast<uint64_t>(r.flows)});
  }
  return out;
}

std::string collective_json(const CollectiveResult& r) {
  using Json = nlohmann::ordered_json;
  Json j;
  j["op"] = r.op;
  if (r.sweep) {
    j["group_size"] = r.group_size;
    j["groups_running"] = r.groups_running;
    j["rows"] = Json::array();
    for (const CollectivePoint& p : r.points) {
      Json row;
      row["bytes"] = p.bytes;
      row["time_s"] = p.time_s;
      row["algbw_GBps"] = p.algbw_GBps;
      row["busbw_GBps"] = p.busbw_GBps;
      row["algorithm"] = p.algorithm;
      j["rows"].push_back(std::move(row));
    }
  } else {
    const CollectivePoint& p = r.points.front();
    j["bytes"] = p.bytes;
    j["group_size"] = r.group_size;
    j["groups_running"] = r.groups_running;
    j["algorithm"] = p.algorithm;
    j["time_s"] = p.time_s;
    j["algbw_GBps"] = p.algbw_GBps;
    j["busbw_GBps"] = p.busbw_GBps;
    j["flows"] = p.flows;
  }
  if (r.nccl_table_asked) {
    if (r.nccl_nodes > 0) {
      Json t;
      t["nodes"] = r.nccl_nodes;
      t["entries"] = Json::array();
      for (const NcclTableRow& e : r.nccl_table) {
        Json row;
        row["algorithm"] = e.algorithm;
        row["protocol"] = e.protocol;
        row["channels"] = e.channels;
        row["latency_us"] = e.latency_us;
        row["algbw_GBps"] = e.bandwidth_GBps;
        t["entries"].push_back(std::move(row));
      }
      j["nccl_table"] = std::move(t);
    } else {
      j["nccl_table"] = nullptr;
    }
  }
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

namespace {

/// NCCL's tuning table as text, after the collective's own lines.
std::string nccl_table_text(const CollectiveResult& r) {
  if (!r.nccl_table_asked) return "";
  if (r.nccl_nodes == 0) {
    return "# no NCCL table: this group's plan does not come from NCCL's model (GPU nodes of a chip with a "
           "compute capability; across nodes, whole nodes evenly with the fabric's nccl_across_nodes)\n";
  }
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "# NCCL's tuning table for %s over %lld GPUs on %lld node%s (NCCL_DEBUG_SUBSYS=TUNING's entries)\n",
                r.op.c_str(), static_cast<long long>(r.group_size), static_cast<long long>(r.nccl_nodes),
                r.nccl_nodes == 1 ? "" : "s");
  out += buf;
  std::snprintf(buf, sizeof buf, "# %-10s %-8s %8s %12s %12s\n", "algorithm", "protocol", "channels", "latency_us",
                "algbw_GBps");
  out += buf;
  for (const NcclTableRow& e : r.nccl_table) {
    std::snprintf(buf, sizeof buf, "  %-10s %-8s %8d %12.2f %12.2f\n", e.algorithm.c_str(), e.protocol.c_str(),
                  e.channels, e.latency_us, e.bandwidth_GBps);
    out += buf;
  }
  return out;
}

}  // namespace

std::string collective_text(const CollectiveResult& r) {
  std::string out;
  char buf[512];
  if (r.sweep) {
    std::snprintf(buf, sizeof buf, "# %s over %lld devices%s, simulated alone on the fabric (nccl-tests columns)\n",
                  r.op.c_str(), static_cast<long long>(r.group_size), r.concurrent ? ", all groups at once" : "");
    out += buf;
    std::snprintf(buf, sizeof buf, "# %14s %14s %12s %12s  %s\n", "size_B", "time_us", "algbw_GBps", "busbw_GBps",
                  "algorithm");
    out += buf;
    for (const CollectivePoint& p : r.points) {
      std::snprintf(buf, sizeof buf, "  %14lld %14.2f %12.2f %12.2f  %s\n", static_cast<long long>(p.bytes),
                    p.time_s * 1e6, p.algbw_GBps, p.busbw_GBps, p.algorithm.c_str());
      out += buf;
    }
    return out + nccl_table_text(r);
  }
  const CollectivePoint& p = r.points.front();
  std::snprintf(buf, sizeof buf,
                "%s of %lld bytes over %lld devices (%s%s): %.3f us, algbw %.2f GB/s, busbw %.2f GB/s\n", r.op.c_str(),
                static_cast<long long>(p.bytes), static_cast<long long>(r.group_size), p.algorithm.c_str(),
                r.concurrent ? ", all groups at once" : "", p.time_s * 1e6, p.algbw_GBps, p.busbw_GBps);
  return out + buf + nccl_table_text(r);
}

}  // namespace shardsim
