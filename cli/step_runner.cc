#include "step_runner.h"

#include <chrono>

#include "shardsim/sim/engine.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"

namespace shardsim {

StepRun run_training_step(const Scenario& s, const std::vector<uint32_t>& trace_devices) {
  const auto t0 = std::chrono::steady_clock::now();
  StepRun run;
  run.program = lower_training_step(s);
  const auto topo = build_topology(s.cluster);
  const Mesh mesh = build_mesh(s.plan);
  EngineOptions opt;
  opt.trace_devices = trace_devices;
  opt.collective_base_latency = s.cluster.collective_base_latency;
  opt.pipelined = s.plan.pp > 1;
  EngineResult er = simulate(run.program, mesh, *topo, s.cluster.chip, opt);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  StepReport& r = run.report;
  r.scenario = s.file;
  r.model = s.model.name;
  r.chip = s.cluster.chip.name;
  r.devices = s.cluster.devices;
  r.step_time_s = er.step_time.seconds();
  // Model and executed FLOPs: every device runs the same program, so the
  // step's totals are the per-device sums times the device count.
  double model = 0, executed = 0;
  for (const Op& o : run.program.ops()) {
    model += o.model_flops.value();
    if (o.compute == ComputeKind::kMatmul || o.compute == ComputeKind::kAttention) {
      if (o.kind == OpKind::kCompute) executed += o.flops.value();
    }
  }
  const double devices = static_cast<double>(s.cluster.devices);
  // A tp group computes one replica's work; the model FLOPs of a device are
  // its share. (Pipeline stages, when they land, divide it the same way.)
  r.model_flops_per_step = model * devices;
  const double peak = s.cluster.chip.bf16_peak.value();
  // MFU (Chowdhery et al. 2022, PaLM, appendix B): model FLOPs per second over
  // the aggregate dense bf16 peak. HFU counts executed matmul and attention
  // FLOPs instead (they differ by recomputation and replicated KV heads).
  r.mfu = r.step_time_s > 0 ? r.model_flops_per_step / (r.step_time_s * devices * peak) : 0;
  r.hfu = r.step_time_s > 0 ? executed * devices / (r.step_time_s * devices * peak) : 0;
  r.model_tflops_per_device = r.step_time_s > 0 ? model / r.step_time_s / 1e12 : 0;
  r.tokens_per_step = s.plan.global_batch * s.plan.seq_len;
  r.tokens_per_s = r.step_time_s > 0 ? static_cast<double>(r.tokens_per_step) / r.step_time_s : 0;
  r.breakdown = er.breakdown;
  r.memory = training_memory(s);
  r.sim.events = er.events;
  r.sim.flows = er.flows;
  r.sim.devices = s.cluster.devices;
  r.sim.ops_per_device = static_cast<int64_t>(run.program.size());
  r.sim.wall_s = wall;
  run.timeline = std::move(er.timeline);
  return run;
}

}  // namespace shardsim
