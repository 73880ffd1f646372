// The result object printed by `shardsim simulate --json`.
#pragma once

#include <string>

#include "shardsim/core/step_report.h"

namespace shardsim {

/// Pretty-printed JSON with keys in a fixed order (deterministic).
std::string step_report_json(const StepReport& r);

}  // namespace shardsim
