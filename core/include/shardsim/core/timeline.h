// Timeline: what ran where and when. Simulation and real execution both
// produce it, so the trace and comparison views work on either.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/core/units.h"

namespace shardsim {

/// One op executed on one device's stream.
struct TimelineSpan {
  uint32_t device = 0;
  uint32_t program = 0;  ///< index into ProgramSet::stages of the device's program
  StreamId stream = 0;
  OpId op = 0;
  SimTime start;
  SimTime end;
};

/// One point-to-point transfer (a flow of a collective, or a send/recv).
struct TimelineFlow {
  uint32_t src = 0;
  uint32_t dst = 0;
  uint32_t program = 0;  ///< program of `src`, where `op` lives
  OpId op = 0;
  Bytes bytes{0};
  SimTime start;
  SimTime end;
};

/// Spans and flows of the recorded devices, in the order they ended.
struct Timeline {
  std::vector<uint32_t> devices;  ///< devices recorded, ascending
  std::vector<TimelineSpan> spans;
  std::vector<TimelineFlow> flows;
  /// The step's critical path when it was computed (analysis/
  /// critical_path.h), on any device, recorded or not: each op on it with
  /// the stretch of the step it accounts for, in time order, tiling the
  /// step. Empty when it was not computed.
  std::vector<TimelineSpan> critical_path;
};

}  // namespace shardsim
