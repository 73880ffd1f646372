// Lowering of a training step (see lower.h). Shapes follow Megatron-LM's
// tensor parallelism (Shoeybi et al. 2019; Korthikanti et al. 2022 for the
// sequence-parallel variant): QKV and MLP-up are column-parallel, attention
// output and MLP-down are row-parallel; the row-parallel outputs are
// all-reduced (or reduce-scattered with sequence parallelism, whose inputs
// are then all-gathered). Backward mirrors each collective: an all-reduce in
// forward is an identity backward and vice versa; all-gather <-> reduce-scatter.
//
// Every op's FLOPs are 2·M·N·K for a matmul (Narayanan et al. 2021) and the
// causal flash-attention count for attention; HBM bytes are what the kernel
// must read and write at its dtype, with attention fused (no s² tensor in HBM).
#include <algorithm>
#include <vector>

#include "shardsim/core/error.h"
#include "shardsim/workloads/lower.h"

namespace shardsim {
namespace {

constexpr StreamId kC = TrainStreams::kCompute;
constexpr StreamId kTpS = TrainStreams::kTp;
constexpr StreamId kGather = TrainStreams::kDpGather;
constexpr StreamId kReduce = TrainStreams::kDpReduce;
constexpr uint8_t kTpAxis = axis_bit(MeshAxis::kTp);
constexpr uint8_t kDpAxis = axis_bit(MeshAxis::kDp);
constexpr int64_t kAct = 2;  // activation bytes (bf16)

class TrainLowering {
 public:
  explicit TrainLowering(const Scenario& sc) : m_(sc.model), p_(sc.plan) {
    t_ = p_.tp;
    T_ = p_.microbatch_size * p_.seq_len;
    Ts_ = p_.sequence_parallel ? T_ / t_ : T_;
    a_ = m_.heads / t_;
    kv_ = m_.kv_heads >= t_ ? m_.kv_heads / t_ : 1;
    d_ = m_.head_dim;
    h_ = m_.hidden;
    f_ = m_.ffn_hidden / t_;
    up_n_ = (m_.mlp == MlpKind::kSwiglu ? 2 : 1) * f_;
    v_ = padded_vocab(m_, t_) / t_;
    vocab_model_ = static_cast<double>(m_.vocab) / static_cast<double>(padded_vocab(m_, t_));
    w_ = dtype_bytes(p_.matmul_dtype);
    const ParamCount pc = count_params(m_);
    layer_params_ = h_ * a_ * d_ + 2 * h_ * kv_ * d_ + a_ * d_ * h_ + (up_n_ + f_) * h_ + pc.per_layer_other;
    const int64_t vocab_rows = v_ * h_;  // this rank's padded slice
    embed_params_ =
        (m_.tied_embeddings ? 0 : vocab_rows) + (m_.position == PositionKind::kLearned ? p_.seq_len * h_ : 0);
    head_params_ = vocab_rows + pc.final_norm;
    b_.add_stream("compute");
    b_.add_stream("tp comm");
    b_.add_stream("dp gather");
    b_.add_stream("dp reduce");
  }

  Program run() {
    const int64_t mbs = p_.microbatches();
    const bool fsdp = p_.zero == 3 && p_.dp > 1;
    for (int64_t mb = 0; mb < mbs; ++mb) {
      mb_ = static_cast<int32_t>(mb);
      last_mb_ = mb == mbs - 1;
      backward(fsdp, forward(fsdp));
    }
    optimizer();
    return std::move(b_).finish();
  }

 private:
  // ---- op helpers --------------------------------------------------------
  Op base(std::string_view name, int32_t layer, Pass pass, StreamId stream) {
    Op o;
    o.name = b_.intern(name);
    o.layer = layer;
    o.microbatch = pass == Pass::kOptimizer ? -1 : mb_;
    o.pass = pass;
    o.stream = stream;
    return o;
  }

  /// [m,k]·[k,n]; model_n is the part of n that is model work (the rest are
  /// replicated KV heads when tp exceeds kv_heads).
  OpId matmul(std::string_view name, int32_t layer, Pass pass, int64_t m, int64_t n, int64_t k,
              std::initializer_list<OpId> deps, double model_fraction = 1.0) {
    Op o = base(name, layer, pass, kC);
    o.kind = OpKind::kCompute;
    o.compute = ComputeKind::kMatmul;
    o.dtype = p_.matmul_dtype;
    o.m = m;
    o.n = n;
    o.k = k;
    o.flops = Flops(2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k));
    o.model_flops = o.flops * model_fraction;
    o.bytes_read = Bytes((m * k + k * n) * w_);
    o.bytes_written = Bytes(m * n * kAct);
    return b_.add(o, deps);
  }

