// Runs a simulation on the SimGrid backend in a worker process
// (shardsim-simgrid-worker): SimGrid's engine is one per process and cannot
// share an executable with MPI (DESIGN.md), so no face links it.
#pragma once

#include <string>
#include <vector>

#include "shardsim/app/step.h"
#include "shardsim/sim/engine.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

/// What the worker is handed: the scenario itself (scenario_json: the
/// scenario's JSON with the plan and device count the caller holds, on its
/// standard input), the name its messages use, and the engine options that
/// are not part of a scenario.
struct WorkerRequest {
  std::string scenario_json;
  std::string scenario_name;
  std::vector<uint32_t> trace_devices;
  bool replica_shortcut = false;
  bool spans_of_every_device = false;  ///< EngineOptions::spans_of_every_device
};

/// Path of the worker: $SHARDSIM_SIMGRID_WORKER, else shardsim-simgrid-worker
/// beside the running executable, in the build tree's cli/ or in the
/// installed bin/. Throws UsageError when there is none.
std::string simgrid_worker_path();

/// Starts `worker`, writes the scenario to its standard input, waits for it
/// and decodes its result. The worker's stderr is this process's. Throws
/// AlreadyReported(2) when the worker rejected its input (it printed why),
/// std::runtime_error on any other failure (a crash, a truncated or corrupt
/// result).
EngineResult run_simgrid_worker(const std::string& worker, const WorkerRequest& request);

/// The simulator the scenario asks for (its "simulator" object): empty for
/// the native engine, else one that runs the SimGrid worker on `s` as the
/// caller holds it (scenario_json; checked to load back as s.plan). Sets
/// `backend` to the name the report shows.
Simulator simulator_for(const Scenario& s, std::string& backend);

}  // namespace shardsim
