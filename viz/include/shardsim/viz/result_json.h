// The result object printed by `shardsim simulate --json`.
#pragma once

#include <string>

#include "shardsim/core/step_report.h"

namespace shardsim {

/// Pretty-printed JSON with keys in a fixed order (deterministic).
std::string step_report_json(const StepReport& r);

/// The `critical_path` object of that result (and of `shardsim run
/// --json`), compact: {length_s, ops, devices, by_category_s,
/// top_segments}, or {skipped} when it was left out; null when neither.
std::string critical_path_json(const CriticalPathReport& cp);

}  // namespace shardsim
