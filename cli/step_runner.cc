#include "step_runner.h"

#include <algorithm>
#include <chrono>

#include "shardsim/core/error.h"
#include "shardsim/sim/compute_model.h"
#include "shardsim/sim/engine.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"

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
      if (o.kind == OpKind::kCompute) {
        ps += static_cast<double>(compute_time(o, s.cluster.chip).ps());
      } else {
        ps += static_cast<double>(o.comm_bytes.value()) / 1e9 * 1e12;
      }
      if (ps > kLimitPs) {
        throw InputError(s.file, "/plan",
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
  opt.calibration = s.cluster.calibration.get();
  return opt;
}

StepRun run_training_step(const Scenario& s, const std::vector<uint32_t>& trace_devices, bool replica_shortcut,
                          const Simulator& simulator, const std::string& backend) {
  const auto t0 = std::chrono::steady_clock::now();
  StepRun run;
  run.programs = lower_step(s);
  check_step_fits_in_time(s, run.programs);
  const auto topo = build_topology(s.cluster);
  const Mesh mesh = build_mesh(s.plan);
  const EngineOptions opt = step_engine_options(s, trace_devices, replica_shortcut);
  EngineResult er = simulator ? simulator(run.programs, mesh, *topo, s.cluster.chip, opt)
                              : simulate(run.programs, mesh, *topo, s.cluster.chip, opt);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  StepReport& r = run.report;
  r.scenario = s.file;
  r.config_hash = s.config_hash;
  r.version = SHARDSIM_VERSION;
  r.model = s.model.name;
  r.chip = s.cluster.chip.name;
  r.devices = s.cluster.devices;
  r.step_time_s = er.step_time.seconds();
  // Model and executed FLOPs: every device of a stage runs its stage's
  // program, so the step's totals are the per-stage sums times the devices
  // per stage.
  double model = 0, executed = 0;
  size_t max_ops = 0;
  for (const Program& p : run.programs.stages) {
    max_ops = std::max(max_ops, p.size());
    for (const Op& o : p.ops()) {
      model += o.model_flops.value();
      if (o.kind == OpKind::kCompute && (o.compute == ComputeKind::kMatmul || o.compute == ComputeKind::kAttention)) {
        executed += o.flops.value();
      }
    }
  }
  const double devices = static_cast<double>(s.cluster.devices);
  const double per_stage = devices / static_cast<double>(s.plan.pp);
  r.model_flops_per_step = model * per_stage;
  const double peak = s.cluster.chip.bf16_peak.value();
  // MFU (Chowdhery et al. 2022, PaLM, appendix B): model FLOPs per second over
  // the aggregate dense bf16 peak. HFU counts executed matmul and attention
  // FLOPs instead (they differ by recomputation and replicated KV heads).
  r.mfu = r.step_time_s > 0 ? r.model_flops_per_step / (r.step_time_s * devices * peak) : 0;
  r.hfu = r.step_time_s > 0 ? executed * per_stage / (r.step_time_s * devices * peak) : 0;
  r.model_tflops_per_device = r.step_time_s > 0 ? r.model_flops_per_step / devices / r.step_time_s / 1e12 : 0;
  r.hardware_tflops_per_device = r.step_time_s > 0 ? executed * per_stage / devices / r.step_time_s / 1e12 : 0;
  // A decode step makes one token per sequence; training and prefill
  // process every token of every sequence.
  r.tokens_per_step = s.plan.phase == Phase::kDecode ? s.plan.global_batch : s.plan.global_batch * s.plan.seq_len;
  r.tokens_per_s = r.step_time_s > 0 ? static_cast<double>(r.tokens_per_step) / r.step_time_s : 0;
  r.breakdown = er.breakdown;
  r.critical_device = er.critical_device;
  r.compute_by_kind_s = er.compute_by_kind_s;
  r.comm_busy_by_stream_s = er.comm_busy_by_stream_s;
  r.memory = step_memory(s, &run.programs);
  r.binding = binding_constraint(r);
  r.sim.events = er.events;
  r.sim.flows = er.flows;
  r.sim.devices = s.cluster.devices;
  r.sim.ops_per_device = static_cast<int64_t>(max_ops);
  r.sim.simulated_devices = er.active_devices;
  r.sim.wall_s = wall;
  r.sim.backend = backend;
  run.timeline = std::move(er.timeline);
  return run;
}

}  // namespace shardsim
