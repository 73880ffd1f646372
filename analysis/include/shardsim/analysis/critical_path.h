// The critical path of a step: the chain of op instances, each started by
// the one before it, that ends when the step ends; and every op's slack.
// Built from what happened (a Timeline of every device that ran, simulated
// or measured) over the graph of the step's dependencies: the programs'
// data and stream-order edges, the wait of a collective for its last member,
// and each pipeline transfer from its send to its receive.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/core/step_report.h"
#include "shardsim/core/timeline.h"
#include "shardsim/core/units.h"
#include "shardsim/topology/mesh.h"

namespace shardsim {

/// One op instance on the path and the stretch of the step it accounts for:
/// a compute op's run, a collective from its last member's arrival to its
/// end, a transfer from its send to its arrival.
struct PathOp {
  uint32_t device = 0;   ///< for a collective, the member that arrived last
  uint32_t program = 0;  ///< index into ProgramSet::stages
  OpId op = 0;
  SimTime start;
  SimTime end;
};

struct CriticalPath {
  /// The longest path's length: the step time of the timeline.
  SimTime length;
  /// The path in time order, ops of zero length left out: the first starts
  /// at 0, each starts where the one before ended, the last ends at `length`.
  std::vector<PathOp> ops;
  /// Per timeline span (same index): how much later it could have ended
  /// without the step ending later, every other duration held fixed. Zero
  /// on the path. For a collective member, the slack of its arrival.
  std::vector<SimTime> slack;
};

/// Where a timeline's times come from.
enum class TimelineClock {
  /// A simulation: one clock, and every op starts when its last dependency
  /// ended. The path is exact.
  kSimulated,
  /// A real run (`shardsim run`): each rank's own clock, zeroed as it left
  /// the barrier that started the step, so an op may seem to end before a
  /// dependency on another rank did (by that skew). Such a negative wait
  /// counts as zero; the path's ops still tile the step from 0 to its end.
  kMeasured,
};

/// The critical path of a step whose timeline recorded every device that
/// ran (EngineOptions::trace_devices). Members of a collective, and the
/// peers of transfers, that the timeline lacks (devices the symmetry
/// reduction or the replica shortcut stood in for) are taken to have
/// arrived with the recorded ones; with `symmetry` (EngineResult::symmetry)
/// a receive from a sender that did not run pairs with the transfers its
/// canonical device sent to the receiver's image.
/// Throws std::logic_error when a simulated timeline does not follow the
/// programs' dependencies (a span ending before one of its dependencies
/// ended), or when any timeline lacks a span a recorded one depends on.
CriticalPath critical_path(const ProgramSet& programs, const Mesh& mesh, const Timeline& timeline,
                           TimelineClock clock = TimelineClock::kSimulated, const MeshSymmetry* symmetry = nullptr);

/// The path as timeline spans (Timeline::critical_path): each op with the
/// stream it ran on and the stretch it accounts for.
std::vector<TimelineSpan> path_spans(const ProgramSet& programs, const CriticalPath& path);

/// What a path op is, for totals: "compute: matmul", "tp comm: all-reduce",
/// "pp send next: transfer".
std::string path_category(const Program& program, OpId op);

/// The path's time by category (seconds, summing to its length), largest
/// first; ties by name.
std::vector<std::pair<std::string, double>> path_time_by_category(const ProgramSet& programs, const CriticalPath& path);

/// What a report shows of a path: its time by category, and its longest
/// `top` segments (consecutive path ops on one device and stream).
CriticalPathReport critical_path_report(const ProgramSet& programs, const CriticalPath& path, size_t top = 10);

}  // namespace shardsim
