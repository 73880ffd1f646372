#include "shardsim/viz/result_json.h"

#include <nlohmann/json.hpp>

namespace shardsim {

namespace {

nlohmann::ordered_json path_object(const CriticalPathReport& cp) {
  if (!cp.present) {
    return cp.skipped.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json{{"skipped", cp.skipped}};
  }
  nlohmann::ordered_json cats = nlohmann::ordered_json::array();
  for (const auto& [k, v] : cp.by_category_s) cats.push_back({{"category", k}, {"s", v}});
  nlohmann::ordered_json segs = nlohmann::ordered_json::array();
  for (const auto& g : cp.top_segments) {
    segs.push_back({{"device", g.device},
                    {"stream", g.stream},
                    {"first_op", g.first_op},
                    {"last_op", g.last_op},
                    {"ops", g.ops},
                    {"start_s", g.start_s},
                    {"end_s", g.end_s}});
  }
  return {{"length_s", cp.length_s},
          {"ops", cp.ops},
          {"devices", cp.devices},
          {"by_category_s", cats},
          {"top_segments", segs}};
}

}  // namespace

std::string critical_path_json(const CriticalPathReport& cp) {
  return path_object(cp).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string step_report_json(const StepReport& r) {
  nlohmann::ordered_json j;
  j["scenario"] = r.scenario;
  j["scenario_hash"] = r.config_hash;
  j["shardsim_version"] = r.version;
  j["model"] = r.model;
  if (!r.workload.empty()) j["workload"] = r.workload;
  j["chip"] = r.chip;
  j["devices"] = r.devices;
  j["step_time_s"] = r.step_time_s;
  j["mfu"] = r.mfu;
  j["hfu"] = r.hfu;
  j["model_flops_per_step"] = r.model_flops_per_step;
  j["model_tflops_per_device"] = r.model_tflops_per_device;
  j["hardware_tflops_per_device"] = r.hardware_tflops_per_device;
  j["tokens_per_step"] = r.tokens_per_step;
  j["tokens_per_s"] = r.tokens_per_s;
  j["binding"] = r.binding;
  j["breakdown"] = {{"compute_s", r.breakdown.compute_s},
                    {"exposed_comm_s", r.breakdown.exposed_comm_s},
                    {"bubble_s", r.breakdown.bubble_s},
                    {"other_s", r.breakdown.other_s}};
  nlohmann::ordered_json by_kind = nlohmann::ordered_json::object();
  for (const auto& [k, v] : r.compute_by_kind_s) by_kind[k] = v;
  nlohmann::ordered_json by_stream = nlohmann::ordered_json::object();
  for (const auto& [k, v] : r.comm_busy_by_stream_s) by_stream[k] = v;
  j["critical_device"] = {{"device", r.critical_device},
                          {"compute_by_kind_s", by_kind},
                          {"compute_beside_comm_s", r.compute_beside_comm_s},
                          {"comm_busy_by_stream_s", by_stream}};
  if (r.critical_path.present || !r.critical_path.skipped.empty()) j["critical_path"] = path_object(r.critical_path);
  nlohmann::ordered_json comps = nlohmann::ordered_json::object();
  for (const auto& c : r.memory.components) comps[c.name + "_bytes"] = c.bytes;
  j["memory"] = {{"peak_bytes_per_device", r.memory.peak_bytes_per_device},
                 {"capacity_bytes", r.memory.capacity_bytes},
                 {"fits", r.memory.fits},
                 {"peak_at", r.memory.peak_at},
                 {"components", comps}};
  if (!r.memory.known) j["memory"]["known"] = false;  // a trace that records no memory
  j["sim"] = {{"backend", r.sim.backend},
              {"events", r.sim.events},
              {"flows", r.sim.flows},
              {"devices", r.sim.devices},
              {"simulated_devices", r.sim.simulated_devices},
              {"symmetry", r.sim.symmetry},
              {"replica_estimate", r.sim.replica_estimate},
              {"ops_per_device", r.sim.ops_per_device},
              {"wall_s", r.sim.wall_s}};
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace shardsim
