#include "shardsim/workloads/plan_space.h"

#include <algorithm>
#include <cmath>

#include "plan_fields.h"
#include "shardsim/workloads/framework.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"
#include "shardsim/workloads/pipeline_bound.h"

namespace shardsim {
namespace {

std::vector<int64_t> powers_of_two_dividing(int64_t n, int64_t limit) {
  std::vector<int64_t> out;
  for (int64_t x = 1; x <= limit && n % x == 0; x *= 2) out.push_back(x);
  return out;
}

std::vector<int64_t> divisors(int64_t n, int64_t limit) {
  std::vector<int64_t> out;
  for (int64_t x = 1; x <= limit && x <= n; ++x) {
    if (n % x == 0) out.push_back(x);
  }
  return out;
}

/// FLOPs of the step split into matmul and attention, all devices, with the
/// forward passes that recomputation repeats (flops.cc gives the model part:
/// the forward is a third of each term).
struct StepFlops {
  double matmul = 0;
  double attention = 0;
};
StepFlops step_flops(const ModelSpec& m, const Plan& p) {
  const double total = closed_form_model_flops(m, p);
  StepFlops f;
  f.attention = 3.0 * m.attention_flops_per_pair() * attention_pairs_all_layers(m, p.seq_len) *
                static_cast<double>(p.global_batch);
  f.matmul = total - f.attention;
  if (p.recompute == Recompute::kFull) {
    f.matmul *= 4.0 / 3.0;
    f.attention *= 4.0 / 3.0;
  } else if (p.recompute == Recompute::kSelective) {
    f.attention *= 4.0 / 3.0;  // the attention core's forward runs again
  }
  return f;
}

double pipeline_stretch(const Plan& p) {
  if (p.pp <= 1) return 1.0;
  const double mv = static_cast<double>(p.microbatches()) * static_cast<double>(p.virtual_stages);
  return 1.0 + static_cast<double>(p.pp - 1) / mv;
}

/// Compute time of the average device at the roofline's best, or with a
/// calibration profile at its fastest measured rates (calibrated matmul and
/// attention ops take exactly FLOPs / measured rate, sim/compute_model.cc; a
/// kind the profile did not measure falls back to its streaming time, which
/// may be shorter than any FLOP rate, so it bounds nothing).
double compute_bound_s(const Scenario& s) {
  const ChipSpec& c = s.cluster.chip;
  const Plan& p = s.plan;
  const StepFlops f = step_flops(s.model, p);
  const double devices = static_cast<double>(s.cluster.devices);
  if (const CalibrationProfile* profile = s.cluster.calibration.get()) {
    double matmul_rate = 0;
    for (const auto& point : profile->matmul) matmul_rate = std::max(matmul_rate, point.flops_per_s);
    double t = 0;
    if (matmul_rate > 0) t += f.matmul / devices / matmul_rate;
    if (profile->attention_flops_per_s > 0) t += f.attention / devices / profile->attention_flops_per_s;
    return t;
  }
  // Under a power cap the tensor cores run at compute_clock_scale of their rate.
  const double matmul_peak = c.matmul_peak(p.matmul_dtype).value() * c.compute_clock_scale;
  const double attention_peak = std::max(c.bf16_peak.value(), c.fp8_peak.value()) * c.compute_clock_scale;
  return f.matmul / devices / (matmul_peak * c.best_matmul_efficiency(p.matmul_dtype)) +
         f.attention / devices / (attention_peak * c.attention_efficiency);
}

/// One-way bandwidth a device has towards a group of `size` devices whose
/// members are `stride` device ids apart (bytes/s, after link efficiency).
double group_bandwidth(const ClusterSpec& c, int64_t size, int64_t stride) {
  if (c.fabric == FabricKind::kTorus) {
    // Rings along the torus axes the group spans, both directions.
    return 2.0 * c.torus.link_bandwidth.value() * c.torus.link_efficiency;
  }
  const FatTreeSpec& f = c.fat_tree;
  const int64_t span = size * stride;  // consecutive device ids the group covers
  if (span <= f.gpus_per_node) return f.nvlink_bandwidth.value() * f.nvlink_efficiency;
  const double nic = f.nic_bandwidth.value() * f.nic_efficiency;
  // Beyond one leaf the uplinks are shared oversubscription-fold.
  const int64_t leaf_span = f.nics_per_leaf * (f.rail_optimized ? f.gpus_per_node : 1);
  return span > leaf_span ? nic / std::max(1.0, f.oversubscription) : nic;
}

/// Ring time of a collective moving `fraction`·bytes through each device.
double ring_s(double bytes, int64_t size, double bandwidth) {
  if (size <= 1 || bandwidth <= 0) return 0;
  return bytes * static_cast<double>(size - 1) / static_cast<double>(size) / bandwidth;
}

}  // namespace

double step_time_lower_bound_s(const Scenario& s) {
  return pipeline_lower_bound(s.plan, chunk_work_from_flops(s));
}

double step_time_estimate_s(const Scenario& s) {
  const Plan& p = s.plan;
  const ModelSpec& m = s.model;
  const ClusterSpec& c = s.cluster;
  const double compute = compute_bound_s(s);
  const double layers_here = static_cast<double>(m.layers) / static_cast<double>(p.pp);
  const double mbs = static_cast<double>(p.microbatches());
  const double tokens_mb = static_cast<double>(p.microbatch_size * p.seq_len / p.cp);
  const double act_bytes = 2.0 * tokens_mb * static_cast<double>(m.hidden);  // bf16 activations
  // Tensor parallelism: two all-gather/reduce-scatter pairs (or all-reduces)
  // forward and again backward per layer, each on the critical path.
  double tp_s = 0;
  if (p.tp > 1) {
    const double per = ring_s(act_bytes, p.tp, group_bandwidth(c, p.tp, 1)) * (p.sequence_parallel ? 1.0 : 2.0);
    const double passes = p.recompute == Recompute::kFull ? 3.0 : 2.0;
    tp_s = per * 2.0 * passes * layers_here * mbs;
  }
  // Expert parallelism: dispatch and combine all-to-alls forward and backward.
  double ep_s = 0;
  if (m.is_moe() && p.ep > 1) {
    const double a2a = act_bytes / static_cast<double>(p.tp) * static_cast<double>(m.moe.top_k) *
                       static_cast<double>(p.ep - 1) / static_cast<double>(p.ep) /
                       group_bandwidth(c, p.ep, p.tp * p.cp * p.pp / expert_fold(p));
    ep_s = 4.0 * a2a * static_cast<double>(m.moe_layers()) / static_cast<double>(p.pp) * mbs;
  }
  // Data parallelism: bytes of the stage's parameters per device, gradients
  // in grad_reduce_dtype, weights in bf16 (stage_lowering.cc). ZeRO-0 and 1
  // reduce in the last microbatch only (hidden behind its backward pass
  // except the last bucket, taken as a tenth; ZeRO-1 then all-gathers the
  // updated weights); ZeRO-2 reduce-scatters every microbatch and ZeRO-3
  // also gathers the weights twice per microbatch, both overlapped with the
  // compute.
  const DeviceParams dparams = device_params(m, p.tp, p.ep, p.seq_len, p.expert_tp);
  const double params = (static_cast<double>(m.layers - m.moe_layers()) * static_cast<double>(dparams.dense_layer) +
                         static_cast<double>(m.moe_layers()) *
                             static_cast<double>(dparams.moe_layer_replicated + dparams.moe_layer_experts) +
                         static_cast<double>(dparams.embedding + dparams.head)) /
                        static_cast<double>(p.pp);
  const double grad_bytes = params * static_cast<double>(dtype_bytes(p.grad_reduce_dtype));
  const double dp_bw = group_bandwidth(c, p.dp, p.tp * p.cp * p.pp);
  double dp_s = 0;
  if (p.dp > 1) {
    if (p.zero >= 2) {
      const double gathers = p.zero == 3 ? ring_s(2.0 * params, p.dp, dp_bw) * 2.0 : 0.0;
      const double per_mb = gathers + ring_s(grad_bytes, p.dp, dp_bw);
      dp_s = std::max(0.0, per_mb * mbs - compute * 0.9) + (p.zero == 2 ? ring_s(2.0 * params, p.dp, dp_bw) : 0.0);
    } else {
      const double reduce = p.zero == 0 ? 2.0 * ring_s(grad_bytes, p.dp, dp_bw) : ring_s(grad_bytes, p.dp, dp_bw);
      const double gather = p.zero == 0 ? 0.0 : ring_s(2.0 * params, p.dp, dp_bw);
      dp_s = 0.1 * reduce + gather;
    }
  }
  // Ring attention: KV blocks of the other cp ranks, overlapped with the
  // attention compute.
  double cp_s = 0;
  if (p.cp > 1) {
    const double kv = 2.0 * tokens_mb * static_cast<double>(m.kv_heads * (m.qk_head_dim() + m.v_head_dim())) /
                      static_cast<double>(std::min(p.tp, m.kv_heads));
    cp_s =
        0.25 * ring_s(kv * static_cast<double>(p.cp), p.cp, group_bandwidth(c, p.cp, p.tp)) * layers_here * mbs * 3.0;
  }
  // Fixed costs the bound leaves out: every op's launch (about 24 compute
  // ops per layer and microbatch forward and backward) and the memory-bound
  // norms and elementwise ops (about 40 bytes of HBM traffic per hidden
  // element of each token and layer, forward and backward).
  const ChipSpec& chip = c.chip;
  const double launches = 24.0 * layers_here * mbs * chip.launch_overhead.seconds();
  const double hidden_elems = tokens_mb * static_cast<double>(m.hidden) / (p.sequence_parallel ? p.tp : 1);
  const double memory_bound =
      40.0 * hidden_elems * layers_here * mbs / (chip.hbm_bandwidth.value() * chip.memory_efficiency);
  return (compute + launches + memory_bound + tp_s + ep_s + cp_s) * pipeline_stretch(p) + dp_s;
}

std::vector<Override> searched_plan_overrides(const Plan& p) {
  std::vector<Override> out;
  for (const detail::PlanField& f : detail::plan_fields()) {
    if (!f.searched) continue;
    const detail::Json v = f.write(p);
    out.push_back({"plan." + std::string(f.key), v.is_null() ? "null" : v.dump()});
  }
  return out;
}

std::string describe_plan(const Plan& p) {
  std::string out = "tp " + std::to_string(p.tp);
  if (p.cp > 1) out += " · cp " + std::to_string(p.cp);
  out += " · pp " + std::to_string(p.pp);
  if (p.pp > 1 && p.schedule == PipelineSchedule::kInterleaved) out += " (v " + std::to_string(p.virtual_stages) + ")";
  out += " · dp " + std::to_string(p.dp);
  if (p.ep > 1) out += " (ep " + std::to_string(p.ep) + (expert_fold(p) > 1 ? " folded)" : ")");
  out += " · zero " + std::to_string(p.zero) + " · mb " + std::to_string(p.microbatch_size);
  out += p.recompute == Recompute::kNone        ? " · no recompute"
         : p.recompute == Recompute::kSelective ? " · selective"
                                                : " · full recompute";
  return out;
}

std::vector<PlanCandidate> enumerate_plans(const Scenario& base, const std::vector<int64_t>& device_counts,
                                           PlanSpaceCounts& counts) {
  std::vector<PlanCandidate> out;
  const ModelSpec& m = base.model;
  Scenario s = base;
  for (int64_t n : device_counts) {
    s.cluster.devices = n;
    const int64_t tp_limit = base.cluster.fabric == FabricKind::kTorus ? 16 : base.cluster.fat_tree.gpus_per_node;
    for (int64_t tp : powers_of_two_dividing(n, tp_limit)) {
      for (int64_t cp : powers_of_two_dividing(n / tp, 8)) {
        for (int64_t pp : divisors(n / (tp * cp), std::min<int64_t>(m.layers, 128))) {
          const int64_t dp = n / (tp * cp * pp);
          const std::vector<int64_t> vs = pp > 1 ? std::vector<int64_t>{1, 2, 4} : std::vector<int64_t>{1};
          // Expert groups: ep data-parallel positions, times the tp and cp
          // ranks a folded layout spans first (expert_fold).
          std::vector<int64_t> eps = m.is_moe() ? divisors(dp, dp) : std::vector<int64_t>{1};
          Plan shape = base.plan;
          shape.tp = tp;
          shape.cp = cp;
          if (const int64_t fold = folded_ranks(shape); m.is_moe() && fold > 1) {
            for (int64_t& ep : eps) ep *= fold;
            eps.insert(eps.begin(), 1);  // no expert parallelism
          }
          for (int64_t v : vs) {
            for (int64_t ep : eps) {
              for (int zero = 0; zero <= 3; ++zero) {
                for (int64_t mb = 1; mb <= 16; mb *= 2) {
                  for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
                    ++counts.enumerated;
                    Plan& p = s.plan;
                    p = base.plan;
                    // Every searched field (plan_fields.cc): reset, then
                    // the candidate's choices; searched_plan_overrides
                    // writes the same fields.
                    for (const detail::PlanField& f : detail::plan_fields()) {
                      if (f.searched) f.reset(p);
                    }
                    p.dp = dp;
                    p.tp = tp;
                    p.pp = pp;
                    p.cp = cp;
                    p.ep = ep;
                    p.zero = zero;
                    p.microbatch_size = mb;
                    p.recompute = rc;
                    p.virtual_stages = v;
                    p.schedule = v > 1 ? PipelineSchedule::kInterleaved : PipelineSchedule::kOneFOneB;
                    p.sequence_parallel = tp > 1;
                    if (check_plan(p, m, s.cluster)) {
                      ++counts.invalid;
                      continue;
                    }
                    const MemoryReport mem = training_memory(s);
                    if (!mem.fits) {
                      ++counts.over_memory;
                      continue;
                    }
                    out.push_back(PlanCandidate{p, n, step_time_lower_bound_s(s), step_time_estimate_s(s),
                                                mem.peak_bytes_per_device});
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace shardsim
