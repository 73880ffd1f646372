// The plan's fields, described once. Each entry gives a field's JSON key,
// the phases whose plans have it, whether the plan search sets it, and how
// it is read (with its per-field check), written and reset. The scenario
// loader, the scenario writer (plan_json), the search's overrides and the
// search's reset all iterate this one table; equality is Plan's defaulted
// operator== (every member, none forgotten). Cross-field checks stay in
// check_plan (plan_checks.cc). Private to workloads/ (includes nlohmann).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "json_reader.h"
#include "shardsim/workloads/plan.h"

namespace shardsim::detail {

/// Which phases' plans have a field, as a bitmask of phase_bit(Phase).
constexpr uint8_t phase_bit(Phase ph) {
  return static_cast<uint8_t>(1u << static_cast<unsigned>(ph));
}
inline constexpr uint8_t kTrainOnly = phase_bit(Phase::kTrain);
inline constexpr uint8_t kInferenceOnly = phase_bit(Phase::kPrefill) | phase_bit(Phase::kDecode);
inline constexpr uint8_t kEveryPhase = kTrainOnly | kInferenceOnly;

struct PlanField {
  std::string_view key;  ///< the key in the scenario's "plan" object
  uint8_t phases = kEveryPhase;
  /// enumerate_plans sets it on every candidate (or resets it to Plan's
  /// default), so a searched plan is written with it (searched_plan_overrides).
  bool searched = false;
  /// Reads the field into `p`, checking it alone; when it is absent `p`
  /// keeps its value (the framework's default) unless its default depends
  /// on fields read before it. `serving`: the scenario has a "serving" object.
  std::function<void(ObjectReader& r, Plan& p, bool serving)> read;
  /// The field's value as the loader reads it; null: left out, because the
  /// loader's default is the value (or the key does not allow it).
  std::function<Json(const Plan& p)> write;
  /// Sets the field back to Plan's default.
  std::function<void(Plan& p)> reset;
};

/// Every plan field, in the order the loader reads them: "phase", then
/// "framework" (which sets the defaults of the stack's knobs), then the
/// others; a field whose read depends on another comes after it.
std::span<const PlanField> plan_fields();

/// A "plan" object of phase `phase` (already read from "phase"), field by
/// field; the caller calls r.done() and the cross-field checks.
Plan read_plan_fields(ObjectReader& r, Phase phase, bool serving);

/// The "plan" object that reads back as exactly `p`: every field of its
/// phase written out (framework first), none left to a default.
Json write_plan_fields(const Plan& p);

}  // namespace shardsim::detail
