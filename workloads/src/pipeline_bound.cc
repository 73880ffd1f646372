#include "shardsim/workloads/pipeline_bound.h"

#include <algorithm>

#include "shardsim/core/error.h"
#include "shardsim/workloads/lower.h"

namespace shardsim {

double pipeline_lower_bound(const Plan& p, const std::vector<std::vector<ChunkWork>>& work, double transfer_s) {
  const int64_t stages = p.pp;
  const auto m = static_cast<double>(p.microbatches());
  SHARDSIM_ASSERT(static_cast<int64_t>(work.size()) == stages, "one row of chunk work per stage");
  // Global chunk g runs on stage g mod pp as its local chunk g / pp.
  auto at = [&](int64_t g) -> const ChunkWork& {
    return work[static_cast<size_t>(g % stages)][static_cast<size_t>(g / stages)];
  };
  double bound = 0;
  double forward_chain = 0;  // X_s: the first microbatch's forward through global chunks 0..s-1
  for (int64_t s = 0; s < stages; ++s) {
    double w = 0;
    for (const ChunkWork& c : work[static_cast<size_t>(s)]) w += m * (c.fwd + c.bwd);
    bound = std::max(bound, forward_chain + w);
    // Every schedule's stage ends with its local chunk 0's backward
    // (pipeline_steps; PipelineSchedule.StagesStartAndEndWithChunkZero
    // checks it), global chunk s; from its send the backward goes on
    // through the global chunks below, to chunk 0.
    const int64_t g = s;
    if (g > 0) {
      const ChunkWork& last = at(g);
      double chain = transfer_s + at(0).bwd;
      for (int64_t k = g - 1; k >= 1; --k) chain += transfer_s + at(k).bwd_send;
      bound = std::max(bound, forward_chain + w - last.bwd + last.bwd_send + chain);
    }
    forward_chain += work[static_cast<size_t>(s)].front().fwd_send + transfer_s;
  }
  return bound;
}

std::vector<std::vector<ChunkWork>> chunk_work_from_flops(const Scenario& s) {
  const ModelSpec& model = s.model;
  const Plan& p = s.plan;
  const ChipSpec& c = s.cluster.chip;
  // Rates no op beats (see compute_bound_s in plan_space.cc).
  double matmul_rate = 0, attention_rate = 0;
  if (const CalibrationProfile* profile = s.cluster.calibration.get()) {
    for (const auto& point : profile->matmul) matmul_rate = std::max(matmul_rate, point.flops_per_s);
    attention_rate = profile->attention_flops_per_s;
  } else {
    matmul_rate =
        c.matmul_peak(p.matmul_dtype).value() * c.best_matmul_efficiency(p.matmul_dtype) * c.compute_clock_scale;
    attention_rate = std::max(c.bf16_peak.value(), c.fp8_peak.value()) * c.attention_efficiency * c.compute_clock_scale;
  }
  auto seconds = [](double flops, double rate) { return rate > 0 ? flops / rate : 0.0; };
  const ParamCount pc = count_params(model);
  const auto tp = static_cast<double>(p.tp);
  const double tokens = static_cast<double>(p.microbatch_size * p.seq_len) / static_cast<double>(p.cp);
  struct Layer {
    double fwd, bwd, wgrad;
  };
  auto layer = [&](int64_t l) {
    const int64_t active =
        model.is_moe_layer(l) ? pc.router + (pc.top_k + pc.shared_experts) * pc.expert : pc.dense_mlp;
    const double mm = seconds(2.0 * tokens * static_cast<double>(pc.attention + active) / tp, matmul_rate);
    const double at = seconds(model.attention_flops_per_pair() * static_cast<double>(p.microbatch_size) *
                                  model.attention_pairs(l, p.seq_len) / (tp * static_cast<double>(p.cp)),
                              attention_rate);
    // Recomputation runs forward work again before the backward: all of it
    // (full), or the attention core (selective); other policies' parts are
    // left out of the bound.
    const double again = p.recompute == Recompute::kFull ? mm + at : p.recompute == Recompute::kSelective ? at : 0.0;
    return Layer{mm + at, 2 * (mm + at) + again, mm};
  };
  const double head_fwd = seconds(2.0 * tokens * static_cast<double>(pc.unembedding) / tp, matmul_rate);
  const ChunkLayout layout = chunk_layout(model, p);
  const int64_t chunks = p.chunks();
  std::vector<std::vector<ChunkWork>> work(static_cast<size_t>(p.pp),
                                           std::vector<ChunkWork>(static_cast<size_t>(p.virtual_stages)));
  for (int64_t g = 0; g < chunks; ++g) {
    ChunkWork& w = work[static_cast<size_t>(g % p.pp)][static_cast<size_t>(g / p.pp)];
    const int64_t first = layout.first[static_cast<size_t>(g)];
    const int64_t count = layout.count[static_cast<size_t>(g)];
    for (int64_t l = first; l < first + count; ++l) {
      const Layer x = layer(l);
      w.fwd += x.fwd;
      w.bwd += x.bwd;
    }
    if (g == chunks - 1) {
      w.fwd += head_fwd;
      w.bwd += 2 * head_fwd;
    }
    w.fwd_send = w.fwd;
    // The backward sends the gradient of the chunk's input: the weight
    // gradients of its first layer may come after (chunk 0 sends nothing).
    w.bwd_send = w.bwd - (g > 0 && count > 0 ? layer(first).wgrad : 0.0);
  }
  return work;
}

}  // namespace shardsim
