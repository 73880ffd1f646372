// Multi-head latent attention in a training layer (ModelSpec::mla): the
// down projections of the queries and of the keys and values, their latents'
// norms, and their backward (lower_layer.cc emits the up projections as the
// q, k and v nodes).
#include "stage_lowering.h"

namespace shardsim::detail {

// Multi-head latent attention (ModelSpec::mla; DeepSeek-V2, arXiv
// 2405.04434, section 2.1): the queries and the keys and values are
// projected down to latents, normed, and projected up per head. The down
// projections are small and every tp rank runs them whole on the gathered
// sequence (Megatron-Core's MLA duplicates them): a tp-th of each is model
// work. The keys' rotary part comes down with their latent and is shared by
// every head (rope_op broadcasts it).
OpId StageLowering::mla_down(Node n, int32_t L, Pass pass, const std::vector<OpId>& deps) {
  const bool q = n == Node::kQa;
  const int64_t latent = q ? m_.mla.q_lora_rank : m_.mla.kv_lora_rank;
  const int64_t width = latent + (q ? 0 : m_.mla.qk_rope_head_dim);
  const OpId x = matmul(q ? "q down" : "kv down", L, pass, T_, width, h_, deps, 1.0 / static_cast<double>(t_));
  return b_.add(norm_op(q ? "q latent norm" : "kv latent norm", L, pass, eager(), T_, latent), {x});
}

void StageLowering::mla_backward(int32_t L, OpId x, const LayerOps& rec, Node ln1_out, OpId& dg, OpId& wg) {
  const Pass pass = Pass::kBackward;
  const int64_t ql = m_.mla.q_lora_rank, kvl = m_.mla.kv_lora_rank;
  const int64_t kv_n = a_ * (m_.head_dim + dv_), kv_down = kvl + m_.mla.qk_rope_head_dim;
  const double duplicated = 1.0 / static_cast<double>(t_);
  // Keys and values: the up projection, the latent's norm, the down one.
  const OpId k = fp8_backward_casts(Node::kK, L, x);
  OpId kd = matmul("kv up dgrad", L, pass, T_, kvl, kv_n, {k});
  matmul("kv up wgrad", L, pass, kvl, kv_n, T_, {k, rec[Node::kKva]}, 1.0, 1, Operands::kWeightGrad);
  kd = b_.add(norm_op("kv latent norm", L, pass, eager(), T_, kvl), {kd});
  kd = fp8_backward_casts(Node::kKva, L, kd);
  const OpId dk = matmul("kv down dgrad", L, pass, T_, h_, kv_down, {kd}, duplicated);
  const OpId wk =
      matmul("kv down wgrad", L, pass, h_, kv_down, T_, {kd, rec[ln1_out]}, duplicated, 1, Operands::kWeightGrad);
  // Queries: from their latent, or from the hidden state.
  const OpId q = fp8_backward_casts(Node::kQ, L, x);
  if (ql == 0) {
    dg = matmul("q proj dgrad", L, pass, T_, h_, a_ * d_, {q, dk});
    wg = matmul("q proj wgrad", L, pass, h_, a_ * d_, T_, {q, rec[ln1_out], wk}, 1.0, 1, Operands::kWeightGrad);
    return;
  }
  OpId qd = matmul("q up dgrad", L, pass, T_, ql, a_ * d_, {q});
  matmul("q up wgrad", L, pass, ql, a_ * d_, T_, {q, rec[Node::kQa]}, 1.0, 1, Operands::kWeightGrad);
  qd = b_.add(norm_op("q latent norm", L, pass, eager(), T_, ql), {qd});
  qd = fp8_backward_casts(Node::kQa, L, qd);
  dg = matmul("q down dgrad", L, pass, T_, h_, ql, {qd, dk}, duplicated);
  wg = matmul("q down wgrad", L, pass, h_, ql, T_, {qd, rec[ln1_out], wk}, duplicated, 1, Operands::kWeightGrad);
}

}  // namespace shardsim::detail
