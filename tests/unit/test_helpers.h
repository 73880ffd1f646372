// Helpers shared by the unit tests.
#pragma once

#include <string>
#include <vector>

#include "shardsim/workloads/scenario.h"

namespace shardsim::testing {

/// A scenario from inline JSON text.
inline Scenario scenario(const std::string& json, const std::vector<Override>& sets = {}) {
  return parse_scenario(json, "test.json", sets);
}

}  // namespace shardsim::testing
