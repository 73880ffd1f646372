// What the loss holds per logit, for each stack's loss kernel: shared by the
// lowering (memory events of the head) and the analytic memory estimate.
// Bytes are read from each stack's code (docs/model.md, "The head's memory").
#pragma once

#include <cstdint>

#include "shardsim/workloads/plan.h"

namespace shardsim::detail {

/// Bytes per logit of the device's vocabulary shard.
struct LossBytes {
  int64_t logits = 2;          ///< the head GEMM's output (bf16, or fp32 where it is cast)
  bool logits_kept = false;    ///< the logits stay alive until the loss's backward
  int64_t saved = 4;           ///< what the loss itself saves for its backward
  int64_t forward_extra = 0;   ///< live while its forward runs, beyond the logits and `saved`
  int64_t backward_extra = 2;  ///< live while its backward runs, beyond what was kept
  /// PyTorch's caching allocator: bytes it holds beyond those allocated at
  /// the backward's peak, because a gradient finds no freed block of the
  /// forward large enough (replaying the tensors in order, first fit, one
  /// growing segment: expandable_segments).
  int64_t reserved_extra = 0;
  int64_t kept() const { return (logits_kept ? logits : 0) + saved; }
};

inline LossBytes loss_bytes(Plan::LossKernel k) {
  switch (k) {
    case Plan::LossKernel::kMegatron:
      // logits.float() softmaxed in place and saved (fp32); the bf16
      // logits die when the model's forward returns. The backward writes
      // the gradient into the saved softmax and casts it to bf16.
      return {2, false, 4, 0, 2};
    case Plan::LossKernel::kTe:
      // The gradient is computed in the forward, in place in the bf16
      // logits, which are all the loss keeps.
      return {2, true, 0, 0, 0};
    case Plan::LossKernel::kTorch:
      // Forward: the fp32 copy beside the bf16 logits, then the saved fp32
      // log-softmax (the logits are deleted before the backward). Backward:
      // NllLossBackward's and LogSoftmaxBackward's fp32 gradients. Replayed:
      // [logits 2][copy 4][log-softmax 4]; the logits and the copy are freed
      // (6 contiguous); the nll gradient (4) takes their place, the
      // log-softmax gradient (4) finds 2 free and grows the segment: 14
      // reserved for 12 allocated.
      return {2, false, 4, 4, 4 + 4, 2};
    case Plan::LossKernel::kTorchBf16:
      // The same in bf16 without the copy; the recipe keeps the model's
      // output (the logits) referenced through the backward.
      return {2, true, 2, 0, 2 + 2};
    case Plan::LossKernel::kXla:
      // MaxText's cross_entropy_with_logits (max_utils.py) casts the bf16
      // logits to fp32 (cast_logits_to_fp32) and its custom VJP keeps the
      // fp32 logits and exp(logits - max) for the backward; praxis's
      // log_softmax keeps the same through autodiff. XLA materialises
      // neither: a widening convert is always duplicated into its consumers
      // (xla/service/instruction_fusion.cc, IsAlwaysDuplicable) and an fp32
      // exp is cheap on GPUs (GpuInstructionFusion::IsExpensive), so the
      // forward's reductions and the backward's fusion each recompute them
      // from the GEMM's bf16 output, which is what stays alive; the backward
      // fusion writes the bf16 gradient. The TPU backend is not public: the
      // same fusion is assumed there.
      //
      // kTorchCompiled: torchtitan's cross_entropy(pred.float()) under
      // torch.compile (torchtitan components/loss.py since bbb1b616e,
      // 2025-04). AOTAutograd's min-cut partitioner
      // (torch/_functorch/partitioners.py) saves the graph's bf16 input and
      // the per-row reductions (it does not recompute reductions,
      // ban_recompute_reductions) and recomputes the fp32 cast and the exp
      // in the backward, whose one fused kernel writes the bf16 gradient:
      // the same bytes as XLA's.
    case Plan::LossKernel::kTorchCompiled:
      return {2, true, 0, 0, 2};
  }
  return {};
}

}  // namespace shardsim::detail
