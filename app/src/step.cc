#include "shardsim/app/step.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "output.h"
#include "shardsim/analysis/critical_path.h"
#include "shardsim/app/workload.h"
#include "shardsim/core/error.h"
#include "shardsim/sim/compute_model.h"
#include "shardsim/sim/engine.h"
#include "shardsim/viz/chrome_trace.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"
#include "simgrid_client.h"

namespace shardsim {
namespace {

/// Simulated time is int64 picoseconds (about 106 days). Refuse steps whose
/// compute, plus their communication at a pessimistic 1 GB/s, would take
/// more than 2^60 ps (13 days) on one device: nothing can overflow then.
void check_step_fits_in_time(const Scenario& s, const ProgramSet& programs) {
  constexpr double kLimitPs = static_cast<double>(int64_t{1} << 60);
  for (const Program& p : programs.stages) {
    double ps = 0;
    for (const Op& o : p.ops()) {
      if (o.kind == OpKind::kCompute && o.timing != OpTiming::kModel) {
        ps += static_cast<double>(o.recorded.ps());
      } else if (o.kind == OpKind::kCompute) {
        ps += static_cast<double>(compute_time(o, s.cluster.chip).ps());
      } else {
        ps += static_cast<double>(o.comm_bytes.value()) / 1e9 * 1e12;
      }
      if (ps > kLimitPs) {
        throw InputError(s.workload.present ? s.workload.dir : s.file, s.workload.present ? "" : "/plan",
                         "one step would take more than 13 simulated days on a device; shrink the batch, the "
                         "sequence or the model");
      }
    }
  }
}

/// The constraint that binds a step (see StepReport::binding).
std::string binding_constraint(const StepReport& r) {
  if (!r.memory.fits) return "memory";
  const StepBreakdown& b = r.breakdown;
  const double most = std::max({b.compute_s, b.exposed_comm_s, b.bubble_s, b.other_s});
  if (most == b.compute_s) return "compute";
  if (most == b.exposed_comm_s) {
    std::string stream = "?";
    double busiest = -1;
    for (const auto& [name, seconds] : r.comm_busy_by_stream_s) {
      if (seconds > busiest) {
        busiest = seconds;
        stream = name;
      }
    }
    return "communication (" + stream + ")";
  }
  return most == b.bubble_s ? "pipeline bubble" : "waiting";
}

}  // namespace

EngineOptions step_engine_options(const Scenario& s, const std::vector<uint32_t>& trace_devices,
                                  bool replica_shortcut) {
  EngineOptions opt;
  opt.trace_devices = trace_devices;
  opt.collective = s.cluster.collective;
  opt.replica_shortcut = replica_shortcut;
  opt.symmetry = s.simulator.symmetry;
  opt.calibration = s.cluster.calibration.get();
  opt.compute_speedup = s.simulator.speedup.compute;
  opt.stream_speedup = s.simulator.speedup.stream;
  return opt;
}

namespace {

/// Throws InputError when simulator.speedup names a stream ("stream:NAME")
/// that the step's programs do not have.
void check_speedup_streams(const Scenario& s, const ProgramSet& programs) {
  // The streams of every program (per-rank programs may differ).
  std::vector<std::string> streams;
  for (const Program& p : programs.stages) {
    for (const std::string& st : p.stream_names()) {
      if (st != "compute" && std::find(streams.begin(), streams.end(), st) == streams.end()) streams.push_back(st);
    }
  }
  for (const auto& [name, k] : s.simulator.speedup.stream) {
    std::string names;
    bool found = false;
    for (const std::string& st : streams) {
      found = found || st == name;
      names += (names.empty() ? "" : ", ") + st;
    }
    if (!found) {
      throw InputError(s.file, "/simulator/speedup/stream:" + name,
                       "expected a communication stream of this step's programs (" + names + ")");
    }
  }
}

}  // namespace

namespace detail {

std::string critical_path_line(const CriticalPathReport& cp) {
  std::string o;
  if (cp.present) {
    std::string cats;
    for (size_t i = 0; i < cp.by_category_s.size() && i < 4; ++i) {
      appendf(cats, "%s%s %.1f%%", i > 0 ? ", " : "", cp.by_category_s[i].first.c_str(),
              cp.length_s > 0 ? 100 * cp.by_category_s[i].second / cp.length_s : 0.0);
    }
    appendf(o, "  critical path      %s (%lld ops on %lld device%s)\n", cats.c_str(), static_cast<long long>(cp.ops),
            static_cast<long long>(cp.devices), cp.devices == 1 ? "" : "s");
  } else if (!cp.skipped.empty()) {
    appendf(o, "  critical path      not computed: %s\n", cp.skipped.c_str());
  }
  return o;
}

}  // namespace detail

StepRun run_training_step(const Scenario& s, const std::vector<uint32_t>& trace_devices, bool replica_shortcut,
                          const Simulator& simulator, const std::string& backend, CriticalPathMode critical_path) {
  const auto t0 = std::chrono::steady_clock::now();
  StepRun run;
  StepPrograms sp = step_programs(s);
  run.programs = std::move(sp.programs);
  check_step_fits_in_time(s, run.programs);
  check_speedup_streams(s, run.programs);
  const auto topo = build_topology(s.cluster);
  const Mesh& mesh = sp.mesh;
  EngineOptions opt = step_engine_options(s, trace_devices, replica_shortcut);
  // The critical path needs every running device's op instances recorded;
  // auto stops at kCriticalPathAutoOps of them. The native engine knows how
  // many devices its symmetry leaves running; another backend runs every
  // device (replica 0's with the replica shortcut).
  int64_t instances = 0;
  if (critical_path == CriticalPathMode::kAuto && simulator) {
    const int64_t running = replica_shortcut ? s.cluster.devices / s.plan.dp : s.cluster.devices;
    for (const Program& p : run.programs.stages) {
      instances += static_cast<int64_t>(p.size()) * (running / static_cast<int64_t>(run.programs.stages.size()));
    }
    if (instances > kCriticalPathAutoOps) critical_path = CriticalPathMode::kOff;
  }
  opt.spans_of_every_device = critical_path != CriticalPathMode::kOff;
  if (critical_path == CriticalPathMode::kAuto) opt.span_instance_limit = kCriticalPathAutoOps;
  EngineResult er;
  try {
    er = simulator ? simulator(run.programs, mesh, *topo, s.cluster.chip, opt)
                   : simulate(run.programs, mesh, *topo, s.cluster.chip, opt);
  } catch (const Deadlock& d) {
    sp.programs = std::move(run.programs);
    throw deadlock_error(s, sp, d);
  }
  if (er.spans_over_limit) instances = er.op_instances;
  if (instances > kCriticalPathAutoOps) {
    detail::appendf(run.report.critical_path.skipped,
                    "%.3g op instances, over the %.3g that --critical-path auto computes; ask with on",
                    static_cast<double>(instances), static_cast<double>(kCriticalPathAutoOps));
  }
  if (opt.spans_of_every_device && !er.spans_over_limit) {
    const CriticalPath path =
        shardsim::critical_path(run.programs, mesh, er.timeline, TimelineClock::kSimulated, &er.symmetry);
    run.report.critical_path = critical_path_report(run.programs, path);
    er.timeline.critical_path = path_spans(run.programs, path);
    // The timeline keeps the traced devices' spans only.
    std::erase_if(er.timeline.spans, [&](const TimelineSpan& sp) {
      return !std::binary_search(er.timeline.devices.begin(), er.timeline.devices.end(), sp.device);
    });
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  StepReport& r = run.report;
  r.scenario = s.file;
  r.config_hash = s.config_hash;
  r.version = SHARDSIM_VERSION;
  const chakra::Trace* trace = sp.trace.get();
  r.model = trace != nullptr && !trace->meta.empty() && !trace->meta.front().model.empty() ? trace->meta.front().model
                                                                                           : s.model.name;
  if (trace != nullptr) {
    detail::appendf(r.workload, "chakra trace %s: %lld ranks, %lld nodes, schema %s", s.workload.dir.c_str(),
                    static_cast<long long>(trace->ranks), static_cast<long long>(trace->nodes),
                    trace->producer.c_str());
  }
  r.chip = s.cluster.chip.name;
  r.devices = s.cluster.devices;
  r.step_time_s = er.step_time.seconds();
  // Model and executed FLOPs: each program's sums times the devices that
  // run it (every device of a stage runs its stage's program; per rank,
  // one).
  std::vector<double> runners(run.programs.stages.size(), static_cast<double>(s.cluster.devices / s.plan.pp));
  if (run.programs.per_rank()) {
    std::fill(runners.begin(), runners.end(), 0.0);
    for (uint32_t p : run.programs.program_of) runners[p] += 1;
  }
  double model = 0, executed = 0;
  size_t max_ops = 0;
  for (size_t i = 0; i < run.programs.stages.size(); ++i) {
    const Program& p = run.programs.stages[i];
    max_ops = std::max(max_ops, p.size());
    for (const Op& o : p.ops()) {
      model += o.model_flops.value() * runners[i];
      if (o.kind == OpKind::kCompute && (o.compute == ComputeKind::kMatmul || o.compute == ComputeKind::kAttention)) {
        executed += o.flops.value() * runners[i];
      }
    }
  }
  const double devices = static_cast<double>(s.cluster.devices);
  r.model_flops_per_step = model;
  const double peak = s.cluster.chip.bf16_peak.value();
  // MFU (Chowdhery et al. 2022, PaLM, appendix B): model FLOPs per second over
  // the aggregate dense bf16 peak. HFU counts executed matmul and attention
  // FLOPs instead (they differ by recomputation and replicated KV heads).
  r.mfu = r.step_time_s > 0 ? r.model_flops_per_step / (r.step_time_s * devices * peak) : 0;
  r.hfu = r.step_time_s > 0 ? executed / (r.step_time_s * devices * peak) : 0;
  r.model_tflops_per_device = r.step_time_s > 0 ? r.model_flops_per_step / devices / r.step_time_s / 1e12 : 0;
  r.hardware_tflops_per_device = r.step_time_s > 0 ? executed / devices / r.step_time_s / 1e12 : 0;
  r.tokens_per_step =
      trace != nullptr ? (trace->meta.empty() ? 0 : trace->meta.front().tokens_per_step) : s.plan.tokens_per_step();
  r.tokens_per_s = r.step_time_s > 0 ? static_cast<double>(r.tokens_per_step) / r.step_time_s : 0;
  r.breakdown = er.breakdown;
  r.critical_device = er.critical_device;
  r.compute_by_kind_s = er.compute_by_kind_s;
  r.compute_beside_comm_s = er.compute_beside_comm_s;
  r.comm_busy_by_stream_s = er.comm_busy_by_stream_s;
  r.memory = trace != nullptr ? trace_memory(*trace, run.programs, s.cluster.chip.hbm_capacity.value())
                              : step_memory(s, &run.programs);
  r.binding = binding_constraint(r);
  r.sim.events = er.events;
  r.sim.flows = er.flows;
  r.sim.devices = s.cluster.devices;
  r.sim.ops_per_device = static_cast<int64_t>(max_ops);
  r.sim.simulated_devices = er.active_devices;
  r.sim.symmetry = er.symmetry_note;
  r.sim.replica_estimate = replica_shortcut && er.symmetry.step_of(mesh, MeshAxis::kDp) > 1;
  r.sim.wall_s = wall;
  r.sim.backend = backend;
  run.timeline = std::move(er.timeline);
  return run;
}

bool replica_is_a_node(const Scenario& s) {
  if (s.cluster.fabric != FabricKind::kNvswitchFatTree) return false;
  const int64_t g = s.cluster.fat_tree.gpus_per_node;
  const Mesh mesh = build_mesh(s.plan);
  return s.plan.tp * s.plan.cp * s.plan.pp == g && s.cluster.devices % g == 0 && mesh.size(MeshAxis::kEp) == 1 &&
         mesh.size(MeshAxis::kDs) == 1 && s.plan.mesh_order.back() == MeshAxis::kDp;
}

bool use_replica_shortcut(const Scenario& s, ReplicaShortcut mode) {
  // A trace's ranks each run their own program: no replica stands for others.
  if (s.workload.present || s.plan.dp <= 1 || mode == ReplicaShortcut::kOff) return false;
  return mode == ReplicaShortcut::kOn || s.cluster.devices > kReplicaShortcutDevices || replica_is_a_node(s);
}

StepRun simulate_step(const Scenario& s, const SimulateOptions& options) {
  std::string backend;
  const Simulator simulator = simulator_for(s, backend);
  StepRun run = run_training_step(s, options.trace_devices, use_replica_shortcut(s, options.replica_shortcut),
                                  simulator, backend, options.critical_path);
  if (!options.timing) run.report.sim.wall_s = 0;
  return run;
}

void write_step_trace(const std::string& file, const StepRun& run) {
  detail::write_output_file(file, [&](std::FILE* f) { return write_chrome_trace(f, run.programs, run.timeline); });
}

namespace {

std::string gib_text(int64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / (1024.0 * 1024 * 1024));
  return buf;
}

}  // namespace

std::string step_summary_text(const Scenario& s, const StepReport& r) {
  std::string o;
  const Plan& p = s.plan;
  if (!r.workload.empty()) {
    detail::appendf(o, "%s on %lld x %s%s\n", r.workload.c_str(), static_cast<long long>(r.devices), r.chip.c_str(),
                    s.workload.retime ? " (compute retimed)" : "");
  } else {
    // Expert parallelism where there is some: its degree, the experts' own
    // tp, and whether its groups fold over tp and cp (Plan::expert_layout).
    std::string experts;
    if (p.ep > 1) {
      detail::appendf(experts, ", ep %lld%s", static_cast<long long>(p.ep), expert_fold(p) > 1 ? " folded" : "");
      if (p.expert_tp > 1) detail::appendf(experts, ", expert tp %lld", static_cast<long long>(p.expert_tp));
    }
    detail::appendf(
        o,
        "%s on %lld x %s (dp %lld, tp %lld, pp %lld, cp %lld%s, zero %d%s), %lld microbatches of %lld x %lld tokens\n",
        r.model.c_str(), static_cast<long long>(r.devices), r.chip.c_str(), static_cast<long long>(p.dp),
        static_cast<long long>(p.tp), static_cast<long long>(p.pp), static_cast<long long>(p.cp), experts.c_str(),
        p.zero, p.sequence_parallel ? ", sequence parallel" : "", static_cast<long long>(p.microbatches()),
        static_cast<long long>(p.microbatch_size), static_cast<long long>(p.seq_len));
  }
  detail::appendf(o, "  step time          %.4f s   (%.4g tokens/s)\n", r.step_time_s, r.tokens_per_s);
  detail::appendf(o, "  MFU                %.1f %%    (HFU %.1f %%; per device %.1f model, %.1f hardware TFLOP/s)\n",
                  100 * r.mfu, 100 * r.hfu, r.model_tflops_per_device, r.hardware_tflops_per_device);
  detail::appendf(o, "  bound by           %s\n", r.binding.c_str());
  if (s.cluster.chip.compute_clock_scale != 1.0) {
    detail::appendf(o,
                    "  clock              matmul and attention at %.3g of the %s rates (cluster.compute_clock_scale)\n",
                    s.cluster.chip.compute_clock_scale, r.chip.c_str());
  }
  const auto& b = r.breakdown;
  auto pct = [&](double x) { return r.step_time_s > 0 ? 100 * x / r.step_time_s : 0.0; };
  detail::appendf(
      o, "  breakdown          compute %.4f s (%.1f%%), exposed comm %.4f s (%.1f%%), bubble %.4f s, other %.4f s\n",
      b.compute_s, pct(b.compute_s), b.exposed_comm_s, pct(b.exposed_comm_s), b.bubble_s, b.other_s);
  auto list = [](const std::vector<std::pair<std::string, double>>& items) {
    std::string out;
    for (const auto& [name, seconds] : items)
      detail::appendf(out, "%s%s %.4f s", out.empty() ? "" : ", ", name.c_str(), seconds);
    return out.empty() ? std::string("none") : out;
  };
  detail::appendf(o, "  device %lld compute  %s\n", static_cast<long long>(r.critical_device),
                  list(r.compute_by_kind_s).c_str());
  if (r.compute_beside_comm_s > 0) {
    detail::appendf(o, "  device %lld compute  %.4f s of it added by communication beside it (SMs and HBM it holds)\n",
                    static_cast<long long>(r.critical_device), r.compute_beside_comm_s);
  }
  detail::appendf(o, "  device %lld comm     %s (busy, overlapping)\n", static_cast<long long>(r.critical_device),
                  list(r.comm_busy_by_stream_s).c_str());
  o += detail::critical_path_line(r.critical_path);
  if (!r.memory.known) {
    o += "  memory per device  unknown (the trace records no memory)\n";
  } else {
    detail::appendf(o, "  memory per device  %s of %s: %s\n", gib_text(r.memory.peak_bytes_per_device).c_str(),
                    gib_text(r.memory.capacity_bytes).c_str(), r.memory.fits ? "fits" : "DOES NOT FIT");
  }
  if (!r.memory.peak_at.empty()) detail::appendf(o, "    peak at %s\n", r.memory.peak_at.c_str());
  if (!r.memory.fits) {
    auto comps = r.memory.components;
    std::sort(comps.begin(), comps.end(), [](const auto& x, const auto& y) { return x.bytes > y.bytes; });
    o += "    largest:";
    for (size_t i = 0; i < comps.size() && i < 3; ++i) {
      detail::appendf(o, "%s %s %s", i ? "," : "", comps[i].name.c_str(), gib_text(comps[i].bytes).c_str());
    }
    o += "\n";
  }
  detail::appendf(
      o,
      "  simulation         %s: %llu events, %llu flows, %lld ops per device, %lld of %lld devices run, %.3f s "
      "wall\n",
      r.sim.backend.c_str(), static_cast<unsigned long long>(r.sim.events),
      static_cast<unsigned long long>(r.sim.flows), static_cast<long long>(r.sim.ops_per_device),
      static_cast<long long>(r.sim.simulated_devices), static_cast<long long>(r.devices), r.sim.wall_s);
  if (!r.sim.symmetry.empty()) detail::appendf(o, "    symmetry: %s (exact)\n", r.sim.symmetry.c_str());
  if (r.sim.replica_estimate) {
    o += "    replica shortcut: data-parallel replica 0 stands for the others (an estimate: their own traffic is "
         "not simulated)\n";
  }
  return o;
}

}  // namespace shardsim
