// Private to workloads/: the parts of the scenario loader that live in their
// own files (the cluster, calibration profiles, the serving object, plan
// checks) and the
// caps they share.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "json_reader.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::detail {

// Caps that keep absurd inputs from allocating the machine away.
inline constexpr int64_t kMaxDevices = 1 << 20;
inline constexpr int64_t kMaxLayers = 10'000;
inline constexpr int64_t kMaxDim = 1 << 24;
inline constexpr int64_t kMaxOpsEstimate = 200'000'000;  // devices x ops per device

/// `name` relative to the directory of `file` (unless absolute).
std::string sibling_path(const std::string& file, const std::string& name);
/// A profile written by `shardsim calibrate` (calibration_loader.cc).
std::shared_ptr<const CalibrationProfile> load_calibration(const std::string& path);
/// A chip, model, cluster or plan preset's JSON; an unknown name is an
/// input error at `ptr` of `file` naming the known ones (scenario_loader.cc).
Json preset_json(const std::string& kind, const std::string& name, const std::string& file, const std::string& ptr);
/// A model preset, by name; an unknown name is an input error at `ptr`
/// (scenario_loader.cc).
ModelSpec model_preset(const std::string& name, const std::string& file, const std::string& ptr);
/// The scenario's "cluster" object or preset name at `ptr`, or with ptr "" a bare cluster
/// object (a cluster file), its fields named from its root (cluster_loader.cc).
ClusterSpec parse_cluster(const Json& j, const std::string& file, const std::string& ptr = "/cluster");
/// The scenario's "serving" object (serving_loader.cc).
ServingSpec parse_serving(const Json& j, const std::string& file, const Scenario& sc);

}  // namespace shardsim::detail
