// Lowering of one inference step (plan.phase prefill or decode) into the
// per-stage Programs of a serving replica. Each of the dp replicas runs the
// same program on its own batch; a replica is tp x pp (x ep for the experts)
// devices. Shapes follow Megatron-style tensor parallelism (column-parallel
// QKV and MLP-up, row-parallel attention-out and MLP-down, each followed by
// an all-reduce), as vLLM and TensorRT-LLM shard decoder layers.
//
// Prefill: the batch's prompts, T = batch·prompt_tokens tokens, causal
// attention over each prompt (flash attention: q, k, v read once, the output
// written), K and V written to the cache; logits for the last token of each
// prompt only (what sampling needs).
// Decode: one new token per sequence, T = batch; attention reads each
// sequence's whole KV cache, context_tokens + 1 positions of
// 2·kv_heads/tp·head_dim elements per layer at kv_dtype (GQA-aware: the
// cache holds the KV heads, not the query heads). Every weight of the
// replica's shard is read once per step at weight_dtype, so a small-batch
// decode is bound by (weight bytes + KV bytes) / HBM bandwidth.
// Multi-head latent attention (model.mla) caches each position's latent and
// rotary key, whole on every tp rank, and runs as vLLM's and SGLang's MLA
// backends do: prompt tokens bring their keys and values up from the
// latent (the up projection) and attend 2·(d + r + d_v) FLOPs a pair and
// head; decode tokens fold the key up projection into their queries (q_nope
// · W_UK per head, into the latent's width), attend over the cached latents
// as one shared key-value head (2·((kv_lora + r) + kv_lora) FLOPs a pair and
// head; FlashMLA) and fold the value up projection into the output (· W_UV
// per head). A chunked prompt attends its cached context at the expanded
// width; bringing that context up from the latent again is not charged.
// Mixture-of-experts layers read only the experts some token of the ep group
// is routed to: E_local·(1 - (1 - top_k/E)^(T·ep)) of them in expectation
// under uniform routing.
#include <algorithm>
#include <cmath>

#include "matmul_op.h"
#include "shardsim/workloads/lower.h"

namespace shardsim {
namespace {

constexpr StreamId kCompute = 0;
constexpr StreamId kTpStream = 1;
constexpr StreamId kSendStream = 2;
constexpr StreamId kRecvStream = 3;
constexpr StreamId kEpStream = 4;
constexpr int64_t kAct = 2;  // activations in bf16

class InferenceLowering {
 public:
  InferenceLowering(const Scenario& s, const IterationShape& shape, const ChunkLayout& layout, int64_t stage)
      : m_(s.model), p_(s.plan), shape_(shape), layout_(layout), stage_(stage) {
    // A verification step (speculative decoding) runs decode_tokens
    // positions of every decoding sequence and needs logits at each.
    T_ = std::max<int64_t>(1, shape_.prefill_tokens + shape_.decode_sequences * shape_.decode_tokens);
    logits_rows_ = shape_.prefill_completing + shape_.decode_sequences * shape_.decode_tokens;
    t_ = p_.tp;
    a_ = m_.heads / t_;
    kv_ = m_.kv_heads_per_rank(t_);
    d_ = m_.qk_head_dim();
    dv_ = m_.v_head_dim();
    h_ = m_.hidden;
    f_ = m_.ffn_hidden / t_;
    up_n_ = (m_.gated() ? 2 : 1) * f_;
    v_ = padded_vocab(m_, t_) / t_;
    wb_ = dtype_bytes(p_.weight_dtype);
    kvb_ = dtype_bytes(p_.kv_dtype);
    for (const char* name : {"compute", "tp comm", "pp send", "pp recv", "ep comm"}) b_.add_stream(name);
  }

