// Runs one training-step scenario end to end: lower, simulate, account.
#pragma once

#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/core/step_report.h"
#include "shardsim/core/timeline.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

struct StepRun {
  ProgramSet programs;
  StepReport report;
  Timeline timeline;
};

/// Lowers and simulates `s`, recording the spans of `trace_devices`. With
/// `replica_shortcut`, only data-parallel replica 0 is simulated (see
/// EngineOptions::replica_shortcut).
StepRun run_training_step(const Scenario& s, const std::vector<uint32_t>& trace_devices, bool replica_shortcut = false);

}  // namespace shardsim
