// Attention variants of a lowered layer: fused (flash), unfused (as
// Megatron-LM ran it before flash attention) and ring attention for
// context parallelism.
#include <cmath>

#include "stage_lowering.h"

namespace shardsim::detail {
namespace {
/// torchtitan runs attention through PyTorch's scaled_dot_product_attention
/// (and context parallelism under it, torch/distributed/tensor/experimental/
/// _attention.py) after repeating each KV head for its query heads.
bool pytorch_sdpa(const Plan& p) {
  return p.framework == Framework::kTorchtitan;
}
}  // namespace

/// Causal attention over microbatch_size sequences of s tokens with a_
/// local query heads and kv_ local KV heads: ring attention under context
/// parallelism, a fused (flash) kernel, or Megatron-LM's unfused core, whose
/// steps are nodes of their own (their outputs are what selective
/// recomputation drops).
/// torchtitan repeats each KV head for the query heads that share it before
/// SDPA (repeat_kv: expand + reshape, a copy), and sums them back in
/// backward: a memory-bound pass over the expanded keys and values.
std::vector<OpId> StageLowering::repeat_kv(int32_t layer, Pass pass, const std::vector<OpId>& deps) {
  if (!pytorch_sdpa(p_) || kv_ >= a_) return deps;
  const int64_t small = T_ * kv_width(kv_) * kAct, large = T_ * kv_width(a_) * kAct;
  const bool back = pass == Pass::kBackward;
  return {memop(ComputeKind::kElementwise, "repeat kv", layer, pass, T_ * kv_width(a_), back ? large : small,
                back ? small : large, 0, deps)};
}

OpId StageLowering::attention_node(Node n, int32_t layer, Pass pass, const std::vector<OpId>& deps) {
  if (cp_ > 1) return ring_attention(layer, pass, repeat_kv(layer, pass, deps));
  if (p_.fused_attention) return fused_attention(layer, pass, repeat_kv(layer, pass, deps));
  // Unfused (Megatron-LM before flash attention): batched matmuls for QK^T
  // and for the values over the full s x s scores (the causal mask is
  // applied to them, so the executed FLOPs are twice the causal count), a
  // fused scale-mask-softmax and, with dropout, a dropout pass, each
  // reading and writing the b·a·s² scores in HBM.
  const int64_t b = p_.microbatch_size * a_;  // one batch entry per sequence and head
  const int64_t s = p_.seq_len;
  const int64_t scores = b * s * s;
  const double causal = static_cast<double>(s + 1) / static_cast<double>(2 * s);
  switch (n) {
    case Node::kScores:
      return matmul("attn scores", layer, pass, s, s, d_, deps, causal, b, Operands::kActivations);
    case Node::kSoftmax:
      return memop(ComputeKind::kSoftmax, "attn softmax", layer, pass, scores, scores * kAct, scores * kAct, 5, deps);
    case Node::kDropout:
      return memop(ComputeKind::kSoftmax, "attn dropout", layer, pass, scores, scores * kAct, scores * (kAct + 1), 5,
                   deps);
    default:
      return matmul("attn values", layer, pass, s, dv_, s, deps, causal, b, Operands::kActivations);
  }
}

OpId StageLowering::attention_backward(int32_t layer, OpId dep) {
  const Pass pass = Pass::kBackward;
  if (cp_ > 1) return repeat_kv(layer, pass, {ring_attention(layer, pass, {dep})}).front();
  if (p_.fused_attention) return repeat_kv(layer, pass, {fused_attention(layer, pass, {dep})}).front();
  // Unfused: dP = dO·Vᵀ and dV = Pᵀ·dO; dropout and softmax backward;
  // dQ = dS·K and dK = dSᵀ·Q.
  const int64_t b = p_.microbatch_size * a_;
  const int64_t s = p_.seq_len;
  const int64_t scores = b * s * s;
  const double causal = static_cast<double>(s + 1) / static_cast<double>(2 * s);
  auto bmm = [&](std::string_view name, int64_t m, int64_t n, int64_t k, OpId after) {
    return matmul(name, layer, pass, m, n, k, {after}, causal, b, Operands::kActivations);
  };
  auto pointwise = [&](std::string_view name, int64_t read, int64_t write, OpId after) {
    return memop(ComputeKind::kSoftmax, name, layer, pass, scores, read, write, 5, {after});
  };
  OpId x = bmm("attn values dgrad", s, s, dv_, dep);
  bmm("attn values wgrad", s, dv_, s, dep);
  if (m_.dropout) x = pointwise("attn dropout", scores * (kAct + 1), scores * kAct, x);
  x = pointwise("attn softmax", 2 * scores * kAct, scores * kAct, x);
  const OpId dq = bmm("attn scores dgrad", s, d_, s, x);
  return bmm("attn scores wgrad", s, d_, s, dq);
}

/// Ring attention (Liu et al. 2023; Megatron-LM context parallelism): each
/// of the cp devices holds s/cp tokens (load-balanced halves, so causal work
/// is even) and computes its queries against every device's keys and
/// values in cp steps; while step i computes on one KV block, that block
/// is sent on to the next device and the next block arrives from the
/// previous one, so the transfer hides behind the attention compute. Each
/// step is a fused attention kernel on an s/cp x s/cp block doing 1/cp² of
/// the causal work. PyTorch's ring (its alltoall rotation) runs under SDPA:
/// pytorch_cp_attention below.
///
/// Transformer Engine's ring (AttnFuncWithCPAndKVP2P, transformer_engine/
/// pytorch/attention/dot_product_attention/context_parallel.py) keeps every
/// step's bf16 output and log-sum-exp and, after the last step, corrects
/// them into one fp32 output, step by step, and casts it (its "fwd output
/// correction" loop); a rank's steps are whole blocks up to its own rank and
/// half blocks (the second half of its queries) after it, (3cp + 1) / 4
/// blocks on average over the ranks. Its backward sends at step i the KV
/// block the next step needs together with the dK, dV partial sums of the
/// block it held at step i - 1 (step 0 sends the KV block alone, the last
/// step the partial sums alone), so each send waits for the previous step's
/// accumulation; each step adds its dq, dk, dv into the bf16 sums once the
/// partial sums it continues have arrived.
OpId StageLowering::ring_attention(int32_t layer, Pass pass, const std::vector<OpId>& deps) {
  if (p_.cp_comm == Plan::CpComm::kAllGather) return allgather_cp_attention(layer, pass, deps);
  if (p_.cp_comm == Plan::CpComm::kAllToAll) return a2a_cp_attention(layer, pass, deps);
  if (pytorch_sdpa(p_)) return pytorch_cp_attention(layer, pass, deps, /*gathered=*/false);
  const bool backward = pass == Pass::kBackward;
  const int64_t kv_block = T_ * kv_width(kv_) * kAct;  // K and V of one shard
  const int64_t q = T_ * a_ * d_ * kAct, out = T_ * a_ * dv_ * kAct;
  // A rank's average share of a whole block per step (see above).
  const double share = static_cast<double>(3 * cp_ + 1) / static_cast<double>(4 * cp_);
  auto scaled = [&](int64_t x) { return static_cast<int64_t>(std::llround(static_cast<double>(x) * share)); };
  OpId have = kNone;  // the receive that brought this step's KV block
  OpId x = kNone;
  for (int64_t i = 0; i < cp_; ++i) {
    Op step = cp_attention_step(layer, pass, backward ? q + 2 * out + 2 * kv_block : q + kv_block,
                                backward ? q + kv_block : out);
    if (!backward) {
      const OpId next =
          i + 1 < cp_ ? ring_exchange("cp send kv", "cp recv kv", layer, pass, MeshAxis::kCp, TrainStreams::kCpSend,
                                      TrainStreams::kCpRecv, kv_block, i == 0 ? deps : std::vector<OpId>{have})
                      : kNone;
      x = b_.add(step, i == 0 ? deps : std::vector<OpId>{x, have});
      have = next;
      continue;
    }
    // Backward: the send of step i (KV for step i + 1 and/or the partial
    // sums so far) waits for step i - 1's accumulation.
    const int64_t bytes = i == 0 || i == cp_ - 1 ? kv_block : 2 * kv_block;
    const OpId sent = ring_exchange("cp send kv", "cp recv kv", layer, pass, MeshAxis::kCp, TrainStreams::kCpSend,
                                    TrainStreams::kCpRecv, bytes, i == 0 ? deps : std::vector<OpId>{x, have});
    const OpId computed = b_.add(step, i == 0 ? deps : std::vector<OpId>{x, have});
    // dq += dq_ and dk, dv += dk_, dv_ in bf16 (step 0 copies).
    const int64_t elems = scaled(T_ * (a_ * d_ + kv_width(kv_)));
    x = memop(ComputeKind::kElementwise, "cp grad accumulate", layer, pass, elems, 2 * elems * kAct, elems * kAct, 1,
              {computed, sent});
    have = sent;
  }
  if (backward) return x;
  // The output correction: each step's output (bf16) into the fp32 output
  // through the log-sum-exps, then the cast to bf16.
  const int64_t full = T_ * a_ * dv_;
  const int64_t steps = scaled(full * cp_);  // elements of every step's output on an average rank
  return memop(ComputeKind::kElementwise, "cp out correction", layer, pass, steps,
               steps * kAct + (steps - full) * 4 + full * 4, steps * 4 + full * kAct, 4, {x});
}

/// Fused (flash) attention: one kernel that reads q, k, v and writes the
/// output and log-sum-exp, skipping masked blocks (causal FLOPs).
OpId StageLowering::fused_attention(int32_t layer, Pass pass, const std::vector<OpId>& deps) {
  Op o = base("attention", layer, pass, kC);
  o.compute = ComputeKind::kAttention;
  o.kernel = p_.attention_kernel;
  o.batch = p_.microbatch_size;
  o.m = p_.seq_len;
  o.n = p_.seq_len;
  o.k = a_ * d_;
  // QK^T and AV: 2·heads·(qk + v head widths) FLOPs per query-key pair
  // forward (4·heads·head_dim without MLA), over the causal (or
  // sliding-window) pairs the kernel does not skip.
  const double fwd = attention_flops(layer);
  const bool backward = pass == Pass::kBackward;
  const Flops counted(backward ? 2.0 * fwd : fwd);
  o.flops = p_.attention_kernel == AttentionKernel::kSplash ? Flops(splash_flops(layer, backward)) : counted;
  o.model_flops = counted * model_share(pass, 1.0);
  const int64_t qkv = T_ * (a_ * d_ + kv_width(kv_)) * kAct;
  const int64_t out = T_ * a_ * dv_ * kAct;
  const int64_t lse = T_ * a_ * 4;
  o.bytes_read = Bytes(backward ? qkv + 2 * out + lse : qkv);  // backward: q, k, v, o, dO, lse
  o.bytes_written = Bytes(backward ? qkv : out + lse);         // backward: dq, dk, dv
  o.mem_transient = o.bytes_read + o.bytes_written;
  return b_.add(o, deps);
}

/// Splash attention as MaxText runs it (jax.experimental.pallas.ops.tpu.
/// splash_attention, MaxText's attention_op.py): the FLOPs it executes, not
/// the causal ones. It computes every block that holds an unmasked pair in
/// full (Plan::splash_block_*), and its backward, without the fused kernel
/// (sa_use_fused_bwd_kernel false, MaxText's default), runs a dkv kernel
/// (QK^T, dO·V^T, P^T·dO, dS^T·Q) and a dq kernel (QK^T, dO·V^T, dS·K):
/// 7 matmuls a block pair where the lowering counts 4; the fused backward
/// runs 5. The op's time is these FLOPs at the chip's attention rate.
double StageLowering::splash_flops(int32_t layer, bool backward) const {
  const double per_width = 2.0 * static_cast<double>(p_.microbatch_size) * static_cast<double>(a_);
  // The pairs depend on the layer only through its window: each count is
  // taken once per lowering (a loop over the query blocks).
  auto pairs = [&](size_t kernel, int64_t bq, int64_t bkv) {
    double& cached = splash_pairs_[3 * (m_.windowed(layer) ? 1 : 0) + kernel];
    if (cached < 0) cached = m_.attention_block_pairs(layer, p_.seq_len, bq, bkv);
    return cached;
  };
  const auto d = static_cast<double>(d_), dv = static_cast<double>(dv_);
  if (!backward) return per_width * (d + dv) * pairs(0, p_.splash_block_q, p_.splash_block_kv);
  const double dkv = pairs(1, p_.splash_block_q_dkv, p_.splash_block_kv_dkv);
  if (p_.splash_fused_backward) return per_width * (3 * d + 2 * dv) * dkv;
  return per_width * ((2 * d + 2 * dv) * dkv + (2 * d + dv) * pairs(2, p_.splash_block_q_dq, p_.splash_block_kv_dq));
}

/// One step of context-parallel attention: by default a block, this
/// device's queries (T tokens) against T keys, 1/cp² of the causal work
/// (load-balanced); or `queries` against `keys` (per sequence) doing
/// `share` of it.
Op StageLowering::cp_attention_step(int32_t layer, Pass pass, int64_t read, int64_t write, double share,
                                    int64_t queries, int64_t keys) {
  const bool backward = pass == Pass::kBackward;
  const double total = attention_flops(layer);
  Op o = base("cp attention", layer, pass, kC);
  o.compute = ComputeKind::kAttention;
  o.kernel = p_.attention_kernel;
  o.batch = p_.microbatch_size;
  o.m = queries > 0 ? queries : T_ / p_.microbatch_size;
  o.n = keys > 0 ? keys : T_ / p_.microbatch_size;
  o.k = a_ * d_;
  o.flops = Flops((backward ? 2.0 : 1.0) * total * (share > 0 ? share : 1.0 / static_cast<double>(cp_ * cp_)));
  o.model_flops = o.flops * model_share(pass, 1.0);
  o.bytes_read = Bytes(read);
  o.bytes_written = Bytes(write);
  o.mem_transient = o.bytes_read + o.bytes_written;
  return o;
}

/// Context parallelism by all-gather (Megatron's cp_comm_type "allgather";
/// PyTorch's context_parallel with the allgather rotation: below): the keys
/// and values of every cp rank are all-gathered once per attention call.
/// Transformer Engine (AttnFuncWithCPAndKVAllGather) then runs one kernel per
/// local half-chunk of queries against the keys before it (the two carry
/// 1/cp of the causal work together, half each on average, over s/2 keys on
/// average) and copies both into the output: no merge. Backward gathers the
/// keys and values again, holds dK, dV for the whole gathered sequence, and
/// reduce-scatters them.
OpId StageLowering::allgather_cp_attention(int32_t layer, Pass pass, const std::vector<OpId>& deps) {
  if (pytorch_sdpa(p_)) return pytorch_cp_attention(layer, pass, deps, /*gathered=*/true);
  const bool backward = pass == Pass::kBackward;
  const int64_t kv_local = T_ * kv_width(kv_) * kAct;
  const int64_t q = T_ * a_ * d_ * kAct, out = T_ * a_ * dv_ * kAct;
  const OpId kv = collective(CollectiveKind::kAllGather, axis_bit(MeshAxis::kCp), TrainStreams::kCpSend,
                             "cp kv all-gather", layer, pass, kv_local * cp_, DType::kBf16, deps);
  // Live beside each kernel: the gathered keys and values but the half it
  // reads (counted as its input) and, backward, their gradients.
  const int64_t held = kv_local * (cp_ - 1) + (backward ? kv_local * cp_ : 0);
  OpId x = kv;
  for (int i = 0; i < 2; ++i) {
    Op step = cp_attention_step(layer, pass, (backward ? q + 2 * out : q) / 2 + kv_local * cp_ / 2,
                                backward ? q / 2 + kv_local * cp_ / 2 : out / 2, 0.5 / static_cast<double>(cp_),
                                T_ / p_.microbatch_size / 2, p_.seq_len / 2);
    step.mem_transient = step.mem_transient + Bytes(held);
    x = b_.add(step, {x});
  }
  if (backward) {
    return collective(CollectiveKind::kReduceScatter, axis_bit(MeshAxis::kCp), TrainStreams::kCpSend,
                      "cp dkv reduce-scatter", layer, pass, kv_local * cp_, DType::kBf16, {x});
  }
  // Each half's output copied into the output tensor.
  return memop(ComputeKind::kElementwise, "cp out copy", layer, pass, T_ * a_ * dv_, out, out, 0, {x});
}

/// PyTorch's context parallelism (torch/distributed/tensor/experimental/
/// _attention.py: _templated_ring_attention and its backward), under
/// scaled_dot_product_attention: the keys and values of every cp rank reach
/// this one either all-gathered once per call (the allgather rotation) or
/// passed round a ring of cp - 1 sends (alltoall), and each block's partial
/// output is merged into an fp32 accumulator through its log-sum-exp
/// (_SDPAMerger). Under torchtitan, which repeats each KV head for its query
/// heads before SDPA (repeat_kv), the blocks carry a_ heads, not kv_.
/// Backward accumulates dq, dk and dv in fp32 (convert_to_f32) block by
/// block, and hands the dk, dv accumulators on to the next rank after every
/// block with an all-to-all permute in fp32 (its dkv rotater is always
/// ALL_TO_ALL): block i adds to what the previous rank sent after its block
/// i - 1, so the accumulations form a chain round the ring; after the last
/// block each rank receives its own keys' and values' gradients and casts
/// them, and dq, to bf16.
OpId StageLowering::pytorch_cp_attention(int32_t layer, Pass pass, const std::vector<OpId>& deps, bool gathered) {
  const bool backward = pass == Pass::kBackward;
  const int64_t kv_local = T_ * kv_width(a_) * kAct;  // repeated KV heads
  const int64_t q = T_ * a_ * d_ * kAct, out = T_ * a_ * dv_ * kAct;
  const OpId kv = gathered ? collective(CollectiveKind::kAllGather, axis_bit(MeshAxis::kCp), TrainStreams::kCpSend,
                                        "cp kv all-gather", layer, pass, kv_local * cp_, DType::kBf16, deps)
                           : kNone;
  const int64_t grads = T_ * (a_ * d_ + kv_width(a_));  // dq, dk, dv values of one block
  // Live beside every block's kernel: the gathered keys and values but the
  // block it reads (counted as its input), or the next block on its way
  // round the ring; and the fp32 accumulators: the output forward
  // (_SDPAMerger); dq, dk, dv and the dk, dv received from the previous
  // rank backward.
  int64_t held = gathered ? kv_local * (cp_ - 1) : kv_local;
  held += backward ? 4 * (grads + T_ * kv_width(a_)) : 4 * T_ * a_ * dv_;
  OpId x = kNone;
  OpId have = kNone;  // ring: the receive that brought this step's block
  OpId dkv = kNone;   // the dk, dv accumulators received from the previous rank
  for (int64_t i = 0; i < cp_; ++i) {
    const OpId next = !gathered && i + 1 < cp_
                          ? ring_exchange("cp send kv", "cp recv kv", layer, pass, MeshAxis::kCp, TrainStreams::kCpSend,
                                          TrainStreams::kCpRecv, kv_local, i == 0 ? deps : std::vector<OpId>{have})
                          : kNone;
    Op step = cp_attention_step(layer, pass, backward ? q + 2 * out + 2 * kv_local : q + kv_local,
                                backward ? q + 2 * kv_local : out);
    step.mem_transient = step.mem_transient + Bytes(held);
    std::vector<OpId> after = i == 0 ? (gathered ? std::vector<OpId>{kv} : deps) : std::vector<OpId>{x};
    if (!gathered && i > 0) after.push_back(have);
    x = b_.add(step, after);
    if (!backward) {
      // Merge the block's output and log-sum-exp into the fp32 accumulator.
      x = memop(ComputeKind::kElementwise, "cp merge", layer, pass, T_ * a_ * dv_, T_ * a_ * dv_ * (kAct + 4),
                T_ * a_ * dv_ * 4, 4, {x});
    } else {
      // Add the block's bf16 gradients into the fp32 accumulators (dk, dv:
      // the ones the previous rank sent on), then send dk, dv on.
      x = memop(ComputeKind::kElementwise, "cp grad accumulate", layer, pass, grads, grads * (4 + kAct), grads * 4, 1,
                i == 0 ? std::vector<OpId>{x} : std::vector<OpId>{x, dkv});
      dkv = ring_exchange("cp send dkv", "cp recv dkv", layer, pass, MeshAxis::kCp, TrainStreams::kCpSend,
                          TrainStreams::kCpRecv, T_ * kv_width(a_) * 4, {x});
    }
    have = next;
  }
  if (backward) {
    return memop(ComputeKind::kElementwise, "cp grad cast", layer, pass, grads, grads * 4, grads * kAct, 1, {x, dkv});
  }
  return x;
}

/// Context parallelism by all-to-all (DeepSpeed Ulysses; Megatron's
/// cp_comm_type "a2a"): q, k and v are exchanged so that each cp rank holds
/// the whole sequence for a/cp of the heads, attention runs locally, and the
/// output is exchanged back; backward mirrors both exchanges.
OpId StageLowering::a2a_cp_attention(int32_t layer, Pass pass, const std::vector<OpId>& deps) {
  const bool backward = pass == Pass::kBackward;
  const int64_t qkv = T_ * (a_ * d_ + kv_width(kv_)) * kAct;
  const int64_t out = T_ * a_ * dv_ * kAct;
  const uint8_t cp_axis = axis_bit(MeshAxis::kCp);
  OpId x = collective(CollectiveKind::kAllToAll, cp_axis, TrainStreams::kCpSend, "cp all-to-all", layer, pass,
                      backward ? out : qkv, DType::kBf16, deps);
  const double total = attention_flops(layer);
  Op o = base("attention", layer, pass, kC);
  o.compute = ComputeKind::kAttention;
  o.kernel = p_.attention_kernel;
  o.batch = p_.microbatch_size;
  o.m = p_.seq_len;
  o.n = p_.seq_len;
  o.k = a_ * d_ / cp_;
  o.flops = Flops((backward ? 2.0 : 1.0) * total / static_cast<double>(cp_));
  o.model_flops = o.flops * model_share(pass, 1.0);
  o.bytes_read = Bytes(backward ? qkv + 2 * out : qkv);
  o.bytes_written = Bytes(backward ? qkv : out);
  o.mem_transient = o.bytes_read + o.bytes_written;
  x = b_.add(o, {x});
  return collective(CollectiveKind::kAllToAll, cp_axis, TrainStreams::kCpSend, "cp all-to-all", layer, pass,
                    backward ? qkv : out, DType::kBf16, {x});
}

}  // namespace shardsim::detail