  Program run() {
    OpId x = kNoOp;
    if (stage_ == 0) {
      x = mem(ComputeKind::kEmbedding, "embedding", -1, T_ * h_ * kAct, T_ * h_ * kAct, 0, {});
    } else {
      x = recv();
    }
    const auto g = static_cast<size_t>(stage_);
    for (int64_t l = 0; l < layout_.count[g]; ++l) x = layer(static_cast<int32_t>(layout_.first[g] + l), x);
    if (stage_ == p_.pp - 1) {
      const int64_t rows = std::max<int64_t>(1, logits_rows_);  // last positions only
      x = mem(ComputeKind::kNorm, "final norm", -1, rows * h_ * kAct, rows * h_ * kAct, 5.0 * rows * h_, {x});
      // The LM head stays in bf16 in quantized checkpoints (memory.cc).
      x = matmul("lm head", -1, rows, v_, h_, {x}, static_cast<double>(m_.vocab) / (v_ * t_), 1, -1, false);
      // The engines sample over the whole vocabulary: the tp ranks' shards
      // of the logits are gathered first (TensorRT-LLM's lm_head is a
      // ColumnLinear with gather_output; vLLM's LogitsProcessor gathers
      // them), and the sampler reads them in fp32.
      if (t_ > 1) x = all_gather("logits gather", -1, rows * v_ * t_ * kAct, x);
      x = mem(ComputeKind::kLoss, "sample", -1, rows * v_ * t_ * 4, rows * 8, 5.0 * rows * v_ * t_, {x});
    } else {
      send(x);
    }
    return std::move(b_).finish();
  }

 private:
  Op base(std::string_view name, int32_t layer, StreamId stream) {
    Op o;
    o.name = b_.intern(name);
    o.layer = layer;
    o.microbatch = 0;
    o.pass = Pass::kForward;
    o.stream = stream;
    o.graphed = p_.cuda_graphs;
    return o;
  }

  /// [m,k]·[k,n] with the weight [k,n] stored at weight_dtype.
  OpId matmul(std::string_view name, int32_t layer, int64_t m, int64_t n, int64_t k, std::initializer_list<OpId> deps,
              double model_fraction = 1.0, int64_t batch = 1, int64_t weight_matrices = -1, bool quantized = true) {
    Op o = detail::matmul_op(base(name, layer, kCompute), batch, m, n, k, quantized ? p_.matmul_dtype : DType::kBf16);
    o.model_flops = o.flops * model_fraction;
    const int64_t weights = (weight_matrices < 0 ? batch : weight_matrices) * k * n;
    o.bytes_read = Bytes(weights * (quantized ? wb_ : 2) + batch * m * k * kAct);
    o.bytes_written = Bytes(batch * m * n * kAct);
    return b_.add(o, deps);
  }

  OpId mem(ComputeKind kind, std::string_view name, int32_t layer, int64_t read, int64_t write, double flops,
           std::initializer_list<OpId> deps) {
    Op o = base(name, layer, kCompute);
    o.compute = kind;
    o.m = std::max<int64_t>(1, read / kAct);
    o.n = 1;
    o.k = 1;
    o.flops = Flops(flops);
    o.bytes_read = Bytes(read);
    o.bytes_written = Bytes(write);
    return b_.add(o, deps);
  }

  /// A collective of `bytes` (nccl-tests' size: an all-gather's gathered
  /// output) over one axis, on that axis's stream.
  OpId collective(CollectiveKind kind, MeshAxis axis, std::string_view name, int32_t layer, int64_t bytes, OpId dep) {
    Op o = base(name, layer, axis == MeshAxis::kEp ? kEpStream : kTpStream);
    o.kind = OpKind::kCollective;
    o.collective = kind;
    o.axes = axis_bit(axis);
    o.comm_bytes = Bytes(bytes);
    return b_.add(o, {dep});
  }
  OpId all_reduce(std::string_view name, int32_t layer, OpId dep) {
    if (t_ == 1) return dep;
    return collective(CollectiveKind::kAllReduce, MeshAxis::kTp, name, layer, T_ * h_ * kAct, dep);
  }
  OpId all_gather(std::string_view name, int32_t layer, int64_t bytes, OpId dep) {
    return collective(CollectiveKind::kAllGather, MeshAxis::kTp, name, layer, bytes, dep);
  }
  OpId all_to_all(std::string_view name, int32_t layer, int64_t bytes, OpId dep) {
    return collective(CollectiveKind::kAllToAll, MeshAxis::kEp, name, layer, bytes, dep);
  }

  void send(OpId dep) {
    Op o = base("pp send activation", -1, kSendStream);
    o.kind = OpKind::kSend;
    o.peer = 1;
    o.comm_bytes = Bytes(T_ * h_ * kAct);
    b_.add(o, {dep});
  }
  OpId recv() {
    Op o = base("pp recv activation", -1, kRecvStream);
    o.kind = OpKind::kRecv;
    o.peer = -1;
    o.comm_bytes = Bytes(T_ * h_ * kAct);
    return b_.add(o);
  }

