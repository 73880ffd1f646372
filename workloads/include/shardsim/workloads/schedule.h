// Pipeline schedules: the order in which one pipeline stage runs the forward
// and backward passes of its model chunks over the microbatches.
#pragma once

#include <cstdint>
#include <vector>

namespace shardsim {

enum class PipelineSchedule : uint8_t { kGpipe, kOneFOneB, kInterleaved };

struct PipelineStep {
  int32_t chunk = 0;  ///< virtual stage index on this device, 0..v-1
  int32_t microbatch = 0;
  bool forward = true;
};

/// The steps of `stage` (0..stages-1) for `microbatches` microbatches and
/// `virtual_stages` chunks per stage.
///   GPipe: every forward, then every backward (Huang et al. 2019).
///   1F1B: stages-stage-1 warm-up forwards, then alternate one forward and
///     one backward, then the remaining backwards (Narayanan et al. 2019,
///     PipeDream-Flush).
///   Interleaved 1F1B: the same over virtual microbatches, chunk-major in
///     groups of `stages` microbatches, with (stages-stage-1)·2 +
///     (v-1)·stages warm-up forwards (Narayanan et al. 2021, Megatron-LM);
///     needs microbatches to be a multiple of stages.
std::vector<PipelineStep> pipeline_steps(PipelineSchedule schedule, int64_t stages, int64_t stage, int64_t microbatches,
                                         int64_t virtual_stages);

}  // namespace shardsim
