// Runs one training-step scenario end to end: lower, simulate, account.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/core/step_report.h"
#include "shardsim/core/timeline.h"
#include "shardsim/sim/engine.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

struct StepRun {
  ProgramSet programs;
  StepReport report;
  Timeline timeline;
};

/// Runs the engine on a lowered step: the native engine, or a backend in
/// another process (the SimGrid worker).
using Simulator =
    std::function<EngineResult(const ProgramSet&, const Mesh&, const Topology&, const ChipSpec&, const EngineOptions&)>;

/// The engine options of a step of `s`.
EngineOptions step_engine_options(const Scenario& s, const std::vector<uint32_t>& trace_devices, bool replica_shortcut);

/// Lowers and simulates `s`, recording the spans of `trace_devices`. With
/// `replica_shortcut`, only data-parallel replica 0 is simulated (see
/// EngineOptions::replica_shortcut). `simulator` defaults to the native
/// engine; `backend` names it in the report.
StepRun run_training_step(const Scenario& s, const std::vector<uint32_t>& trace_devices, bool replica_shortcut = false,
                          const Simulator& simulator = {}, const std::string& backend = "native");

}  // namespace shardsim
