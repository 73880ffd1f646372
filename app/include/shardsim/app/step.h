// Simulating one step of a scenario end to end: lower, simulate on the
// backend the scenario names, account (MFU/HFU, the binding constraint,
// memory), and the summary and JSON of the result. What `shardsim simulate`
// and `shardsim.simulate` call.
#pragma once

#include <cstdint>
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

/// Whether one data-parallel replica stands for all (EngineOptions::
/// replica_shortcut): kAuto from 2048 devices up or where it is exact, kOn
/// whenever dp > 1.
enum class ReplicaShortcut : uint8_t { kAuto, kOn, kOff };

/// Whether a data-parallel replica of `s` is exactly one NVSwitch node of a
/// fat tree (tp·cp·pp = gpus_per_node, dp outermost, no expert or hybrid-
/// shard split of dp): its own traffic then stays on the node's NVLinks and
/// all traffic between replicas on NICs and switches, whose flows the
/// replica shortcut lays for every member, so replica 0 standing for all is
/// exact, not an estimate.
bool replica_is_a_node(const Scenario& s);

/// The one rule every caller applies: kOn, and kAuto above
/// kReplicaShortcutDevices or where replica_is_a_node, simulate replica 0
/// alone when dp > 1.
inline constexpr int64_t kReplicaShortcutDevices = 2048;
bool use_replica_shortcut(const Scenario& s, ReplicaShortcut mode);

/// Runs the engine on a lowered step: the native engine, or a backend in
/// another process (the SimGrid worker).
using Simulator =
    std::function<EngineResult(const ProgramSet&, const Mesh&, const Topology&, const ChipSpec&, const EngineOptions&)>;

/// The engine options of a step of `s`.
EngineOptions step_engine_options(const Scenario& s, const std::vector<uint32_t>& trace_devices, bool replica_shortcut);

/// Lowers and simulates `s`, recording the spans of `trace_devices`. With
/// `replica_shortcut`, only data-parallel replica 0 is simulated. `simulator`
/// defaults to the native engine; `backend` names it in the report.
/// Whether a step's critical path is computed (StepReport::critical_path):
/// it records every running device's ops, memory and time in proportion
/// (about 150 bytes and 1 µs per op instance), so kAuto computes it up to
/// kCriticalPathAutoOps op instances and says why not beyond.
enum class CriticalPathMode : uint8_t { kAuto, kOn, kOff };
inline constexpr int64_t kCriticalPathAutoOps = int64_t{1} << 22;

/// With a critical-path mode other than kOff, the report carries the step's
/// critical path (the timeline still keeps `trace_devices`' spans only).
StepRun run_training_step(const Scenario& s, const std::vector<uint32_t>& trace_devices, bool replica_shortcut = false,
                          const Simulator& simulator = {}, const std::string& backend = "native",
                          CriticalPathMode critical_path = CriticalPathMode::kOff);

struct SimulateOptions {
  std::vector<uint32_t> trace_devices;  ///< devices whose spans the timeline keeps
  ReplicaShortcut replica_shortcut = ReplicaShortcut::kAuto;
  bool timing = true;  ///< false: the report's wall time is 0 (byte-identical output)
  /// The critical path (search, sweeps and validation turn it off).
  CriticalPathMode critical_path = CriticalPathMode::kAuto;
};

/// Simulates a step of `s` on the backend its "simulator" object names: the
/// native engine in this process, or SimGrid in a worker process that is
/// handed scenario_json(s) (the plan and device count as `s` holds them, so a
/// plan changed in memory is simulated as it is). Throws InputError or
/// UsageError.
StepRun simulate_step(const Scenario& s, const SimulateOptions& options = {});

/// The summary `shardsim simulate` prints.
std::string step_summary_text(const Scenario& s, const StepReport& r);

/// The Chrome trace of a run, written atomically to `file`. Throws
/// UsageError when it cannot be written.
void write_step_trace(const std::string& file, const StepRun& run);

}  // namespace shardsim
