// The programs a scenario's step runs: lowered from its model and plan, or
// read from its trace workload (a directory of Chakra traces), with the
// mesh they run on. What simulating a step, its SimGrid worker and the
// trace export start from.
#pragma once

#include <memory>
#include <string>

#include "shardsim/core/error.h"
#include "shardsim/core/program.h"
#include "shardsim/core/step_report.h"
#include "shardsim/interop/chakra.h"
#include "shardsim/topology/mesh.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

struct StepPrograms {
  ProgramSet programs;
  Mesh mesh;
  /// A trace workload's facts (its programs moved into `programs`); null
  /// for a lowered step.
  std::shared_ptr<const chakra::Trace> trace;
};

/// Lowers `s`, or reads its trace workload (chakra::read_trace, with the
/// workload's retime and the cluster's devices; the mesh is then data
/// parallel over every device, which per-rank programs do not consult).
/// Throws InputError.
StepPrograms step_programs(const Scenario& s);

/// The InputError a deadlock of a trace's programs is: the trace's file and
/// the node of the first op that never ran.
InputError deadlock_error(const Scenario& s, const StepPrograms& sp, const Deadlock& d);

/// A trace's memory: each rank's report from the memory model its file
/// carries (shardsim's exports), the largest; `known` false when a rank's
/// file carries none.
MemoryReport trace_memory(const chakra::Trace& trace, const ProgramSet& programs, int64_t capacity_bytes);

}  // namespace shardsim