  OpId memop(ComputeKind kind, std::string_view name, int32_t layer, Pass pass, int64_t elems, int64_t read_b,
             int64_t write_b, double flops_per_elem, std::initializer_list<OpId> deps) {
    Op o = base(name, layer, pass, kC);
    o.kind = OpKind::kCompute;
    o.compute = kind;
    o.m = elems;
    o.n = 1;
    o.k = 1;
    o.flops = Flops(flops_per_elem * static_cast<double>(elems));
    o.bytes_read = Bytes(read_b);
    o.bytes_written = Bytes(write_b);
    return b_.add(o, deps);
  }

  /// Causal fused attention over microbatch_size sequences of s tokens, with
  /// a_ local query heads and kv_ local KV heads of head_dim d_.
  OpId attention(int32_t layer, Pass pass, std::initializer_list<OpId> deps) {
    Op o = base("attention", layer, pass, kC);
    o.kind = OpKind::kCompute;
    o.compute = ComputeKind::kAttention;
    o.batch = p_.microbatch_size;
    o.m = p_.seq_len;
    o.n = p_.seq_len;
    o.k = a_ * d_;
    const double s = static_cast<double>(p_.seq_len);
    const double fwd = 2.0 * static_cast<double>(p_.microbatch_size) * static_cast<double>(a_ * d_) * s * (s + 1.0);
    o.flops = Flops(pass == Pass::kForward ? fwd : 2.0 * fwd);
    o.model_flops = o.flops;
    const int64_t qkv = T_ * (a_ + 2 * kv_) * d_ * kAct;
    const int64_t out = T_ * a_ * d_ * kAct;
    const int64_t lse = T_ * a_ * 4;
    if (pass == Pass::kForward) {
      o.bytes_read = Bytes(qkv);
      o.bytes_written = Bytes(out + lse);
    } else {
      o.bytes_read = Bytes(qkv + 2 * out + lse);  // q, k, v, o, dO, lse
      o.bytes_written = Bytes(qkv);               // dq, dk, dv
    }
    return b_.add(o, deps);
  }

  OpId collective(CollectiveKind kind, uint8_t axes, StreamId stream, std::string_view name, int32_t layer, Pass pass,
                  int64_t bytes, DType dtype, std::span<const OpId> deps) {
    Op o = base(name, layer, pass, stream);
    o.kind = OpKind::kCollective;
    o.collective = kind;
    o.axes = axes;
    o.dtype = dtype;
    o.comm_bytes = Bytes(bytes);
    return b_.add(o, deps);
  }
  OpId tp_coll(CollectiveKind kind, std::string_view name, int32_t layer, Pass pass, int64_t bytes, OpId dep) {
    const OpId d[] = {dep};
    return collective(kind, kTpAxis, kTpS, name, layer, pass, bytes, DType::kBf16, d);
  }

  /// Forward boundary collective after a row-parallel matmul: all-reduce, or
  /// reduce-scatter under sequence parallelism. Returns the op to depend on.
  OpId row_parallel_out(std::string_view name, int32_t layer, Pass pass, OpId prev) {
    if (t_ == 1) return prev;
    return tp_coll(p_.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, name, layer,
                   pass, T_ * h_ * kAct, prev);
  }
  /// Before a column-parallel matmul: all-gather under sequence parallelism.
  OpId column_parallel_in(std::string_view name, int32_t layer, Pass pass, OpId prev) {
    if (t_ == 1 || !p_.sequence_parallel) return prev;
    return tp_coll(CollectiveKind::kAllGather, name, layer, pass, T_ * h_ * kAct, prev);
  }

  /// Share of the QKV projection that is model work: when tp exceeds
  /// kv_heads each rank computes a whole (replicated) KV head.
  double qkv_model_fraction() const {
    const double model =
        static_cast<double>(a_ * d_) + 2.0 * static_cast<double>(m_.kv_heads * d_) / static_cast<double>(t_);
    return model / static_cast<double>((a_ + 2 * kv_) * d_);
  }

