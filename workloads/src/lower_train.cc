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
#include <numeric>

#include "stage_lowering.h"

namespace shardsim {

namespace detail {

Program StageLowering::run() {
  const int64_t mbs = p_.microbatches();
  gather_params_at_start();
  const PipelineSchedule sched = p_.pp == 1 ? PipelineSchedule::kOneFOneB : p_.schedule;
  const std::vector<PipelineStep> steps = pipeline_steps(sched, p_.pp, stage_, mbs, v_chunks_);
  const auto forwards =
      static_cast<size_t>(std::count_if(steps.begin(), steps.end(), [](const PipelineStep& st) { return st.forward; }));
  // After the first backward, the program's size is extrapolated and
  // reserved, so that its arrays are not copied as they grow: every step
  // is one chunk's forward or backward of one microbatch; the forwards so
  // far give the ops of a forward, and the first backward against its
  // chunk's forward the ratio of a backward to a forward (a chunk holds
  // more layers than another, or an embedding or a head), with a quarter
  // to spare (what is reserved and not used is never touched).
  std::vector<size_t> chunk_ops(static_cast<size_t>(v_chunks_), 0), chunk_forwards(chunk_ops.size(), 0);
  bool reserved = false;
  for (const PipelineStep& st : steps) {
    const size_t before = b_.size();
    const auto c = static_cast<size_t>(st.chunk);
    mb_ = st.microbatch;
    if (st.forward) {
      forward(st.chunk);
      chunk_ops[c] += b_.size() - before;
      ++chunk_forwards[c];
      continue;
    }
    backward(st.chunk, st.microbatch == mbs - 1);
    if (!reserved && chunk_forwards[c] > 0 && &st != &steps.back()) {
      reserved = true;
      const auto sum = [](const std::vector<size_t>& v) { return std::accumulate(v.begin(), v.end(), size_t{0}); };
      const size_t forward_ops = sum(chunk_ops), done = sum(chunk_forwards);
      const double per_forward = static_cast<double>(forward_ops) / static_cast<double>(done);
      const double ratio = static_cast<double>(b_.size() - before) * static_cast<double>(chunk_forwards[c]) /
                           static_cast<double>(std::max<size_t>(1, chunk_ops[c]));
      const double total =
          static_cast<double>(before - forward_ops) +
          per_forward * (static_cast<double>(forwards) + ratio * static_cast<double>(steps.size() - forwards));
      b_.reserve(static_cast<size_t>(total * 1.25));
    }
  }
  optimizer();
  return std::move(b_).finish();
}

}  // namespace detail

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