  /// Prefill attention (flash: q, k, v read once, the output written) and
  /// decode attention (each sequence's whole cache read) of the iteration.
  OpId attention(int32_t L, OpId x) {
    // Per pair and head, QK^T over the query-key width and AV over the
    // value width; a cached position's elements (ModelSpec::kv_cache_values).
    // MLA's decode attends in the latent's width (above).
    const bool mla = m_.is_mla();
    const int64_t latent = m_.mla.kv_lora_rank;
    const double pair_width = static_cast<double>(a_ * (d_ + dv_));
    const double decode_width = mla ? static_cast<double>(a_ * (2 * latent + m_.mla.qk_rope_head_dim)) : pair_width;
    const int64_t decode_q = mla ? latent + m_.mla.qk_rope_head_dim : d_, decode_out = mla ? latent : dv_;
    const double kvw = static_cast<double>(m_.kv_cache_values(t_));
    if (shape_.prefill_tokens > 0) {
      Op o = base("prefill attention", L, kCompute);
      o.compute = ComputeKind::kAttention;
      o.dtype = DType::kBf16;
      // Causal: each prompt of s tokens has s(s+1)/2 query-key pairs, 2·(qk
      // + v widths) FLOPs each per head (QK^T and AV; 4·head_dim without
      // MLA); prefill_pairs sums them.
      o.flops = Flops(2.0 * pair_width * static_cast<double>(shape_.prefill_pairs));
      o.model_flops = o.flops;
      o.m = shape_.prefill_tokens;
      o.n = shape_.prefill_tokens;
      o.k = a_ * d_;
      o.bytes_read = Bytes(shape_.prefill_tokens * (a_ * d_ + kv_ * (d_ + dv_)) * kAct);
      o.bytes_written = Bytes(shape_.prefill_tokens * a_ * dv_ * kAct);
      x = b_.add(o, {x});
    }
    if (shape_.decode_sequences > 0) {
      Op o = base("decode attention", L, kCompute);
      o.compute = ComputeKind::kAttention;
      o.dtype = DType::kBf16;
      // Each new token attends to its sequence's cached positions and itself;
      // verifying t tokens, the j-th also to the j - 1 before it: per
      // sequence t·context + t(t+1)/2 query-key pairs, its cache read once.
      const int64_t t = shape_.decode_tokens;
      const double seqs = static_cast<double>(shape_.decode_sequences);
      const double pairs = static_cast<double>(t) * static_cast<double>(shape_.decode_context) +
                           seqs * static_cast<double>(t * (t + 1) / 2);
      const double positions = static_cast<double>(shape_.decode_context) + seqs * static_cast<double>(t);
      o.flops = Flops(2.0 * decode_width * pairs);
      o.model_flops = o.flops;
      o.m = t;
      o.n = std::max<int64_t>(1, static_cast<int64_t>(positions / seqs));
      o.k = a_ * decode_q;
      o.batch = shape_.decode_sequences;
      o.bytes_read =
          Bytes(static_cast<int64_t>(positions * kvw) * kvb_ + shape_.decode_sequences * t * a_ * decode_q * kAct);
      o.bytes_written = Bytes(shape_.decode_sequences * t * a_ * decode_out * kAct);
      x = b_.add(o, {x});
    }
    return x;
  }