  // ---- FSDP parameter gathers ---------------------------------------------
  // Units in forward order: 0 embedding, 1..L layers, L+1 head.
  int64_t unit_params(int64_t u) const {
    if (u == 0) return embed_params_;
    if (u == m_.layers + 1) return head_params_;
    return layer_params_;
  }
  int64_t num_units() const { return m_.layers + 2; }

  /// All-gathers the parameters of unit u before its compute. `free_dep` is
  /// the op after which the buffer this gather fills is free (prefetch one
  /// unit ahead: the unit two back; otherwise the unit just before).
  OpId fsdp_gather(int64_t u, Pass pass, const std::vector<OpId>& unit_end, int64_t ahead_of) {
    std::vector<OpId> deps;
    if (ahead_of >= 0 && unit_end[static_cast<size_t>(ahead_of)] != kNone) {
      deps.push_back(unit_end[static_cast<size_t>(ahead_of)]);
    }
    return collective(CollectiveKind::kAllGather, kDpAxis, kGather, "fsdp all-gather", unit_layer(u), pass,
                      unit_params(u) * kAct, DType::kBf16, deps);
  }
  int32_t unit_layer(int64_t u) const { return (u >= 1 && u <= m_.layers) ? static_cast<int32_t>(u - 1) : -1; }

  // ---- forward -------------------------------------------------------------
  OpId forward(bool fsdp) {
    const auto units = static_cast<size_t>(num_units());
    std::vector<OpId> unit_end(units, kNone);
    std::vector<OpId> gathered(units, kNone);
    const int64_t back = p_.fsdp_prefetch ? 2 : 1;
    auto gather = [&](int64_t u) {
      if (!fsdp || unit_params(u) == 0) return;
      gathered[static_cast<size_t>(u)] = fsdp_gather(u, Pass::kForward, unit_end, u - back);
    };
    auto after_gather = [&](int64_t u, OpId cur) -> std::vector<OpId> {
      std::vector<OpId> d;
      if (cur != kNone) d.push_back(cur);
      if (gathered[static_cast<size_t>(u)] != kNone) d.push_back(gathered[static_cast<size_t>(u)]);
      return d;
    };

    // Embedding (vocab-parallel lookup; the partial rows are all-reduced).
    gather(0);
    if (p_.fsdp_prefetch) gather(1);
    OpId cur = kNone;
    {
      auto d = after_gather(0, b_.has_last(kC) ? b_.last(kC) : kNone);
      Op o = base("embedding", -1, Pass::kForward, kC);
      o.kind = OpKind::kCompute;
      o.compute = ComputeKind::kEmbedding;
      o.m = T_;
      o.n = h_;
      o.k = 1;
      o.bytes_read = Bytes(T_ * h_ * kAct + T_ * 4);
      o.bytes_written = Bytes(T_ * h_ * kAct);
      cur = b_.add(o, d);
      if (m_.position == PositionKind::kLearned) {
        cur = memop(ComputeKind::kElementwise, "position add", -1, Pass::kForward, T_ * h_, 2 * T_ * h_ * kAct,
                    T_ * h_ * kAct, 1, {cur});
      }
      cur = row_parallel_out("embedding all-reduce", -1, Pass::kForward, cur);
      unit_end[0] = cur;
    }
    for (int64_t l = 0; l < m_.layers; ++l) {
      const int64_t u = l + 1;
      if (p_.fsdp_prefetch) {
        gather(u + 1);
      } else {
        gather(u);
      }
      auto d = after_gather(u, cur);
      const auto L = static_cast<int32_t>(l);
      const int64_t norm_b = Ts_ * h_ * kAct;
      OpId x = b_.add(norm_op("attn norm", L, Pass::kForward), d);
      x = column_parallel_in("attn all-gather", L, Pass::kForward, x);
      x = matmul("qkv", L, Pass::kForward, T_, (a_ + 2 * kv_) * d_, h_, {x}, qkv_model_fraction());
      if (m_.position == PositionKind::kRope) {
        const int64_t e = T_ * (a_ + kv_) * d_;
        x = memop(ComputeKind::kElementwise, "rope", L, Pass::kForward, e, e * kAct, e * kAct, 6, {x});
      }
      x = attention(L, Pass::kForward, {x});
      x = matmul("attn out", L, Pass::kForward, T_, h_, a_ * d_, {x});
      x = row_parallel_out("attn all-reduce", L, Pass::kForward, x);
      x = memop(ComputeKind::kElementwise, "residual", L, Pass::kForward, Ts_ * h_, 2 * norm_b, norm_b, 1, {x});
      x = b_.add(norm_op("mlp norm", L, Pass::kForward), {x});
      x = column_parallel_in("mlp all-gather", L, Pass::kForward, x);
      x = matmul("mlp up", L, Pass::kForward, T_, up_n_, h_, {x});
      x = act_op(L, Pass::kForward, x);
      x = matmul("mlp down", L, Pass::kForward, T_, h_, f_, {x});
      x = row_parallel_out("mlp all-reduce", L, Pass::kForward, x);
      x = memop(ComputeKind::kElementwise, "residual", L, Pass::kForward, Ts_ * h_, 2 * norm_b, norm_b, 1, {x});
      unit_end[static_cast<size_t>(u)] = cur = x;
    }
    // Head: final norm, vocab-parallel unembedding and cross-entropy.
    const int64_t hu = num_units() - 1;
    if (!p_.fsdp_prefetch) gather(hu);
    auto d = after_gather(hu, cur);
    OpId x = b_.add(norm_op("final norm", -1, Pass::kForward), d);
    x = column_parallel_in("head all-gather", -1, Pass::kForward, x);
    x = matmul("unembedding", -1, Pass::kForward, T_, v_, h_, {x}, vocab_model_);
    const int64_t logits = T_ * v_ * kAct;
    x = memop(ComputeKind::kLoss, "cross-entropy", -1, Pass::kForward, T_ * v_, logits, T_ * 4, 4, {x});
    if (t_ > 1) x = tp_coll(CollectiveKind::kAllReduce, "loss all-reduce", -1, Pass::kForward, T_ * 8, x);
    unit_end[static_cast<size_t>(hu)] = x;
    return x;
  }

