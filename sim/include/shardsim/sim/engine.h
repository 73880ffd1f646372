// The native discrete-event engine: runs a Program on every device of a mesh
// over a Topology and returns when the step ends.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/core/step_report.h"
#include "shardsim/core/timeline.h"
#include "shardsim/topology/calibration.h"
#include "shardsim/topology/chip.h"
#include "shardsim/topology/mesh.h"
#include "shardsim/topology/topology.h"

namespace shardsim {

struct EngineOptions {
  /// Devices whose spans and flows are recorded in the Timeline.
  std::vector<uint32_t> trace_devices;
  /// Record the spans of every device that runs as well (no flows), for the
  /// critical path; Timeline::devices still lists trace_devices only.
  bool spans_of_every_device = false;
  /// With spans_of_every_device, record them only if the running devices'
  /// op instances are at most this many (0: any number); else
  /// EngineResult::spans_over_limit.
  int64_t span_instance_limit = 0;
  /// If non-empty, only these devices run the program (the rest idle); used
  /// to time one collective group alone.
  std::vector<uint32_t> active_devices;
  CollectiveCosts collective;  ///< fixed costs of collectives on this fabric
  /// Simulate only data-parallel replica 0 (dp coordinate 0): replicas run
  /// the same program, so a collective spanning dp counts the other members
  /// as arriving with replica 0's, and its flows still cover every member
  /// (their contention is modelled). Traffic that stays inside other replicas
  /// (tp collectives, pipeline transfers) is not simulated.
  bool replica_shortcut = false;
  /// Simulate one device per orbit of the step's symmetry where the
  /// backend can (the native engine): the largest group of mesh
  /// translations under which the fabric, the routes and latencies and the
  /// collective plans the step uses map onto themselves (sim/src/
  /// symmetry.h, docs/model.md). Exact: every device's timeline is its
  /// orbit's canonical device's. EngineResult::symmetry says what ran;
  /// traced devices must be canonical for it to.
  bool symmetry = false;
  /// Non-zero: devices start their first ops in an order shuffled with this
  /// seed instead of by id. Results must not depend on it (a test checks);
  /// it perturbs the order of same-instant events.
  uint64_t start_order_seed = 0;
  /// Measured rates (cluster.calibration): compute ops take their
  /// calibrated times, and a collective or transfer with a fit for its kind
  /// takes latency + bytes / bandwidth instead of running flows.
  const CalibrationProfile* calibration = nullptr;
  /// What-if (workloads' Speedups): compute ops of a kind take time / k
  /// (indexed by ComputeKind); the collectives and transfers of a named
  /// stream take time / k, their flows' bytes and their latencies alike.
  std::array<double, kComputeKinds> compute_speedup{1, 1, 1, 1, 1, 1, 1, 1, 1};
  std::vector<std::pair<std::string, double>> stream_speedup;
};

struct EngineResult {
  SimTime step_time;
  uint32_t critical_device = 0;  ///< the device that finished last
  StepBreakdown breakdown;       ///< of the critical device
  uint64_t events = 0;
  uint64_t flows = 0;
  Timeline timeline;
  /// Bytes carried per link over the run (conservation checks).
  std::vector<double> link_bytes;
  /// Bytes moved by all flows times their hop counts.
  double flow_byte_hops = 0;
  /// Devices whose programs ran (all; canonical ones under the symmetry;
  /// of replica 0 with the replica shortcut).
  int64_t active_devices = 0;
  /// The translations each running device stood for (EngineOptions::
  /// symmetry; trivial when every device ran), and what was found or why
  /// none (empty when not asked).
  MeshSymmetry symmetry;
  std::string symmetry_note;
  /// Op instances of the devices that ran; whether their spans were not
  /// recorded for being over EngineOptions::span_instance_limit.
  int64_t op_instances = 0;
  bool spans_over_limit = false;
  /// On the critical device: compute time by op kind, and how long each
  /// communication stream had an op in flight (streams overlap each other
  /// and compute, so these need not sum to the step time).
  std::vector<std::pair<std::string, double>> compute_by_kind_s;
  std::vector<std::pair<std::string, double>> comm_busy_by_stream_s;
  /// Of the critical device's compute time, what its ops took beyond their
  /// time alone because communication ran beside them (the SMs and HBM
  /// share it holds: compute_model.h, chip_beside_communication).
  double compute_beside_comm_s = 0;
};

/// Simulates one step. Deterministic: the same inputs give the same result.
EngineResult simulate(const ProgramSet& programs, const Mesh& mesh, const Topology& topo, const ChipSpec& chip,
                      const EngineOptions& options);

/// A one-stage program of a single collective of `kind` and `size` over the
/// `axes` group (for timing a collective alone).
ProgramSet lone_collective_program(CollectiveKind kind, Bytes size, uint8_t axes);

/// One collective of `kind` and `size` over the `axes` group that holds
/// device 0, alone on the fabric (or, with all_groups, every such group at
/// once). Its step_time is the collective's time.
EngineResult simulate_collective(CollectiveKind kind, Bytes size, const Mesh& mesh, uint8_t axes, const Topology& topo,
                                 const ChipSpec& chip, const CollectiveCosts& costs, bool all_groups);

}  // namespace shardsim
