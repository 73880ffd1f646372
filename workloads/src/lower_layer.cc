// One Transformer layer of a training step: its forward nodes (layer_graph.h),
// what the plan's recomputation policy keeps of them and re-runs, and its
// backward.
#include <tuple>

#include "stage_lowering.h"

namespace shardsim::detail {

LayerConfig layer_config(const ModelSpec& m, const Plan& p, bool moe, bool bf16_layer) {
  const LayerShape sh(m, p);
  LayerConfig c;
  c.tp = p.tp > 1;
  c.sequence_parallel = p.sequence_parallel;
  c.rope = m.position == PositionKind::kRope;
  c.unfused_attention = !p.fused_attention && p.cp == 1;  // ring attention runs flash-style blocks
  c.dropout = m.dropout;
  c.swiglu = m.gated();
  c.moe = moe;
  c.expert_parallel = p.ep > 1 || p.expert_tp > 1;
  c.shared_experts = m.moe.shared_experts > 0;
  c.fused_qkv = p.fused_qkv && !m.is_mla();  // MLA's queries and keys come from their own latents
  c.fused_gate_up = p.fused_gate_up;
  c.mla = m.is_mla();
  c.q_latent = m.is_mla() && m.mla.q_lora_rank > 0;
  c.post_norms = m.post_norms;
  // Output bytes per microbatch on this device (bf16 activations; 1-byte
  // dropout masks; fp32 log-sum-exp of flash attention), after Korthikanti
  // et al. 2022, section 4: a GPT layer with dropout keeps 34·s·b·h (+
  // 5·a·s²·b unfused) without tensor parallelism.
  auto& b = c.bytes;
  auto set = [&](Node n, int64_t v) { b[idx(n)] = v; };
  // d: each query and key head's width, dv: each value and output head's
  // (MLA: head_dim plus the rotary part, and v_head_dim).
  const int64_t T = sh.T, Ts = sh.Ts, h = m.hidden, a = sh.a, kv = sh.kv, d = m.qk_head_dim(), dv = m.v_head_dim(),
                f = sh.f;
  const int64_t mask = m.dropout ? Ts * h : 0;
  const int64_t scores = p.microbatch_size * a * p.seq_len * p.seq_len;
  set(Node::kIn, Ts * h * kAct);
  set(Node::kLn1, Ts * h * kAct);
  set(Node::kAg1, T * h * kAct);
  // MLA's latents, replicated over tp: each before its norm (its backward's
  // input) and after (the up projection's); the keys' with the shared
  // rotary key.
  set(Node::kQa, 2 * T * m.mla.q_lora_rank * kAct);
  set(Node::kKva, T * (2 * m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * kAct);
  set(Node::kQ, T * a * d * kAct);
  set(Node::kK, T * kv * d * kAct);
  set(Node::kV, T * kv * dv * kAct);
  set(Node::kRope, T * (a + kv) * d * kAct);
  set(Node::kScores, scores * kAct);
  set(Node::kSoftmax, scores * kAct);
  set(Node::kDropout, scores * (kAct + 1));
  set(Node::kAttn, T * a * dv * kAct + (c.unfused_attention ? 0 : T * a * 4));
  set(Node::kProj, T * h * kAct);
  set(Node::kRs1, Ts * h * kAct);
  set(Node::kPostLn1, Ts * h * kAct);
  set(Node::kRes1, Ts * h * kAct + mask);
  set(Node::kLn2, Ts * h * kAct);
  set(Node::kAg2, T * h * kAct);
  set(Node::kGate, T * f * kAct);
  set(Node::kUp, T * f * kAct);
  set(Node::kAct, T * f * kAct);
  set(Node::kDown, T * h * kAct);
  set(Node::kRs2, Ts * h * kAct);
  set(Node::kPostLn2, Ts * h * kAct);
  set(Node::kRes2, mask);
  if (moe) {
    const int64_t slots = sh.moe_slots(m), fe = m.moe.expert_ffn_hidden, fs = m.moe.shared_experts * fe;
    set(Node::kRouter, Ts * m.moe.experts * kAct);
    set(Node::kTopk, Ts * m.moe.experts * kAct);
    set(Node::kPermute, slots * h * kAct);
    set(Node::kDispatch, slots * h * kAct * p.expert_tp);  // gathered over the expert shards
    set(Node::kEUp, 2 * slots * fe * kAct);
    set(Node::kEAct, slots * fe * kAct);
    set(Node::kEDown, slots * h * kAct * p.expert_tp);
    set(Node::kCombine, slots * h * kAct);
    set(Node::kUnpermute, Ts * h * kAct);
    // The shared MLP split over tp on the whole (gathered) sequence.
    const int64_t fsl = (fs + p.tp - 1) / p.tp;
    set(Node::kSUp, 2 * T * fsl * kAct);
    set(Node::kSAct, T * fsl * kAct);
    set(Node::kSDown, Ts * h * kAct);
  }
  // Linears that keep their weight-gradient input quantised
  // (Plan::low_precision_saved_inputs): a tensor only a linear's backward
  // reads is kept at q bytes per element instead of bf16; attention's
  // output, which the attention backward reads too, is kept in both forms.
  // The MoE layer's MLP norm output also feeds the (bf16) router: kept bf16.
  // Under PyTorch's per-op selective checkpointing the quantised copies are
  // outputs of quantisation kernels outside its save list (aten matmuls,
  // attention, collectives): they are recomputed, not kept, and what the
  // policy keeps (matmul and attention outputs) stays bf16.
  if (p.low_precision_saved_inputs && low_precision_matmuls(p) && !bf16_layer && p.recompute != Recompute::kOpSac) {
    const double ratio = operand_bytes(p.matmul_dtype, p.fp8_recipe) / kAct;
    auto quantised = [&](Node n) {
      b[idx(n)] = static_cast<int64_t>(std::llround(static_cast<double>(b[idx(n)]) * ratio));
    };
    quantised(Node::kLn1);
    quantised(Node::kAg1);
    b[idx(Node::kAttn)] += static_cast<int64_t>(std::llround(static_cast<double>(T * a * dv * kAct) * ratio));
    if (!moe) {
      quantised(Node::kLn2);
      quantised(Node::kAg2);
      quantised(Node::kAct);
    } else {
      quantised(Node::kPermute);
      quantised(Node::kDispatch);
      quantised(Node::kEAct);
      quantised(Node::kSAct);
    }
  }
  return c;
}

RecomputeSpec keep_everything(RecomputeSpec spec) {
  spec.policy = RecomputeSpec::Policy::kNone;
  spec.custom = {};
  return spec;
}

bool recompute_applies(const Plan& p, int64_t layer, int64_t index) {
  if (p.recompute_layers > 0) return index < p.recompute_layers;
  if (p.recompute_every > 0) return (layer + 1) % p.recompute_every == 0;
  return true;
}

RecomputeSpec recompute_spec(const Plan& p, bool bf16_layer) {
  RecomputeSpec r;
  using P = RecomputeSpec::Policy;
  // torchao's NVFP4 GEMM (nvfp4_mm_triton, a custom autograd Function over
  // Triton kernels, pytorch/torchtitan@b5bcd76c66:torchtitan/components/
  // quantization/nvfp4.py:67-81) is no op of torchtitan's per-op save list
  // (aten matmuls, attention, max, reduce-scatter, all-to-all:
  // torchtitan/distributed/activation_checkpoint.py:31-96): its outputs are
  // recomputed. float8 and MXFP8 GEMMs run as aten._scaled_mm, which is.
  r.matmuls_saveable = !(p.recompute == Recompute::kOpSac && low_precision_matmuls(p) && !bf16_layer &&
                         p.fp8_recipe == Plan::Fp8Recipe::kNvfp4);
  switch (p.recompute) {
    case Recompute::kNone:
      r.policy = P::kNone;
      break;
    case Recompute::kSelective:
      r.policy = P::kSelective;
      break;
    case Recompute::kFull:
      r.policy = P::kFull;
      break;
    case Recompute::kSaveDots:
      r.policy = P::kSaveDots;
      break;
    case Recompute::kSaveQkv:
      r.policy = P::kSaveQkv;
      break;
    case Recompute::kOpSac:
      r.policy = P::kOpSac;
      break;
    case Recompute::kCustom:
      r.policy = P::kCustom;
      for (const auto& [names, set, qk] : {std::tuple{&p.recompute_keep, &r.custom, &r.custom_qk},
                                           std::tuple{&p.recompute_offload, &r.offloaded, &r.offloaded_qk}}) {
        for (const std::string& name : *names) {
          const auto s = nodes_named(name);
          if (!s) continue;
          // MaxText tags query_proj and key_proj after the rotation.
          const bool after_rope = p.framework == Framework::kMaxtext && (name == "query_proj" || name == "key_proj");
          *(after_rope ? qk : set) |= *s;
        }
      }
      break;
  }
  switch (p.framework) {
    case Framework::kTorchtitan:
      r.mode = RecomputeMode::kPrefix;
      r.sp_regather = false;
      break;
    case Framework::kMaxtext:
      r.mode = RecomputeMode::kClosure;
      r.sp_regather = false;
      break;
    case Framework::kGeneric:
    case Framework::kMegatron2021:
    case Framework::kMegatronCore:
    case Framework::kDeepspeed:
      r.mode = RecomputeMode::kRegion;
      r.sp_regather = true;
      break;
  }
  return r;
}

OpId StageLowering::emit_node(Node n, int32_t L, Pass pass, const std::vector<OpId>& deps) {
  auto project = [&](Node p) {
    const RingGemm g = projection(p);
    return matmul(g.name, L, pass, T_, g.n, h_, deps, g.model_fraction);
  };
  switch (n) {
    case Node::kLn1:
      return b_.add(norm_op("attn norm", L, pass), deps);
    case Node::kAg1:
      return collective(CollectiveKind::kAllGather, kTpAxis, kTpS, "attn all-gather", L, pass, T_ * h_ * kAct,
                        DType::kBf16, deps);
    case Node::kQa:
    case Node::kKva:
      return mla_down(n, L, pass, deps);
    case Node::kQ:
      if (m_.is_mla() && m_.mla.q_lora_rank > 0) return matmul("q up", L, pass, T_, a_ * d_, m_.mla.q_lora_rank, deps);
      return project(n);
    case Node::kK:
      // MLA: each head's key (less the shared rotary part) and value, up from
      // the latent in one GEMM.
      if (m_.is_mla()) return matmul("kv up", L, pass, T_, a_ * (m_.head_dim + dv_), m_.mla.kv_lora_rank, deps);
      return project(n);
    case Node::kV:
    case Node::kGate:
    case Node::kUp:
      return project(n);
    case Node::kRope:
      return rope_op(L, pass, deps);
    case Node::kScores:
    case Node::kSoftmax:
    case Node::kDropout:
    case Node::kAttn:
      return attention_node(n, L, pass, deps);
    case Node::kProj:
      return matmul("attn out", L, pass, T_, h_, a_ * dv_, deps);
    case Node::kRs1:
    case Node::kRs2:
      return collective(p_.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, kTpAxis,
                        kTpS, n == Node::kRs1 ? "attn all-reduce" : "mlp all-reduce", L, pass, T_ * h_ * kAct,
                        DType::kBf16, deps);
    case Node::kRes1:
    case Node::kRes2:
      return residual(L, pass, deps);
    case Node::kLn2:
      return b_.add(norm_op("mlp norm", L, pass), deps);
    case Node::kPostLn1:
      return b_.add(norm_op("attn post norm", L, pass), deps);
    case Node::kPostLn2:
      return b_.add(norm_op("mlp post norm", L, pass), deps);
    case Node::kAg2:
      return collective(CollectiveKind::kAllGather, kTpAxis, kTpS, "mlp all-gather", L, pass, T_ * h_ * kAct,
                        DType::kBf16, deps);
    case Node::kAct:
      return act_op(L, pass, deps);
    case Node::kDown:
      return matmul("mlp down", L, pass, T_, h_, f_, deps);
    case Node::kIn:
    case Node::kCount:
      break;
    default:
      return moe_node(n, L, pass, deps);
  }
  SHARDSIM_ASSERT(false, "a layer node has an op");
  return kNone;
}

// fp8 quantisation kernels, by recipe (memory-bound; bytes per element of
// the tensor quantised: bf16 in, fp8 out, a transposed copy where the
// backward GEMMs need one):
//   delayed (Transformer Engine DelayedScaling; flax Fp8DotGeneralOp): the
//     scale is last steps' amax, so a cast writes fp8 and its transpose in
//     one pass (TE cast_transpose: read 2, write 2); a LayerNormLinear's
//     norm writes its fp8 output itself; each GEMM's output gradient is
//     cast-transposed once for dgrad and wgrad; weights are cast once per
//     step (TE caches them over microbatches), not at all when the
//     parameters are fp8 (fp8_param_gather).
//   tensorwise (torchao dynamic scaling): the amax of the tensor first, then
//     the cast (read 2, read 2 + write 1 = 5), for inputs and weights every
//     forward (weights not, when all-gathered in fp8 with the scale
//     precomputed); backward casts the output gradient the same way and
//     re-casts the saved bf16 input and the weight for wgrad and dgrad
//     (read 2, write 1).
//   rowwise, mxfp8 (torchao per-row and 32-element block scales): each cast
//     is one pass (read 2, write 1) along one dimension; the backward needs
//     both dimensions of the gradient and the other dimension of input and
//     weight. rowwise_gw_hp runs wgrad in bf16: only the gradient's dgrad
//     cast and the weight's.
// (TransformerEngine transformer_engine/pytorch/module/linear.py;
// pytorch/ao torchao/float8/float8_linear.py, config.py;
// torchao/prototype/mx_formats/mx_linear.py.)
StageLowering::LinearShape StageLowering::linear_shape(Node n) const {
  const int64_t fe = m_.moe.expert_ffn_hidden, fs = m_.moe.shared_experts * fe, slots = moe_slots();
  const bool fused_qkv = p_.fused_qkv, fused_up = p_.fused_gate_up && m_.gated();
  switch (n) {
    case Node::kQa:
      return {T_ * h_, T_ * m_.mla.q_lora_rank, h_ * m_.mla.q_lora_rank, true};
    case Node::kKva: {
      const int64_t n_out = m_.mla.kv_lora_rank + m_.mla.qk_rope_head_dim;
      return {T_ * h_, T_ * n_out, h_ * n_out, true};
    }
    case Node::kQ:
      if (m_.is_mla()) {
        const int64_t k_in = m_.mla.q_lora_rank > 0 ? m_.mla.q_lora_rank : h_;
        return {T_ * k_in, T_ * a_ * d_, k_in * a_ * d_, m_.mla.q_lora_rank == 0};
      }
      return {T_ * h_, T_ * (fused_qkv ? a_ + 2 * kv_ : a_) * d_, h_ * (fused_qkv ? a_ + 2 * kv_ : a_) * d_, true};
    case Node::kK:
      if (m_.is_mla()) {
        const int64_t n_out = a_ * (m_.head_dim + dv_), k_in = m_.mla.kv_lora_rank;
        return {T_ * k_in, T_ * n_out, k_in * n_out, false};
      }
      return {T_ * h_, T_ * kv_ * d_, h_ * kv_ * d_, true};
    case Node::kV:
      if (m_.is_mla()) return {};  // one GEMM with the keys (kK)
      return {T_ * h_, T_ * kv_ * d_, h_ * kv_ * d_, true};
    case Node::kProj:
      return {T_ * a_ * dv_, T_ * h_, a_ * dv_ * h_, false};
    case Node::kGate:
    case Node::kUp:
      return {T_ * h_, T_ * (fused_up ? up_n_ : f_), h_ * (fused_up ? up_n_ : f_), true};
    case Node::kDown:
      return {T_ * f_, T_ * h_, f_ * h_, false};
    case Node::kEUp: {
      const int64_t tokens = slots * p_.expert_tp, fel = fe / p_.expert_tp;
      return {tokens * h_, tokens * 2 * fel, local_experts_ * h_ * 2 * fel, false};
    }
    case Node::kEDown: {
      const int64_t tokens = slots * p_.expert_tp, fel = fe / p_.expert_tp;
      return {tokens * fel, tokens * h_, local_experts_ * fel * h_, false};
    }
    case Node::kSUp:
      return {Ts_ * h_, Ts_ * 2 * fs, h_ * 2 * fs, true};
    case Node::kSDown:
      return {Ts_ * fs, Ts_ * h_, fs * h_, false};
    default:
      return {};
  }
}

// Quantisation kernels of a linear layer's GEMMs, per recipe, as HBM bytes
// read and written (q = operand_bytes: the low-precision copy with its block
// scales; a cast reads bf16, 2 bytes an element):
//   delayed (TE, fp8 weights cast once per step or gathered in fp8): the
//     input's cast where no norm kernel writes fp8 for it (4 B an element:
//     an amax pass and a cast), the weight's on the first microbatch (4 B);
//     fused by XLA (fp8_casts_fused): the fp8 copy written by the producer
//     (q B), a pass of its own (2 + q) for the attention output, the
//     dispatched tokens and the weight;
//   tensorwise (current scaling): an amax pass and a cast, 5 B per element
//     of the input and the weight;
//   rowwise, rowwise_gw_hp, mxfp8, blockwise (scales computed in the cast
//     kernel): one cast of the input and of the weight (2 + q each);
//   nvfp4 (torchao's NVFP4Linear, TE's NVFP4BlockScaling): the input and the
//     weight each quantised once into both orientations, the column-wise
//     one through a 16x16 random Hadamard transform (2 + 2q each).
// Backward: delayed casts the output gradient (4 B; fused: q B written);
// tensorwise the output gradient (5 B), the input and the weight
// transposed (3 B each); the per-block fp8 recipes cast the output gradient
// twice (row- and column-wise blocks for dgrad and wgrad) and the input and
// the weight again in the other orientation; nvfp4 the output gradient into
// both orientations (2 + 2q), its operands saved from the forward (torchao
// prototype/moe_training/nvfp4_training/nvfp4_linear.py:194-236);
// rowwise_gw_hp only the output gradient and the weight. The Hadamard
// transform and stochastic rounding are taken as free beside the bytes.
std::vector<OpId> StageLowering::fp8_forward_casts(Node n, int32_t L, Pass pass, const std::vector<OpId>& deps) {
  const LinearShape s = linear_shape(n);
  if (!low_precision() || s.in == 0 || in_bf16_tail(L)) return deps;
  using R = Plan::Fp8Recipe;
  const double q = operand_bytes(p_.matmul_dtype);
  const auto in = static_cast<double>(s.in), w = static_cast<double>(s.weight);
  double read = 0, written = 0;  // bytes
  switch (p_.fp8_recipe) {
    case R::kDelayed: {
      if (p_.fp8_casts_fused) {
        // XLA (Plan::fp8_casts_fused): the producer's fusion writes the fp8
        // copy; the attention kernel's output and the dispatched tokens
        // (a library call, a collective) and the gathered weights are
        // converted by a fusion of their own.
        const bool dispatched = n == Node::kEUp && (p_.ep > 1 || p_.expert_tp > 1);
        const bool own_pass = n == Node::kProj || dispatched;
        read = own_pass ? 2 * in : 0;
        written = q * in;
        if (mb_ == 0 && pass == Pass::kForward && !p_.fp8_param_gather) {
          read += 2 * w;
          written += q * w;
        }
        break;
      }
      double b = 0;
      if (!s.norm_fed) b += 4 * in;
      if (mb_ == 0 && pass == Pass::kForward && !p_.fp8_param_gather) b += 4 * w;
      read = b * 2 / 3;
      written = b / 3;
      break;
    }
    case R::kTensorwise: {
      const double b = 5 * in + (p_.fp8_param_gather ? 0 : 5 * w);
      read = b * 2 / 3;
      written = b / 3;
      break;
    }
    case R::kRowwise:
    case R::kRowwiseGwHp:
    case R::kMxfp8:
    case R::kBlockwise:
      read = 2 * (in + w);
      written = q * (in + w);
      break;
    case R::kNvfp4:
      read = 2 * (in + w);
      written = 2 * q * (in + w);
      break;
  }
  if (read + written == 0) return deps;
  return {cast_op(L, pass, read, written, deps)};
}

OpId StageLowering::fp8_backward_casts(Node n, int32_t L, OpId dep) {
  const LinearShape s = linear_shape(n);
  if (!low_precision() || s.in == 0 || in_bf16_tail(L)) return dep;
  using R = Plan::Fp8Recipe;
  const double q = operand_bytes(p_.matmul_dtype);
  const auto in = static_cast<double>(s.in), out = static_cast<double>(s.out), w = static_cast<double>(s.weight);
  double bytes = 0, read = 0, written = 0;
  switch (p_.fp8_recipe) {
    case R::kDelayed:
      if (p_.fp8_casts_fused) {
        written = q * out;  // fused into the fusion that makes the gradient
        break;
      }
      bytes = 4 * out;
      break;
    case R::kTensorwise:
      bytes = 5 * out + 3 * in + (p_.fp8_param_gather ? 0 : 3 * w);
      break;
    case R::kRowwise:
    case R::kMxfp8:
    case R::kBlockwise:
      read = 2 * (2 * out + in + w);
      written = q * (2 * out + in + w);
      break;
    case R::kRowwiseGwHp:
      read = 2 * (out + w);
      written = q * (out + w);
      break;
    case R::kNvfp4:
      read = 2 * out;
      written = 2 * q * out;
      break;
  }
  if (bytes > 0) {
    read = bytes * 2 / 3;
    written = bytes / 3;
  }
  return cast_op(L, Pass::kBackward, read, written, {dep});
}

// torchao's row-wise recipes run their slow-accumulation (gradient) GEMMs
// as cuBLAS tensor-wise GEMMs with unit scales and multiply the bf16 output
// by the outer product of the row and column scales after it ("The rowwise
// CUTLASS-based kernel is so slow without fast-accum that we'd rather use
// the tensorwise cuBLAS-based kernel and do the scaling manually
// afterwards": pytorch/ao torchao/float8/float8_ops.py
// addmm_float8_unwrapped, since #1377, 2024-12). Compiled, one fused pass
// (read 2, write 2 bytes an element); eager, the outer product is written
// in fp32 first (4) and read back by the multiply (2 + 4, 2).
OpId StageLowering::rowwise_rescale(OpId gemm, const Op& o, int32_t layer, Pass pass, int64_t elems) {
  using R = Plan::Fp8Recipe;
  if (!o.split_accumulator || (p_.fp8_recipe != R::kRowwise && p_.fp8_recipe != R::kRowwiseGwHp)) return gemm;
  const int64_t bytes = (p_.compile ? 2 : 6) * elems;
  return memop(ComputeKind::kElementwise, "fp8 rowwise rescale", layer, pass, elems, bytes, bytes, 1, {gemm});
}

/// One quantisation kernel: `read` bytes of bf16 in (2 bytes an element),
/// `written` out; two FLOPs per element read (scale and convert).
OpId StageLowering::cast_op(int32_t L, Pass pass, double read, double written, const std::vector<OpId>& deps) {
  const auto elems = static_cast<int64_t>(std::llround(read / 2));
  return memop(ComputeKind::kElementwise, "fp8 quantize", L, pass, elems, static_cast<int64_t>(std::llround(read)),
               static_cast<int64_t>(std::llround(written)), 2, deps);
}

OpId StageLowering::emit_layer(int32_t L, Pass pass, const NodeSet& emit, OpId in, OpId weights, LayerOps& ops) {
  const LayerGraph& g = graph(L);
  const RecomputePlan& rp = recompute_plan(L);
  OpId last = in;
  bool first = true;
  for (int i = 1; i < kNodes; ++i) {
    const auto n = static_cast<Node>(i);
    if (!emit.test(idx(n)) || ops[n] != kNone) continue;
    // A fused kernel (q, k, v; gate and up) is one op for all its nodes;
    // the projections of one ring-gathered input are emitted together.
    const bool ub = userbuffers() && pass == Pass::kForward;
    const NodeSet ring = ub ? ring_group(g, n) : NodeSet{};
    const NodeSet kernel = ring.any() ? ring : g.fused_with(n);
    std::vector<OpId> deps;
    int64_t alloc = 0;
    for (int j = 0; j < kNodes; ++j) {
      if (!kernel.test(static_cast<size_t>(j))) continue;
      const auto member = static_cast<Node>(j);
      for (Node input : g.inputs(member)) deps.push_back(input == Node::kIn ? in : ops[input]);
      // The forward charges what the policy keeps; a recomputation what
      // the backward reads that was not kept. Both are held until the
      // layer's backward ends, but offloaded tensors: until their copy to
      // the host ends, and again from their copy back (offload, reload).
      const bool hold = pass == Pass::kForward ? rp.kept.test(idx(member))
                                               : rp.needed.test(idx(member)) && !rp.kept.test(idx(member));
      if (hold) alloc += g.bytes(member);
    }
    if (first) {
      deps.push_back(in);
      deps.push_back(weights);
      if (pass == Pass::kForward) alloc += g.bytes(Node::kIn);  // its checkpoint
      first = false;
    }
    // The kernels the op runs: each member that comes first in its fused
    // kernel (one GEMM per fused kernel).
    std::vector<Node> gemm_nodes;
    for (int j = 0; j < kNodes; ++j) {
      const auto member = static_cast<Node>(j);
      const NodeSet fused = g.fused_with(member);
      bool first_of_kernel = kernel.test(idx(member));
      for (int k = 0; k < j && first_of_kernel; ++k) first_of_kernel = !fused.test(static_cast<size_t>(k));
      if (first_of_kernel) gemm_nodes.push_back(member);
    }
    for (Node member : gemm_nodes) {
      if (linear_shape(member).in > 0) deps = fp8_forward_casts(member, L, pass, deps);
    }
    OpId op;
    // Under MLA the attention norm's gather stays a collective: the down
    // projections that read it are not userbuffers GEMMs.
    const bool folded_gather = n == Node::kAg2 || (n == Node::kAg1 && !m_.is_mla());
    if (ub && (folded_gather || n == Node::kRs1 || n == Node::kRs2)) {
      // Folded into the GEMM before or after it (below).
      op = deps.empty() ? in : deps.front();
    } else if (ring.any()) {
      // The gather of the norm output runs as a ring exchange under the
      // GEMMs that read it: one fused GEMM, or each projection's.
      OpId gathered = kNone;
      std::vector<RingGemm> gemms;
      for (Node member : gemm_nodes) gemms.push_back(projection(member));
      op = ub_gather_matmuls(gemms, L, pass, T_, h_, deps, gathered).back();
      ops.op[idx(n == Node::kQ ? Node::kAg1 : Node::kAg2)] = gathered;
    } else if (ub && (n == Node::kProj || n == Node::kDown)) {
      const bool proj = n == Node::kProj;
      op = ub_matmul_scatter(proj ? "attn out" : "mlp down", proj ? "attn reduce-scatter" : "mlp reduce-scatter", L,
                             pass, T_, h_, proj ? a_ * dv_ : f_, deps);
      ops.op[idx(proj ? Node::kRs1 : Node::kRs2)] = op;
    } else {
      op = emit_node(n, L, pass, deps);
    }
    b_.memory(op, pass == Pass::kForward ? MemKind::kActivation : MemKind::kRecomputed, Bytes(alloc), Bytes(0));
    for (int j = 0; j < kNodes; ++j) {
      if (kernel.test(static_cast<size_t>(j))) ops.op[static_cast<size_t>(j)] = op;
    }
    last = op;
  }
  return last;
}

OpId StageLowering::mlp_backward(int32_t L, OpId cur, OpId weights, const LayerOps& rec, OpId& wgrad) {
  const Pass pass = Pass::kBackward;
  const Node ln2_out = graph(L).present(Node::kAg2) ? Node::kAg2 : Node::kLn2;
  OpId x, dg;
  cur = fp8_backward_casts(Node::kDown, L, cur);
  if (userbuffers()) {
    // The output gradient's gather is a ring exchange under the dgrad GEMM.
    dg = ub_gather_matmul("mlp down dgrad", L, pass, T_, f_, h_, {cur, weights}, 1.0, x);
  } else {
    x = row_parallel_grad("mlp grad all-gather", L, cur);
    dg = matmul("mlp down dgrad", L, pass, T_, f_, h_, {x, weights});
  }
  matmul("mlp down wgrad", L, pass, f_, h_, T_, {x, rec[Node::kAct]}, 1.0, 1, Operands::kWeightGrad);
  x = act_op(L, pass, {dg, rec[Node::kGate], rec[Node::kUp]});
  OpId wg;
  if (graph(L).fused_with(Node::kUp).count() > 1 || !m_.gated()) {
    x = fp8_backward_casts(m_.gated() ? Node::kGate : Node::kUp, L, x);
    dg = matmul("mlp up dgrad", L, pass, T_, h_, up_n_, {x});
    wg = matmul("mlp up wgrad", L, pass, h_, up_n_, T_, {x, rec[ln2_out]}, 1.0, 1, Operands::kWeightGrad);
  } else {
    x = fp8_backward_casts(Node::kUp, L, fp8_backward_casts(Node::kGate, L, x));
    matmul("mlp gate dgrad", L, pass, T_, h_, f_, {x});
    matmul("mlp gate wgrad", L, pass, h_, f_, T_, {x, rec[ln2_out]}, 1.0, 1, Operands::kWeightGrad);
    dg = matmul("mlp up dgrad", L, pass, T_, h_, f_, {x});
    wg = matmul("mlp up wgrad", L, pass, h_, f_, T_, {x}, 1.0, 1, Operands::kWeightGrad);
  }
  wgrad = wg;
  return column_parallel_grad("mlp grad all-reduce", L, dg, wg);
}

OpId StageLowering::layer_backward(int32_t L, OpId cur, OpId weights, OpId& wgrad) {
  const Pass pass = Pass::kBackward;
  const LayerGraph& g = graph(L);
  const RecomputePlan& rp = recompute_plan(L);
  // Recomputation runs when the layer's backward starts (Megatron's and
  // PyTorch's checkpoints re-run their region on the first use of a
  // tensor they did not keep), except a recomputation of the attention core
  // alone (and of sequence-parallel gathers), which runs where its backward
  // does (Megatron's selective recomputation checkpoints the core only).
  const NodeSet core = nodes({Node::kScores, Node::kSoftmax, Node::kDropout, Node::kAttn});
  const NodeSet gathers = nodes({Node::kAg1, Node::kAg2});
  const bool late_core = (rp.recomputed & ~core & ~gathers).none();
  LayerOps rec;
  emit_layer(L, Pass::kRecompute, late_core ? rp.recomputed & ~core : rp.recomputed, cur, weights, rec);
  // A post-norm's backward comes first in its block, reading the norm's
  // input (kept or recomputed).
  auto post_norm_backward = [&](Node n, const char* name, OpId grad) {
    std::vector<OpId> deps = {grad};
    for (Node input : g.inputs(n)) deps.push_back(rec[input]);
    return b_.add(norm_op(name, L, pass), deps);
  };
  // MLP block.
  OpId x, wg;
  if (g.present(Node::kPostLn2)) cur = post_norm_backward(Node::kPostLn2, "mlp post norm", cur);
  if (m_.is_moe_layer(L)) {
    x = moe_backward(L, cur, weights, rec, wg);
  } else {
    x = mlp_backward(L, cur, weights, rec, wg);
  }
  x = b_.add(norm_op("mlp norm", L, pass), {x, wg, rec[Node::kRes1]});
  x = residual(L, pass, {x});
  // Attention block.
  OpId dg;
  if (g.present(Node::kPostLn1)) x = post_norm_backward(Node::kPostLn1, "attn post norm", x);
  x = fp8_backward_casts(Node::kProj, L, x);
  if (userbuffers()) {
    const OpId grad = x;
    dg = ub_gather_matmul("attn out dgrad", L, pass, T_, a_ * dv_, h_, {grad}, 1.0, x);
  } else {
    x = row_parallel_grad("attn grad all-gather", L, x);
    dg = matmul("attn out dgrad", L, pass, T_, a_ * dv_, h_, {x});
  }
  matmul("attn out wgrad", L, pass, a_ * dv_, h_, T_, {x, rec[Node::kAttn]}, 1.0, 1, Operands::kWeightGrad);
  if (late_core && (rp.recomputed & core).any()) {
    emit_layer(L, Pass::kRecompute, rp.recomputed & core, dg, weights, rec);
  }
  x = attention_backward(L, dg);
  if (g.present(Node::kRope)) x = rope_op(L, pass, {x});
  const Node ln1_out = g.present(Node::kAg1) ? Node::kAg1 : Node::kLn1;
  if (!m_.is_mla()) {
    x = fp8_backward_casts(Node::kQ, L, x);
    if (g.fused_with(Node::kQ).count() == 1) x = fp8_backward_casts(Node::kV, L, fp8_backward_casts(Node::kK, L, x));
  }
  if (m_.is_mla()) {
    mla_backward(L, x, rec, ln1_out, dg, wg);
  } else if (g.fused_with(Node::kQ).count() > 1) {
    const int64_t qkv_n = (a_ + 2 * kv_) * d_;
    dg = matmul("qkv dgrad", L, pass, T_, h_, qkv_n, {x}, qkv_model_fraction());
    wg = matmul("qkv wgrad", L, pass, h_, qkv_n, T_, {x, rec[ln1_out]}, qkv_model_fraction(), 1, Operands::kWeightGrad);
  } else {
    matmul("q proj dgrad", L, pass, T_, h_, a_ * d_, {x});
    matmul("q proj wgrad", L, pass, h_, a_ * d_, T_, {x, rec[ln1_out]}, 1.0, 1, Operands::kWeightGrad);
    matmul("k proj dgrad", L, pass, T_, h_, kv_ * d_, {x}, kv_model_fraction());
    matmul("k proj wgrad", L, pass, h_, kv_ * d_, T_, {x}, kv_model_fraction(), 1, Operands::kWeightGrad);
    dg = matmul("v proj dgrad", L, pass, T_, h_, kv_ * d_, {x}, kv_model_fraction());
    wg = matmul("v proj wgrad", L, pass, h_, kv_ * d_, T_, {x}, kv_model_fraction(), 1, Operands::kWeightGrad);
  }
  x = column_parallel_grad("attn grad all-reduce", L, dg, wg);
  x = b_.add(norm_op("attn norm", L, pass), {x, wg, rec[Node::kIn]});
  wgrad = wg;
  const OpId last = residual(L, pass, {x});
  // The layer's kept (offloaded ones copied back) and recomputed tensors
  // are released with its backward.
  b_.memory(last, MemKind::kActivation, Bytes(0), Bytes(g.bytes(rp.kept)));
  b_.memory(last, MemKind::kRecomputed, Bytes(0), Bytes(g.bytes(rp.recomputed & rp.needed & ~rp.kept)));
  return last;
}

// Offloaded tensors cross the chip's host link (PCIe) on DMA engines beside
// compute: XLA's host offloading (MaxText's "offload" remat names) copies a
// layer's offloaded tensors to the host after its forward and prefetches
// them back for its backward (docs/model.md, section 1). Each direction is
// one stream, so the copies of a direction queue behind one another: a
// forward that offloads faster than the link carries, or a backward that
// needs them sooner, waits for the link.
void StageLowering::offload(int32_t L, OpId done) {
  const int64_t bytes = graph(L).bytes(recompute_plan(L).offloaded);
  if (bytes == 0) return;
  Op o = base("offload to host", L, Pass::kForward, TrainStreams::kHostD2H);
  o.compute = ComputeKind::kHostCopy;
  o.bytes_read = Bytes(bytes);
  const OpId copy = b_.add(o, {done});
  b_.memory(copy, MemKind::kActivation, Bytes(0), Bytes(bytes));  // off HBM once copied
  offloaded_[{mb_, L}] = copy;
}

void StageLowering::reload(int32_t L, OpId issue_after) {
  const auto it = offloaded_.find({mb_, L});
  if (it == offloaded_.end()) return;
  Op o = base("reload from host", L, Pass::kBackward, TrainStreams::kHostH2D);
  o.compute = ComputeKind::kHostCopy;
  o.bytes_written = Bytes(graph(L).bytes(recompute_plan(L).offloaded));
  const OpId copy = b_.add(o, {it->second, issue_after});
  b_.memory(copy, MemKind::kActivation, o.bytes_written, Bytes(0));  // on HBM again until the backward ends
  b_.gate_next(kC, copy);
  offloaded_.erase(it);
}

}  // namespace shardsim::detail