  Op norm_op(std::string_view name, int32_t layer, Pass pass) {
    Op o = base(name, layer, pass, kC);
    o.kind = OpKind::kCompute;
    o.compute = ComputeKind::kNorm;
    o.m = Ts_;
    o.n = h_;
    o.k = 1;
    const int64_t b = Ts_ * h_ * kAct;
    o.flops = Flops(5.0 * static_cast<double>(Ts_ * h_));
    o.bytes_read = Bytes(pass == Pass::kForward ? b : 2 * b);
    o.bytes_written = Bytes(b);
    return o;
  }

  OpId act_op(int32_t layer, Pass pass, OpId dep) {
    const int64_t e = T_ * f_;
    const bool swiglu = m_.mlp == MlpKind::kSwiglu;
    const std::string_view name = swiglu ? "swiglu" : "gelu";
    if (pass == Pass::kForward) {
      return memop(ComputeKind::kElementwise, name, layer, pass, e, (swiglu ? 2 : 1) * e * kAct, e * kAct, 8, {dep});
    }
    return memop(ComputeKind::kElementwise, name, layer, pass, e, (swiglu ? 3 : 2) * e * kAct,
                 (swiglu ? 2 : 1) * e * kAct, 12, {dep});
  }

  // ---- backward ------------------------------------------------------------
  /// Backward of a column-parallel forward input: all-reduce of the input
  /// gradient (reduce-scatter with sequence parallelism). It depends on the
  /// activation-gradient matmul only, so it overlaps the weight gradient.
  OpId column_parallel_grad(std::string_view name, int32_t layer, OpId dgrad) {
    if (t_ == 1) return dgrad;
    return tp_coll(p_.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, name, layer,
                   Pass::kBackward, T_ * h_ * kAct, dgrad);
  }
  OpId row_parallel_grad(std::string_view name, int32_t layer, OpId prev) {
    if (t_ == 1 || !p_.sequence_parallel) return prev;
    return tp_coll(CollectiveKind::kAllGather, name, layer, Pass::kBackward, T_ * h_ * kAct, prev);
  }

