// Lowering of a training step (see lower.h). Shapes follow Megatron-LM's
// tensor parallelism (Shoeybi et al. 2019; Korthikanti et al. 2022 for the
// sequence-parallel variant): QKV and MLP-up are column-parallel, attention
// output and MLP-down are row-parallel; the row-parallel outputs are
// all-reduced (or reduce-scattered with sequence parallelism, whose inputs
// are then all-gathered). Backward mirrors each collective: an all-reduce in
// forward is an identity backward and vice versa; all-gather <-> reduce-scatter.
//
// Every op's FLOPs are 2·M·N·K for a matmul (Narayanan et al. 2021) and the
// causal attention count for attention; HBM bytes are what the kernel must
// read and write at its dtype.
#include "stage_lowering.h"

namespace shardsim {

using detail::StageLowering;

ChunkLayout chunk_layout(const ModelSpec& m, const Plan& p) {
  const int64_t n = p.chunks();
  ChunkLayout c;
  if (!p.layers_per_stage.empty()) {
    c.count = p.layers_per_stage;
  } else {
    c.count.assign(static_cast<size_t>(n), m.layers / n);
    int64_t rest = m.layers % n;
    for (int64_t g = n > 1 ? 1 : 0; rest > 0; g = (g + 1) % n, --rest) ++c.count[static_cast<size_t>(g)];
  }
  int64_t first = 0;
  for (int64_t cnt : c.count) {
    c.first.push_back(first);
    first += cnt;
  }
  SHARDSIM_ASSERT(first == m.layers, "chunk layout covers every layer once");
  return c;
}

ProgramSet lower_training_step(const Scenario& s) {
  const ChunkLayout layout = chunk_layout(s.model, s.plan);
  ProgramSet set;
  for (int64_t stage = 0; stage < s.plan.pp; ++stage) set.stages.push_back(StageLowering(s, layout, stage).run());
  return set;
}

}  // namespace shardsim
