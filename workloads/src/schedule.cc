#include "shardsim/workloads/schedule.h"

#include <algorithm>

namespace shardsim {
namespace {

/// Megatron-LM's mapping from the k-th forward (or backward) of a stage to
/// its (chunk, microbatch) in the interleaved schedule.
PipelineStep interleaved_step(int64_t k, int64_t stages, int64_t v, bool forward) {
  const int64_t in_group = k % (stages * v);
  int64_t chunk = in_group / stages;
  if (!forward) chunk = v - 1 - chunk;
  const int64_t mb = (k / (stages * v)) * stages + k % stages;
  return {static_cast<int32_t>(chunk), static_cast<int32_t>(mb), forward};
}

}  // namespace

std::vector<PipelineStep> pipeline_steps(PipelineSchedule schedule, int64_t stages, int64_t stage, int64_t microbatches,
                                         int64_t virtual_stages) {
  std::vector<PipelineStep> out;
  const int64_t m = microbatches;
  if (schedule == PipelineSchedule::kGpipe) {
    for (int64_t c = 0; c < virtual_stages; ++c) {
      for (int64_t i = 0; i < m; ++i) out.push_back({static_cast<int32_t>(c), static_cast<int32_t>(i), true});
    }
    for (int64_t c = virtual_stages - 1; c >= 0; --c) {
      for (int64_t i = 0; i < m; ++i) out.push_back({static_cast<int32_t>(c), static_cast<int32_t>(i), false});
    }
    return out;
  }
  const int64_t v = schedule == PipelineSchedule::kInterleaved ? virtual_stages : 1;
  const int64_t total = m * v;
  int64_t warmup = v == 1 ? stages - stage - 1 : (stages - stage - 1) * 2 + (v - 1) * stages;
  warmup = std::min(warmup, total);
  int64_t f = 0, b = 0;
  auto fwd = [&] { out.push_back(interleaved_step(f++, stages, v, true)); };
  auto bwd = [&] { out.push_back(interleaved_step(b++, stages, v, false)); };
  for (int64_t i = 0; i < warmup; ++i) fwd();
  while (f < total) {
    fwd();
    bwd();
  }
  while (b < total) bwd();
  return out;
}

}  // namespace shardsim
