#include "shardsim/workloads/presets.h"

#include "presets_data.h"

namespace shardsim {

const std::vector<PresetEntry>& all_presets() {
  static const std::vector<PresetEntry> entries = [] {
    std::vector<PresetEntry> v;
    for (const auto& e : detail::kPresetTable) v.push_back({e.kind, e.name, e.json});
    return v;
  }();
  return entries;
}

std::optional<PresetEntry> find_preset(std::string_view kind, std::string_view name) {
  for (const auto& e : all_presets()) {
    if (e.kind == kind && e.name == name) return e;
  }
  return std::nullopt;
}

std::optional<PresetEntry> find_preset_any_kind(std::string_view name) {
  for (const auto& e : all_presets()) {
    if (e.name == name) return e;
  }
  return std::nullopt;
}

}  // namespace shardsim