  /// MLA's projections of the iteration's tokens (lower_inference.cc,
  /// top): the queries down, normed and up (or straight), the keys' and
  /// values' latent and rotary key down and normed (the down projections
  /// whole on every tp rank), the rotation and the latent appended to the
  /// cache; prompt tokens' keys and values up from the latent; decode
  /// tokens' key up projection folded into their queries.
  OpId mla_projections(int32_t L, OpId x) {
    const int64_t ql = m_.mla.q_lora_rank, latent = m_.mla.kv_lora_rank, rope = m_.mla.qk_rope_head_dim;
    const int64_t nope = m_.head_dim;
    const double duplicated = 1.0 / static_cast<double>(t_);
    OpId q = x;
    if (ql > 0) {
      q = matmul("q down", L, T_, ql, h_, {x}, duplicated);
      q = mem(ComputeKind::kNorm, "q latent norm", L, T_ * ql * kAct, T_ * ql * kAct, 5.0 * T_ * ql, {q});
      q = matmul("q up", L, T_, a_ * d_, ql, {q});
    } else {
      q = matmul("q proj", L, T_, a_ * d_, h_, {x});
    }
    OpId kv = matmul("kv down", L, T_, latent + rope, h_, {q}, duplicated);
    kv = mem(ComputeKind::kNorm, "kv latent norm", L, T_ * latent * kAct, T_ * latent * kAct, 5.0 * T_ * latent, {kv});
    x = mem(ComputeKind::kElementwise, "rope + latent append", L, T_ * (a_ * d_ + latent + rope) * kAct,
            T_ * a_ * d_ * kAct + T_ * (latent + rope) * kvb_, 6.0 * T_ * (a_ + 1) * rope, {kv});
    if (shape_.prefill_tokens > 0) {
      x = matmul("kv up", L, shape_.prefill_tokens, a_ * (nope + dv_), latent, {x});
    }
    const int64_t decode = shape_.decode_sequences * shape_.decode_tokens;
    if (decode > 0) x = matmul("q absorb", L, decode, latent, nope, {x}, 1.0, a_, a_);
    return x;
  }

  OpId layer(int32_t L, OpId x) {
    x = norm("attn norm", L, x, L > 0);
    if (m_.is_mla()) {
      x = mla_projections(L, x);
    } else {
      const double qkv_fraction =
          static_cast<double>(m_.heads + 2 * m_.kv_heads) / static_cast<double>(t_ * (a_ + 2 * kv_));
      x = matmul("qkv", L, T_, (a_ + 2 * kv_) * d_, h_, {x}, qkv_fraction);
      // RoPE on q and k, and the new K and V appended to the cache.
      x = mem(ComputeKind::kElementwise, "rope + kv append", L, T_ * (a_ + 2 * kv_) * d_ * kAct,
              T_ * a_ * d_ * kAct + T_ * 2 * kv_ * d_ * kvb_, 6.0 * T_ * (a_ + kv_) * d_, {x});
    }
    x = attention(L, x);
    // MLA's decode tokens bring their outputs from the latent's width to
    // each value head (the value up projection folded in).
    const int64_t decode = shape_.decode_sequences * shape_.decode_tokens;
    if (m_.is_mla() && decode > 0) x = matmul("v absorb", L, decode, dv_, m_.mla.kv_lora_rank, {x}, 1.0, a_, a_);
    x = matmul("attn out", L, T_, h_, a_ * dv_, {x});
    x = all_reduce("attn all-reduce", L, x);
    if (m_.post_norms) x = norm("attn post norm", L, x, false);
    x = norm("mlp norm", L, x, true);
    if (m_.is_moe_layer(L)) {
      x = moe(L, x);
    } else {
      x = matmul("mlp up", L, T_, up_n_, h_, {x});
      x = mem(ComputeKind::kElementwise, "mlp act", L, T_ * up_n_ * kAct, T_ * f_ * kAct, 4.0 * T_ * f_, {x});
      x = matmul("mlp down", L, T_, h_, f_, {x});
      x = all_reduce("mlp all-reduce", L, x);
    }
    return m_.post_norms ? norm("mlp post norm", L, x, false) : x;
  }

  /// A layer's norm over every token (the pre-norms, and the post-norms of
  /// ModelSpec::post_norms). A pre-norm after the model's first also adds
  /// the branch's output into the residual stream, in the same kernel
  /// (vLLM's and SGLang's fused_add_rms_norm: it reads the branch output
  /// and the residual and writes the new residual and its norm, four
  /// passes over the tokens' hidden states where a plain norm makes two;
  /// TensorRT-LLM's engine without reduce_fusion, trtllm-bench's build,
  /// runs the add and the norm as two kernels, five passes: under-charged
  /// by one).
  OpId norm(const char* name, int32_t L, OpId x, bool residual) {
    const int64_t passes = residual ? 2 : 1;
    return mem(ComputeKind::kNorm, name, L, passes * T_ * h_ * kAct, passes * T_ * h_ * kAct,
               (residual ? 6.0 : 5.0) * T_ * h_, {x});
  }

