// Memory-bound elementwise ops of a training layer: norms, the rotary
// embedding, the MLP's activation and the residual add.
#include "stage_lowering.h"

namespace shardsim::detail {

// Elementwise work as fused kernels (Transformer Engine, torch.compile,
// XLA: one pass over each tensor) or as PyTorch eager runs it, one kernel
// per operator, each reading and writing the whole tensor (bytes per
// element of the bf16 tensor, from the operators of torchtitan's
// models/llama/model.py and models/norms.py):
//   RMSNorm forward: x.float(), pow, mean, x·rsqrt, type_as, ·weight:
//     read 20, write 16 (fused: 2, 2); backward through the same graph:
//     read 44, write 28 (fused: 4, 2).
//   rotary embedding of q and k: float, complex multiply, type_as: read 10,
//     write 10 each way (fused: 2, 2).
//   SwiGLU: silu, mul: forward read 6, write 4 (fused: 4, 2); backward
//     read 14, write 8 (fused: 6, 4).
//   the loss: logits.float(), log_softmax (max, exp-sum, output) forward
//     read 14, write 8 per logit; backward read 12, write 10 (fused: 2, 0 and 2, 2).
Op StageLowering::norm_op(std::string_view name, int32_t layer, Pass pass, bool eager_kernels, int64_t rows,
                          int64_t width) {
  Op o = base(name, layer, pass, kC);
  o.compute = ComputeKind::kNorm;
  o.m = rows;
  o.n = width;
  o.k = 1;
  const int64_t e = rows * width;
  o.flops = Flops(5.0 * static_cast<double>(e));
  const bool back = pass == Pass::kBackward;
  o.bytes_read = Bytes(e * (eager_kernels ? (back ? 44 : 20) : (back ? 4 : 2)));
  o.bytes_written = Bytes(e * (eager_kernels ? (back ? 28 : 16) : 2));
  o.mem_transient = Bytes(std::min(o.bytes_read.value() + o.bytes_written.value(), kEagerLiveBytes * e));
  return o;
}

OpId StageLowering::rope_op(int32_t layer, Pass pass, const std::vector<OpId>& deps) {
  const int64_t e = T_ * (a_ + kv_) * d_;
  const int64_t per = eager() ? 10 : kAct;
  // q and k norms (Qwen 3, Gemma 3) fuse with the rotation.
  const int64_t qk_norm = m_.qk_norm ? 2 : 1;
  return memop(ComputeKind::kElementwise, "rope", layer, pass, e, e * per * qk_norm, e * per * qk_norm, 6, deps);
}

OpId StageLowering::act_op(int32_t layer, Pass pass, const std::vector<OpId>& deps) {
  const int64_t e = T_ * f_;
  const bool swiglu = m_.gated();
  if (eager() && swiglu) {
    const std::string_view name = m_.mlp == MlpKind::kSwiglu ? "swiglu" : "geglu";
    if (pass != Pass::kBackward) return memop(ComputeKind::kElementwise, name, layer, pass, e, 6 * e, 4 * e, 8, deps);
    return memop(ComputeKind::kElementwise, name, layer, pass, e, 14 * e, 8 * e, 12, deps);
  }
  const std::string_view name = m_.mlp == MlpKind::kSwiglu  ? "swiglu"
                                : m_.mlp == MlpKind::kGeglu ? "geglu"
                                : m_.mlp == MlpKind::kRelu2 ? "squared relu"
                                : m_.mlp == MlpKind::kRelu  ? "relu"
                                                            : "gelu";
  if (pass != Pass::kBackward) {
    return memop(ComputeKind::kElementwise, name, layer, pass, e, (swiglu ? 2 : 1) * e * kAct, e * kAct, 8, deps);
  }
  return memop(ComputeKind::kElementwise, name, layer, pass, e, (swiglu ? 3 : 2) * e * kAct,
               (swiglu ? 2 : 1) * e * kAct, 12, deps);
}

OpId StageLowering::residual(int32_t L, Pass pass, const std::vector<OpId>& deps) {
  const int64_t e = Ts_ * h_;
  const int64_t mask = m_.dropout ? e : 0;
  return memop(ComputeKind::kElementwise, m_.dropout ? "bias-dropout-add" : "residual", L, pass, e, 2 * e * kAct,
               e * kAct + mask, 2, deps);
}

}  // namespace shardsim::detail