  void backward(bool fsdp, OpId cur) {
    const auto units = static_cast<size_t>(num_units());
    std::vector<OpId> unit_end(units, kNone);  // end of each unit's backward
    std::vector<OpId> gathered(units, kNone);
    std::vector<OpId> last_wgrad(units, kNone);
    const int64_t hu = num_units() - 1;
    auto gather = [&](int64_t u) {
      // The embedding's backward (a scatter-add) needs no weights.
      if (!fsdp || u <= 0 || u > hu || unit_params(u) == 0) return;
      // Backward runs units in reverse; the buffer is free after unit u+2
      // (prefetch) or u+1 finished its backward.
      const int64_t free_after = u + (p_.fsdp_prefetch ? 2 : 1);
      gathered[static_cast<size_t>(u)] = fsdp_gather(u, Pass::kBackward, unit_end, free_after <= hu ? free_after : -1);
    };

    // Head.
    gather(hu);
    if (p_.fsdp_prefetch) gather(hu - 1);
    {
      const int64_t logits = T_ * v_ * kAct;
      Op lg;
      lg = base("cross-entropy", -1, Pass::kBackward, kC);
      lg.kind = OpKind::kCompute;
      lg.compute = ComputeKind::kLoss;
      lg.m = T_ * v_;
      lg.n = lg.k = 1;
      lg.flops = Flops(4.0 * static_cast<double>(T_ * v_));
      lg.bytes_read = Bytes(logits);
      lg.bytes_written = Bytes(logits);
      OpId x = b_.add(lg, {cur, gathered[static_cast<size_t>(hu)]});
      const OpId dg = matmul("unembedding dgrad", -1, Pass::kBackward, T_, h_, v_, {x}, vocab_model_);
      last_wgrad[static_cast<size_t>(hu)] =
          matmul("unembedding wgrad", -1, Pass::kBackward, h_, v_, T_, {x}, vocab_model_);
      x = column_parallel_grad("head grad all-reduce", -1, dg);
      x = b_.add(norm_op("final norm", -1, Pass::kBackward), {x, last_wgrad[static_cast<size_t>(hu)]});
      unit_end[static_cast<size_t>(hu)] = cur = x;
      reduce_unit(fsdp, hu, last_wgrad);
    }
    for (int64_t l = m_.layers - 1; l >= 0; --l) {
      const int64_t u = l + 1;
      gather(p_.fsdp_prefetch ? u - 1 : u);
      const auto L = static_cast<int32_t>(l);
      const int64_t norm_b = Ts_ * h_ * kAct;
      const OpId weights = gathered[static_cast<size_t>(u)];
      // MLP block.
      OpId x = row_parallel_grad("mlp grad all-gather", L, cur);
      OpId dg = matmul("mlp down dgrad", L, Pass::kBackward, T_, f_, h_, {x, weights});
      matmul("mlp down wgrad", L, Pass::kBackward, f_, h_, T_, {x});
      x = act_op(L, Pass::kBackward, dg);
      dg = matmul("mlp up dgrad", L, Pass::kBackward, T_, h_, up_n_, {x});
      OpId wg = matmul("mlp up wgrad", L, Pass::kBackward, h_, up_n_, T_, {x});
      x = column_parallel_grad("mlp grad all-reduce", L, dg);
      x = b_.add(norm_op("mlp norm", L, Pass::kBackward), {x, wg});
      x = memop(ComputeKind::kElementwise, "residual", L, Pass::kBackward, Ts_ * h_, 2 * norm_b, norm_b, 1, {x});
      // Attention block.
      x = row_parallel_grad("attn grad all-gather", L, x);
      dg = matmul("attn out dgrad", L, Pass::kBackward, T_, a_ * d_, h_, {x});
      matmul("attn out wgrad", L, Pass::kBackward, a_ * d_, h_, T_, {x});
      x = attention(L, Pass::kBackward, {dg});
      if (m_.position == PositionKind::kRope) {
        const int64_t e = T_ * (a_ + kv_) * d_;
        x = memop(ComputeKind::kElementwise, "rope", L, Pass::kBackward, e, e * kAct, e * kAct, 6, {x});
      }
      const double kv_model = qkv_model_fraction();
      const int64_t qkv_n = (a_ + 2 * kv_) * d_;
      dg = matmul("qkv dgrad", L, Pass::kBackward, T_, h_, qkv_n, {x}, kv_model);
      wg = matmul("qkv wgrad", L, Pass::kBackward, h_, qkv_n, T_, {x}, kv_model);
      x = column_parallel_grad("attn grad all-reduce", L, dg);
      x = b_.add(norm_op("attn norm", L, Pass::kBackward), {x, wg});
      x = memop(ComputeKind::kElementwise, "residual", L, Pass::kBackward, Ts_ * h_, 2 * norm_b, norm_b, 1, {x});
      last_wgrad[static_cast<size_t>(u)] = wg;
      unit_end[static_cast<size_t>(u)] = cur = x;
      reduce_unit(fsdp, u, last_wgrad);
    }
    // Embedding: scatter-add of the row gradients.
    OpId x = row_parallel_grad("embedding grad all-gather", -1, cur);
    x = memop(ComputeKind::kEmbedding, "embedding grad", -1, Pass::kBackward, T_ * h_, T_ * h_ * kAct + T_ * 4,
              T_ * h_ * 4, 1, {x});
    last_wgrad[0] = x;
    unit_end[0] = x;
    reduce_unit(fsdp, 0, last_wgrad);
    flush_bucket();
  }

