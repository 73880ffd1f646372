// Chrome Trace Event Format (loads in Perfetto and chrome://tracing).
#pragma once

#include <cstdio>
#include <string>

#include "shardsim/core/program.h"
#include "shardsim/core/timeline.h"

namespace shardsim {

/// A process per recorded device, a thread per stream, a complete ("X")
/// event per op with its FLOPs and bytes, and flow arrows ("s"/"f") for
/// point-to-point transfers between recorded devices. Times in microseconds.
/// With the timeline's critical path: a "critical path" process listed
/// first (pid one past the largest device), one slice per path op (the
/// stretch it accounts for; args name its device and stream), and
/// "critical_path": true in the args of recorded ops on the path.
std::string chrome_trace_json(const ProgramSet& programs, const Timeline& timeline);
/// The same, streamed to `file` a megabyte at a time. False on a write error.
bool write_chrome_trace(std::FILE* file, const ProgramSet& programs, const Timeline& timeline);

}  // namespace shardsim
