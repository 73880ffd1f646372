// Attention variants of a lowered layer: fused (flash), unfused (as
// Megatron-LM ran it before flash attention) and ring attention for
// context parallelism.
#include "stage_lowering.h"

namespace shardsim::detail {

/// Causal attention over microbatch_size sequences of s tokens with a_
/// local query heads and kv_ local KV heads.
OpId StageLowering::attention(int32_t layer, Pass pass, OpId dep) {
  if (cp_ > 1) return ring_attention(layer, pass, dep);
  return p_.fused_attention ? fused_attention(layer, pass, dep) : unfused_attention(layer, pass, dep);
}

/// Ring attention (Liu et al. 2023; Megatron-LM context parallelism): each
/// of the cp devices holds s/cp tokens (load-balanced halves, so causal work
/// is even) and computes its queries against every device's keys and
/// values in cp steps; while step i computes on one KV block, that block
/// is sent on to the next device and the next block arrives from the
/// previous one, so the transfer hides behind the attention compute.
/// Backward passes the KV blocks round again together with their dK, dV
/// partial sums. Each step is a fused attention kernel on an
/// s/cp x s/cp block doing 1/cp² of the causal work.
OpId StageLowering::ring_attention(int32_t layer, Pass pass, OpId dep) {
  const bool backward = pass == Pass::kBackward;
  const double s = static_cast<double>(p_.seq_len);
  const double total = 2.0 * static_cast<double>(p_.microbatch_size) * static_cast<double>(a_ * d_) * s * (s + 1.0);
  const double step_flops = (backward ? 2.0 : 1.0) * total / static_cast<double>(cp_ * cp_);
  const int64_t kv_block = 2 * T_ * kv_ * d_ * kAct;  // K and V of one shard
  const int64_t block_bytes = backward ? 2 * kv_block : kv_block;
  const int64_t q = T_ * a_ * d_ * kAct;
  OpId have = dep;  // the KV block this step works on
  OpId x = dep;
  for (int64_t i = 0; i < cp_; ++i) {
    OpId next = kNone;
    if (i + 1 < cp_) {
      Op snd = base("cp send kv", layer, pass, TrainStreams::kCpSend);
      snd.kind = OpKind::kSend;
      snd.peer = 1;
      snd.peer_axis = MeshAxis::kCp;
      snd.comm_bytes = Bytes(block_bytes);
      b_.add(snd, {have});
      Op rcv = base("cp recv kv", layer, pass, TrainStreams::kCpRecv);
      rcv.kind = OpKind::kRecv;
      rcv.peer = -1;
      rcv.peer_axis = MeshAxis::kCp;
      rcv.comm_bytes = Bytes(block_bytes);
      next = b_.add(rcv);
    }
    Op o = base("ring attention", layer, pass, kC);
    o.compute = ComputeKind::kAttention;
    o.batch = p_.microbatch_size;
    o.m = T_ / p_.microbatch_size;
    o.n = T_ / p_.microbatch_size;
    o.k = a_ * d_;
    o.flops = Flops(step_flops);
    o.model_flops = o.flops * model_share(pass, 1.0);
    o.bytes_read = Bytes(backward ? 3 * q + block_bytes : q + block_bytes);
    o.bytes_written = Bytes(backward ? q + kv_block : q);
    x = b_.add(o, {x, have});
    have = next;
  }
  return x;
}

/// Fused (flash) attention: one kernel that reads q, k, v and writes the
/// output and log-sum-exp, skipping masked blocks (causal FLOPs).
OpId StageLowering::fused_attention(int32_t layer, Pass pass, OpId dep) {
  Op o = base("attention", layer, pass, kC);
  o.compute = ComputeKind::kAttention;
  o.batch = p_.microbatch_size;
  o.m = p_.seq_len;
  o.n = p_.seq_len;
  o.k = a_ * d_;
  const double s = static_cast<double>(p_.seq_len);
  const double fwd = 2.0 * static_cast<double>(p_.microbatch_size) * static_cast<double>(a_ * d_) * s * (s + 1.0);
  const bool backward = pass == Pass::kBackward;
  o.flops = Flops(backward ? 2.0 * fwd : fwd);
  o.model_flops = o.flops * model_share(pass, 1.0);
  const int64_t qkv = T_ * (a_ + 2 * kv_) * d_ * kAct;
  const int64_t out = T_ * a_ * d_ * kAct;
  const int64_t lse = T_ * a_ * 4;
  o.bytes_read = Bytes(backward ? qkv + 2 * out + lse : qkv);  // backward: q, k, v, o, dO, lse
  o.bytes_written = Bytes(backward ? qkv : out + lse);         // backward: dq, dk, dv
  return b_.add(o, {dep});
}

/// Unfused attention as Megatron-LM ran it before flash attention: batched
/// matmuls for QK^T and for the values over the full s x s scores (the
/// causal mask is applied to them, so the executed FLOPs are twice the
/// causal count), a fused scale-mask-softmax and, with dropout, a dropout
/// pass, each reading and writing the b·a·s² scores in HBM.
OpId StageLowering::unfused_attention(int32_t layer, Pass pass, OpId dep) {
  const int64_t b = p_.microbatch_size * a_;  // one batch entry per sequence and head
  const int64_t s = p_.seq_len;
  const int64_t scores = b * s * s;
  const double causal = static_cast<double>(s + 1) / static_cast<double>(2 * s);
  auto bmm = [&](std::string_view name, Pass ps, int64_t m, int64_t n, int64_t k, OpId after) {
    return matmul(name, layer, ps, m, n, k, {after}, causal, b);
  };
  auto pointwise = [&](std::string_view name, Pass ps, int64_t read, int64_t write, OpId after) {
    return memop(ComputeKind::kSoftmax, name, layer, ps, scores, read, write, 5, {after});
  };
  const bool dropout = m_.dropout;
  if (pass != Pass::kBackward) {
    OpId x = bmm("attn scores", pass, s, s, d_, dep);
    x = pointwise("attn softmax", pass, scores * kAct, scores * kAct, x);
    if (dropout) x = pointwise("attn dropout", pass, scores * kAct, scores * (kAct + 1), x);
    return bmm("attn values", pass, s, d_, s, x);
  }
  // Backward: dP = dO·Vᵀ and dV = Pᵀ·dO; dropout and softmax backward;
  // dQ = dS·K and dK = dSᵀ·Q.
  OpId x = bmm("attn values dgrad", pass, s, s, d_, dep);
  bmm("attn values wgrad", pass, s, d_, s, dep);
  if (dropout) x = pointwise("attn dropout", pass, scores * (kAct + 1), scores * kAct, x);
  x = pointwise("attn softmax", pass, 2 * scores * kAct, scores * kAct, x);
  const OpId dq = bmm("attn scores dgrad", pass, s, d_, s, x);
  return bmm("attn scores wgrad", pass, s, d_, s, dq);
}

}  // namespace shardsim::detail