  /// Gradient reduction for unit u once its weight gradients exist: FSDP
  /// reduce-scatters every microbatch; DDP all-reduces buckets in the last
  /// microbatch only (no_sync before), filled in backward order.
  void reduce_unit(bool fsdp, int64_t u, const std::vector<OpId>& last_wgrad) {
    if (p_.dp == 1) return;
    const int64_t grad_bytes = unit_params(u) * dtype_bytes(p_.grad_reduce_dtype);
    if (grad_bytes == 0) return;
    const OpId dep[] = {last_wgrad[static_cast<size_t>(u)]};
    if (fsdp) {
      collective(CollectiveKind::kReduceScatter, kDpAxis, kReduce, "fsdp reduce-scatter", unit_layer(u),
                 Pass::kBackward, grad_bytes, p_.grad_reduce_dtype, dep);
      return;
    }
    if (!last_mb_) return;
    bucket_bytes_ += grad_bytes;
    bucket_dep_ = dep[0];
    if (bucket_bytes_ >= p_.grad_bucket_bytes) flush_bucket();
  }
  void flush_bucket() {
    if (bucket_bytes_ == 0) return;
    const OpId dep[] = {bucket_dep_};
    collective(CollectiveKind::kAllReduce, kDpAxis, kReduce, "grad all-reduce", -1, Pass::kBackward, bucket_bytes_,
               p_.grad_reduce_dtype, dep);
    bucket_bytes_ = 0;
  }

  // ---- optimizer -------------------------------------------------------------
  /// Adam with fp32 master weights, first and second moments: per parameter it
  /// reads the gradient and the three fp32 states and writes the states and
  /// the bf16 weight.
  void optimizer() {
    int64_t params = embed_params_ + m_.layers * layer_params_ + head_params_;
    if (p_.zero >= 1) params = (params + p_.dp - 1) / p_.dp;
    std::vector<OpId> deps{b_.last(kC)};
    if (b_.has_last(kReduce)) deps.push_back(b_.last(kReduce));
    Op o = base("adam", -1, Pass::kOptimizer, kC);
    o.kind = OpKind::kCompute;
    o.compute = ComputeKind::kOptimizer;
    o.dtype = DType::kFp32;
    o.m = params;
    o.n = o.k = 1;
    o.flops = Flops(12.0 * static_cast<double>(params));
    o.bytes_read = Bytes(params * (dtype_bytes(p_.grad_reduce_dtype) + 12));
    o.bytes_written = Bytes(params * (12 + 2));
    b_.add(o, deps);
  }

  static constexpr OpId kNone = kNoOp;
  const ModelSpec& m_;
  const Plan& p_;
  ProgramBuilder b_;
  int64_t t_, T_, Ts_, a_, kv_, d_, h_, f_, up_n_, v_, w_;
  int64_t layer_params_ = 0, embed_params_ = 0, head_params_ = 0;
  double vocab_model_ = 1.0;  // model share of the padded vocabulary
  int32_t mb_ = 0;
  bool last_mb_ = false;
  int64_t bucket_bytes_ = 0;
  OpId bucket_dep_ = 0;
};

}  // namespace

Program lower_training_step(const Scenario& s) {
  return TrainLowering(s).run();
}

}  // namespace shardsim
