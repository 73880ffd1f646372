// Runs a simulation on the SimGrid backend in a worker process
// (shardsim-simgrid-worker, installed next to shardsim).
#pragma once

#include <string>
#include <vector>

#include "shardsim/sim/engine.h"
#include "shardsim/workloads/scenario.h"
#include "step_runner.h"

namespace shardsim::cli {

struct WorkerRequest {
  std::string scenario_file;
  std::vector<Override> overrides;
  std::vector<uint32_t> trace_devices;
  bool replica_shortcut = false;
};

/// Path of the worker: $SHARDSIM_SIMGRID_WORKER, else shardsim-simgrid-worker
/// beside the running executable. Throws UsageError when there is none.
std::string simgrid_worker_path();

/// Starts the worker, waits for it and decodes its result. The worker's
/// stderr is this process's. Throws AlreadyReported{2} when the worker
/// rejected its input (it printed why), std::runtime_error on any other
/// failure.
EngineResult run_simgrid_worker(const WorkerRequest& request);

/// The simulator the scenario asks for (its "simulator" object): empty for
/// the native engine, else one that runs the SimGrid worker on the same
/// scenario file and overrides. Sets `backend` to the name the report shows.
Simulator simulator_for(const Scenario& s, const std::vector<Override>& overrides, std::string& backend);

}  // namespace shardsim::cli
