// The SimGrid backend of the engine: the same engine logic (DAG, streams,
// collectives as phases of flows, eager sends), with SimGrid 3.32 deciding
// how the flows share the links. SimGrid's engine is a process-wide
// singleton that cannot be re-created, so simulate_simgrid runs at most once
// per process: the `shardsim` CLI runs it in a worker process.
#pragma once

#include "shardsim/sim/engine.h"

namespace shardsim {

struct SimgridOptions {
  /// false: CM02 without cross-traffic or TCP window, zero-latency links
  /// (a lone transfer takes size / bandwidth; flows share by plain max-min,
  /// the native model's assumptions). true: LV08, SimGrid's calibrated TCP
  /// model, with the fabric's link latencies inside SimGrid.
  bool lv08 = false;
};

/// Simulates one step on SimGrid. Throws std::logic_error if called a second
/// time in the same process.
EngineResult simulate_simgrid(const ProgramSet& programs, const Mesh& mesh, const Topology& topo, const ChipSpec& chip,
                              const EngineOptions& options, const SimgridOptions& simgrid);

}  // namespace shardsim
