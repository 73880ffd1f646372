// A lower bound on a step's simulated time that needs no simulation: the
// longest path through one device per pipeline stage, every op at a time no
// run of the engine can beat.
#pragma once

#include <memory>

#include "shardsim/core/program.h"
#include "shardsim/core/units.h"
#include "shardsim/sim/engine.h"
#include "shardsim/topology/chip.h"
#include "shardsim/topology/mesh.h"
#include "shardsim/topology/topology.h"

namespace shardsim {

/// No simulate() of these inputs on the native backend ends its step sooner
/// (so a plan whose bound cannot beat a simulated step need not run). For
/// each stage the device whose other mesh coordinates are 0 stands; an op
/// starts when its dependencies (its stream's predecessor included) have
/// ended, and lasts
///   compute:     its time alone (op_compute_time, the engine's; beside
///                communication it only runs slower);
///   collective:  per phase of the plan the engine lays for this device's
///                group, the most bytes any link must carry over its
///                capacity, plus the phase latency (or the calibrated fit);
///                other members' arrival is not waited for;
///   send:        its bytes at the route's narrowest capacity (per path
///                fraction with split routes), plus the route latency;
///   receive:     nothing, except a receive from the neighbouring stage,
///                which ends no sooner than the send it pairs with (the
///                k-th of the channel, when the channel's sends and its
///                receives each keep to one stream: the engine then pairs
///                them in that order).
/// Contention (other flows on a link, compute beside communication, waits
/// for slower members) only lengthens a run. Speedups (EngineOptions) are
/// applied as the engine applies them. The result is shaved by a relative
/// 1e-9 for the engine's picosecond rounding.
SimTime step_time_lower_bound(const ProgramSet& ps, const Mesh& mesh, const Topology& topo, const ChipSpec& chip,
                              const EngineOptions& options);

/// The durations step_time_lower_bound gives ops (no run of the engine has
/// an op take less), for a program run by device `standing`: compute
/// alone; a collective's phases at the most bytes any link carries over its
/// bandwidth plus the phase latency (or the calibrated fit); a send at its
/// route's narrowest link plus the route latency; a receive 0.
class OpLowerBounds {
 public:
  OpLowerBounds(const Mesh& mesh, const Topology& topo, const ChipSpec& chip, const EngineOptions& options);
  ~OpLowerBounds();
  OpLowerBounds(const OpLowerBounds&) = delete;
  OpLowerBounds& operator=(const OpLowerBounds&) = delete;
  /// Seconds; collectives are cached per (device, kind, bytes, axes, speed-up).
  double seconds(const Program& p, OpId op, DeviceId standing);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardsim
