// Named presets (chips, models, clusters), embedded from presets/*/*.json at
// build time. Each is a plain JSON object that `shardsim presets show` prints.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardsim {

struct PresetEntry {
  std::string_view kind;  ///< "chip", "model", "cluster"
  std::string_view name;
  std::string_view json;
};

const std::vector<PresetEntry>& all_presets();
std::optional<PresetEntry> find_preset(std::string_view kind, std::string_view name);
std::optional<PresetEntry> find_preset_any_kind(std::string_view name);

}  // namespace shardsim