  /// Routed experts as one grouped matmul per projection over the local
  /// experts some token reaches; shared experts as a dense SwiGLU MLP split
  /// over tp like a dense one. Around the experts, the passes every MoE
  /// kernel makes, as in training (lower_moe.cc): the router's top-k, the
  /// permutation of each token's k copies into per-expert rows and the
  /// weighted un-permutation that sums them back (TensorRT-LLM's
  /// expandInputRows and finalizeMoeRouting kernels, vLLM's moe_align and
  /// moe_sum).
  OpId moe(int32_t L, OpId x) {
    const int64_t E = m_.moe.experts, k = m_.moe.top_k, fe = m_.moe.expert_ffn_hidden;
    const int64_t local = E / p_.ep;
    const int64_t slots = T_ * k;
    x = matmul("router", L, T_, E, h_, {x});
    x = mem(ComputeKind::kSoftmax, "router top-k", L, T_ * E * kAct, T_ * k * 8, 4.0 * static_cast<double>(T_ * E),
            {x});
    x = mem(ComputeKind::kElementwise, "moe permute", L, T_ * h_ * kAct, slots * h_ * kAct, 0, {x});
    // Tokens arriving at this device: its share of the ep group's routed
    // slots; experts touched: the expectation under uniform routing.
    const double group_slots = static_cast<double>(slots * p_.ep);
    const double touched_frac = 1.0 - std::pow(1.0 - 1.0 / static_cast<double>(E), group_slots);
    const auto touched = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(touched_frac * local)));
    OpId y = x;
    if (p_.ep > 1) y = all_to_all("moe dispatch", L, slots * h_ * kAct, y);
    const int64_t rows = std::max<int64_t>(1, (slots + touched - 1) / touched);  // tokens per touched expert
    const int64_t fe_t = fe / t_;  // experts split over tp like a dense MLP
    y = matmul("experts up", L, rows, 2 * fe_t, h_, {y}, 1.0, touched, touched);
    y = mem(ComputeKind::kElementwise, "experts act", L, slots * 2 * fe_t * kAct, slots * fe_t * kAct,
            4.0 * static_cast<double>(slots * fe_t), {y});
    y = matmul("experts down", L, rows, h_, fe_t, {y}, 1.0, touched, touched);
    if (p_.ep > 1) y = all_to_all("moe combine", L, slots * h_ * kAct, y);
    y = mem(ComputeKind::kElementwise, "moe unpermute", L, slots * h_ * kAct + T_ * k * 4, T_ * h_ * kAct,
            static_cast<double>(slots * h_), {y});
    if (m_.moe.shared_experts > 0) {
      const int64_t fs = m_.moe.shared_experts * fe / t_;
      y = matmul("shared up", L, T_, 2 * fs, h_, {y});
      y = matmul("shared down", L, T_, h_, fs, {y});
    }
    return all_reduce("moe all-reduce", L, y);
  }

  const ModelSpec& m_;
  const Plan& p_;
  const IterationShape& shape_;
  const ChunkLayout& layout_;
  int64_t stage_;
  int64_t logits_rows_ = 1, T_ = 1, t_ = 1, a_ = 1, kv_ = 1, d_ = 1, dv_ = 1, h_ = 1, f_ = 1, up_n_ = 1, v_ = 1;
  int64_t wb_ = 2, kvb_ = 2;
  ProgramBuilder b_;
};

}  // namespace

IterationShape plan_iteration(const Plan& p) {
  IterationShape it;
  if (p.phase == Phase::kPrefill) {
    it.prefill_tokens = p.microbatch_size * p.seq_len;
    it.prefill_pairs = p.microbatch_size * p.seq_len * (p.seq_len + 1) / 2;
    it.prefill_completing = p.microbatch_size;
  } else {
    it.decode_sequences = p.microbatch_size;
    it.decode_context = p.microbatch_size * p.seq_len;
  }
  return it;
}

ProgramSet lower_iteration(const Scenario& s, const IterationShape& shape) {
  const ChunkLayout layout = chunk_layout(s.model, s.plan);
  ProgramSet set;
  for (int64_t stage = 0; stage < s.plan.pp; ++stage) {
    set.stages.push_back(InferenceLowering(s, shape, layout, stage).run());
  }
  return set;
}

ProgramSet lower_inference_step(const Scenario& s) {
  return lower_iteration(s, plan_iteration(s.plan));
}

ProgramSet lower_step(const Scenario& s) {
  return s.plan.inference() ? lower_inference_step(s) : lower_training_step(s);
}

}  // namespace shardsim
