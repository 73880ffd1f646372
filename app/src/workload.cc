#include "shardsim/app/workload.h"

#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"

namespace shardsim {

StepPrograms step_programs(const Scenario& s) {
  if (!s.workload.present) return {lower_step(s), build_mesh(s.plan), nullptr};
  chakra::ReadOptions opt;
  opt.retime = s.workload.retime;
  opt.devices = s.cluster.devices;
  auto trace = std::make_shared<chakra::Trace>(chakra::read_trace(s.workload.dir, opt));
  Plan flat;  // every device data parallel: the mesh only sizes the cluster
  flat.dp = s.cluster.devices;
  StepPrograms sp{std::move(trace->programs), build_mesh(flat), nullptr};
  trace->programs = {};
  sp.trace = std::move(trace);
  return sp;
}

InputError deadlock_error(const Scenario& s, const StepPrograms& sp, const Deadlock& d) {
  if (sp.trace == nullptr || d.device >= sp.trace->files.size()) {
    return InputError(s.file, "", d.what());
  }
  const chakra::Trace& t = *sp.trace;
  const Program& p = sp.programs.stages[sp.programs.program_of[d.device]];
  const uint64_t node = d.op < t.node_of[d.device].size() ? t.node_of[d.device][d.op] : 0;
  return InputError(t.files[d.device], "/node/" + std::to_string(node),
                    "the trace deadlocks: this node (" + p.label(d.op) +
                        ") never completes: every rank waits on another " +
                        "(a collective or a receive whose peers wait in turn)");
}

MemoryReport trace_memory(const chakra::Trace& t, const ProgramSet& programs, int64_t capacity_bytes) {
  MemoryReport best;
  best.capacity_bytes = capacity_bytes;
  bool any = false;
  for (const chakra::RankMeta& meta : t.meta) any = any || meta.memory.present || meta.traced_tensors;
  if (!any) {
    best.known = false;
    return best;
  }
  for (int64_t r = 0; r < t.ranks; ++r) {
    const chakra::RankMeta& meta = t.meta[static_cast<size_t>(r)];
    const chakra::RankMemory& m = meta.memory;
    const Program& program = programs.stages[static_cast<size_t>(r)];
    if (!m.present) {
      // A foreign rank: the peak of the device tensors its nodes name, each
      // live from the first node naming it to the last (none: nothing).
      MemoryReport rep;
      rep.capacity_bytes = capacity_bytes;
      const ProgramMemory w = walk_program_memory(program);
      rep.components.push_back({"traced_tensors", w.peak});
      rep.peak_bytes_per_device = w.peak;
      rep.fits = w.peak <= capacity_bytes;
      if (meta.traced_tensors && program.size() > 0)
        rep.peak_at = "rank " + std::to_string(r) + ": " + program.label(w.peak_op);
      if (r == 0 || rep.peak_bytes_per_device > best.peak_bytes_per_device) best = rep;
      continue;
    }
    StageMemoryModel model;
    for (const auto& [name, bytes] : m.resident) model.resident.push_back({name, bytes});
    model.walk_program = m.walk_program;
    model.finish = m.finish;
    model.allocator_overhead = m.allocator_overhead;
    model.reserved_bytes = m.reserved_bytes;
    const MemoryReport rep = stage_memory_report(model, program, capacity_bytes, "rank " + std::to_string(r));
    if (r == 0 || rep.peak_bytes_per_device > best.peak_bytes_per_device) best = rep;
  }
  return best;
}

}  // namespace shardsim
