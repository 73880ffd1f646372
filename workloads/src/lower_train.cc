// Lowering of a training step (see lower.h). Shapes follow Megatron-LM's
// tensor parallelism (Shoeybi et al. 2019; Korthikanti et al. 2022 for the
// sequence-parallel variant): QKV and MLP-up are column-parallel, attention
// output and MLP-down are row-parallel; the row-parallel outputs are
// all-reduced (or reduce-scattered with sequence parallelism, whose inputs
// are then all-gathered). Backward mirrors each collective: an all-reduce in
// forward is an identity backward and vice versa; all-gather <-> reduce-scatter.
//
// Every op's FLOPs are 2·M·N·K for a matmul (Narayanan et al. 2021) and the
// causal attention count for attention; HBM bytes are what the kernel must
// read and write at its dtype.
#include <algorithm>
#include <cmath>
#include <utility>
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
// Parameters are replicated over dp and cp: gradients reduce (and FSDP
// shards) over both (Megatron-LM's context parallelism folds cp into dp).
constexpr uint8_t kDpAxis =
    axis_bit(MeshAxis::kDp) | axis_bit(MeshAxis::kCp) | axis_bit(MeshAxis::kEp) | axis_bit(MeshAxis::kDs);
// Hybrid FSDP shards over its group (ds, and cp) and replicates over dp.
constexpr uint8_t kShardGroupAxis = axis_bit(MeshAxis::kDs) | axis_bit(MeshAxis::kCp);
constexpr uint8_t kReplicaAxis = axis_bit(MeshAxis::kDp);
// Experts are replicated only over the data-parallel ranks outside ep.
constexpr uint8_t kExpertDpAxis = axis_bit(MeshAxis::kDp) | axis_bit(MeshAxis::kCp);
constexpr uint8_t kEpAxis = axis_bit(MeshAxis::kEp);
constexpr StreamId kEpS = TrainStreams::kEp;
constexpr int64_t kAct = 2;  // activation bytes (bf16)
constexpr OpId kNone = kNoOp;

/// Builds the Program of one pipeline stage.
class StageLowering {
 public:
  StageLowering(const Scenario& sc, const ChunkLayout& layout, int64_t stage)
      : m_(sc.model), p_(sc.plan), layout_(layout), stage_(stage) {
    t_ = p_.tp;
    cp_ = p_.cp;
    T_ = p_.microbatch_size * p_.seq_len / cp_;  // tokens of this device's sequence shard
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
    const int64_t attention = h_ * a_ * d_ + 2 * h_ * kv_ * d_ + a_ * d_ * h_;
    layer_params_ = attention + (up_n_ + f_) * h_ + pc.per_layer_other;
    if (m_.is_moe()) {
      // Experts are not split over tp (each tp rank routes its own
      // sequence-parallel tokens); the router and shared experts are
      // replicated over tp.
      local_experts_ = m_.moe.experts / p_.ep;
      moe_dense_params_ = attention + pc.per_layer_other + pc.router + pc.shared_experts * pc.expert;
      moe_expert_params_ = local_experts_ * pc.expert;
    }
    const int64_t vocab_rows = v_ * h_;  // this rank's padded slice
    embed_params_ =
        (m_.tied_embeddings ? 0 : vocab_rows) + (m_.position == PositionKind::kLearned ? p_.seq_len * h_ : 0);
    head_params_ = vocab_rows + pc.final_norm;
    chunks_ = p_.chunks();
    v_chunks_ = p_.virtual_stages;
    shards_ = p_.dp * p_.cp;
    expert_shards_ = shards_ / p_.ep;
    const int64_t group = p_.fsdp_shard_size > 0 ? p_.fsdp_shard_size : p_.dp;
    replicas_ = p_.dp / group;
    fsdp_axes_ = replicas_ > 1 ? kShardGroupAxis : kDpAxis;
    fsdp_shards_ = group * p_.cp;
    fsdp_ = p_.zero == 3 && shards_ > 1;
    for (const char* s : {"compute", "tp comm", "dp gather", "dp reduce", "pp send next", "pp send prev", "pp recv",
                          "cp send", "cp recv", "ep comm"}) {
      b_.add_stream(s);
    }
    const auto nloc = static_cast<size_t>(v_chunks_);
    const auto mbs = static_cast<size_t>(p_.microbatches());
    fwd_end_.assign(nloc, std::vector<OpId>(mbs, kNone));
  }

  Program run() {
    const int64_t mbs = p_.microbatches();
    const PipelineSchedule sched = p_.pp == 1 ? PipelineSchedule::kOneFOneB : p_.schedule;
    for (const PipelineStep& st : pipeline_steps(sched, p_.pp, stage_, mbs, v_chunks_)) {
      mb_ = st.microbatch;
      if (st.forward) {
        forward(st.chunk);
      } else {
        backward(st.chunk, st.microbatch == mbs - 1);
      }
    }
    optimizer();
    return std::move(b_).finish();
  }

 private:
  // ---- chunk structure -------------------------------------------------------
  int64_t global_chunk(int32_t local) const { return static_cast<int64_t>(local) * p_.pp + stage_; }
  bool first_chunk(int32_t local) const { return global_chunk(local) == 0; }
  bool last_chunk(int32_t local) const { return global_chunk(local) == chunks_ - 1; }
  /// FSDP units of a chunk in forward order: -1 embedding, layers, -2 head.
  std::vector<int64_t> units(int32_t local) const {
    std::vector<int64_t> u;
    const auto g = static_cast<size_t>(global_chunk(local));
    if (first_chunk(local)) u.push_back(kEmbedUnit);
    for (int64_t l = 0; l < layout_.count[g]; ++l) u.push_back(layout_.first[g] + l);
    if (last_chunk(local)) u.push_back(kHeadUnit);
    return u;
  }
  /// Parameters of a unit replicated over every data-parallel rank.
  int64_t unit_params(int64_t u) const {
    if (u == kEmbedUnit) return embed_params_;
    if (u == kHeadUnit) return head_params_;
    return m_.is_moe_layer(u) ? moe_dense_params_ : layer_params_;
  }
  /// Expert parameters of a unit on this device (replicated over dp / ep).
  int64_t unit_expert_params(int64_t u) const { return u >= 0 && m_.is_moe_layer(u) ? moe_expert_params_ : 0; }
  static int32_t unit_layer(int64_t u) { return u >= 0 ? static_cast<int32_t>(u) : -1; }

  // ---- op helpers --------------------------------------------------------------
  Op base(std::string_view name, int32_t layer, Pass pass, StreamId stream) {
    Op o;
    o.name = b_.intern(name);
    o.layer = layer;
    o.microbatch = pass == Pass::kOptimizer ? -1 : mb_;
    o.pass = pass;
    o.stream = stream;
    return o;
  }
  /// Recomputed forward ops are executed, not model, work.
  double model_share(Pass pass, double share) const { return pass == Pass::kRecompute ? 0.0 : share; }

  /// `batch` products [m,k]·[k,n]; `model_fraction` is the part of the work
  /// that is model work (the rest: replicated KV heads, vocabulary padding,
  /// masked attention scores, expert capacity padding).
  OpId matmul(std::string_view name, int32_t layer, Pass pass, int64_t m, int64_t n, int64_t k,
              std::initializer_list<OpId> deps, double model_fraction = 1.0, int64_t batch = 1) {
    Op o = base(name, layer, pass, kC);
    o.compute = ComputeKind::kMatmul;
    o.dtype = p_.matmul_dtype;
    o.batch = batch;
    o.m = m;
    o.n = n;
    o.k = k;
    o.flops = Flops(2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) *
                    static_cast<double>(k));
    o.model_flops = o.flops * model_share(pass, model_fraction);
    o.bytes_read = Bytes(batch * (m * k + k * n) * w_);
    o.bytes_written = Bytes(batch * m * n * kAct);
    return b_.add(o, deps);
  }

  OpId memop(ComputeKind kind, std::string_view name, int32_t layer, Pass pass, int64_t elems, int64_t read_b,
             int64_t write_b, double flops_per_elem, std::initializer_list<OpId> deps) {
    Op o = base(name, layer, pass, kC);
    o.compute = kind;
    o.m = elems;
    o.n = 1;
    o.k = 1;
    o.flops = Flops(flops_per_elem * static_cast<double>(elems));
    o.bytes_read = Bytes(read_b);
    o.bytes_written = Bytes(write_b);
    return b_.add(o, deps);
  }

  /// Causal attention over microbatch_size sequences of s tokens with a_
  /// local query heads and kv_ local KV heads.
  OpId attention(int32_t layer, Pass pass, OpId dep) {
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
  OpId ring_attention(int32_t layer, Pass pass, OpId dep) {
    const bool backward = pass == Pass::kBackward;
    const double s = static_cast<double>(p_.seq_len);
    const double total =
        2.0 * static_cast<double>(p_.microbatch_size) * static_cast<double>(a_ * d_) * s * (s + 1.0);
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
  OpId fused_attention(int32_t layer, Pass pass, OpId dep) {
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
  OpId unfused_attention(int32_t layer, Pass pass, OpId dep) {
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

  OpId collective(CollectiveKind kind, uint8_t axes, StreamId stream, std::string_view name, int32_t layer,
                  Pass pass, int64_t bytes, DType dtype, std::initializer_list<OpId> deps) {
    Op o = base(name, layer, pass, stream);
    o.kind = OpKind::kCollective;
    o.collective = kind;
    o.axes = axes;
    o.dtype = dtype;
    o.comm_bytes = Bytes(bytes);
    return b_.add(o, deps);
  }
  OpId tp_coll(CollectiveKind kind, std::string_view name, int32_t layer, Pass pass, int64_t bytes, OpId dep) {
    return collective(kind, kTpAxis, kTpS, name, layer, pass, bytes, DType::kBf16, {dep});
  }
  /// Forward boundary collective after a row-parallel matmul.
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
  /// Backward of a column-parallel input: all-reduce (or reduce-scatter) of
  /// the input gradient. It depends on the activation gradient only, so it
  /// overlaps the weight-gradient matmul.
  OpId column_parallel_grad(std::string_view name, int32_t layer, OpId dgrad) {
    if (t_ == 1) return dgrad;
    return tp_coll(p_.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, name, layer,
                   Pass::kBackward, T_ * h_ * kAct, dgrad);
  }
  OpId row_parallel_grad(std::string_view name, int32_t layer, OpId prev) {
    if (t_ == 1 || !p_.sequence_parallel) return prev;
    return tp_coll(CollectiveKind::kAllGather, name, layer, Pass::kBackward, T_ * h_ * kAct, prev);
  }

  /// Pipeline transfer of one microbatch's boundary activation (or its
  /// gradient): T·h bf16 values, split over tp under sequence parallelism.
  int64_t boundary_bytes() const { return Ts_ * h_ * kAct; }
  OpId send(Pass pass, OpId dep) {
    const bool next = pass == Pass::kForward;
    Op o = base(next ? "pp send activation" : "pp send gradient", -1, pass,
                next ? TrainStreams::kSendNext : TrainStreams::kSendPrev);
    o.kind = OpKind::kSend;
    o.peer = next ? 1 : -1;
    o.comm_bytes = Bytes(boundary_bytes());
    return b_.add(o, {dep});
  }
  OpId recv(Pass pass) {
    const bool from_prev = pass == Pass::kForward;
    Op o = base(from_prev ? "pp recv activation" : "pp recv gradient", -1, pass, TrainStreams::kRecv);
    o.kind = OpKind::kRecv;
    o.peer = from_prev ? -1 : 1;
    o.comm_bytes = Bytes(boundary_bytes());
    return b_.add(o);
  }

  // ---- FSDP parameter gathers ---------------------------------------------------
  /// The expert gather follows the dense one on the same stream, so the
  /// returned (last) op implies both.
  OpId gather(int64_t unit, Pass pass, OpId after) {
    if (!fsdp_) return kNone;
    OpId last = kNone;
    // One all-gather per unit, or per fsdp_bucket_params slice of it
    // (DeepSpeed ZeRO-3 gathers in prefetch buckets).
    const int64_t bucket = p_.fsdp_bucket_params > 0 ? p_.fsdp_bucket_params : unit_params(unit);
    for (int64_t done = 0; done < unit_params(unit); done += bucket) {
      const int64_t n = std::min(bucket, unit_params(unit) - done);
      last = collective(CollectiveKind::kAllGather, fsdp_axes_, kGather, "fsdp all-gather", unit_layer(unit), pass,
                        n * kAct, DType::kBf16, {done == 0 ? after : kNone});
    }
    if (unit_expert_params(unit) > 0 && expert_shards_ > 1) {
      last = collective(CollectiveKind::kAllGather, kExpertDpAxis, kGather, "fsdp expert all-gather",
                        unit_layer(unit), pass, unit_expert_params(unit) * kAct, DType::kBf16, {after});
    }
    return last;
  }

  // ---- layers ----------------------------------------------------------------------
  Op norm_op(std::string_view name, int32_t layer, Pass pass) {
    Op o = base(name, layer, pass, kC);
    o.compute = ComputeKind::kNorm;
    o.m = Ts_;
    o.n = h_;
    o.k = 1;
    const int64_t bytes = Ts_ * h_ * kAct;
    o.flops = Flops(5.0 * static_cast<double>(Ts_ * h_));
    o.bytes_read = Bytes(pass == Pass::kBackward ? 2 * bytes : bytes);
    o.bytes_written = Bytes(bytes);
    return o;
  }
  OpId act_op(int32_t layer, Pass pass, OpId dep) {
    const int64_t e = T_ * f_;
    const bool swiglu = m_.mlp == MlpKind::kSwiglu;
    const std::string_view name = swiglu ? "swiglu" : "gelu";
    if (pass != Pass::kBackward) {
      return memop(ComputeKind::kElementwise, name, layer, pass, e, (swiglu ? 2 : 1) * e * kAct, e * kAct, 8, {dep});
    }
    return memop(ComputeKind::kElementwise, name, layer, pass, e, (swiglu ? 3 : 2) * e * kAct,
                 (swiglu ? 2 : 1) * e * kAct, 12, {dep});
  }
  /// Share of the QKV projection that is model work: when tp exceeds
  /// kv_heads each rank computes a whole (replicated) KV head.
  double qkv_model_fraction() const {
    const double model =
        static_cast<double>(a_ * d_) + 2.0 * static_cast<double>(m_.kv_heads * d_) / static_cast<double>(t_);
    return model / static_cast<double>((a_ + 2 * kv_) * d_);
  }

  /// One layer's forward (pass kForward) or its recomputation before the
  /// backward (kRecompute). Returns the last op.
  OpId layer_forward(int32_t L, Pass pass, std::initializer_list<OpId> deps) {
    OpId x = b_.add(norm_op("attn norm", L, pass), deps);
    x = column_parallel_in("attn all-gather", L, pass, x);
    x = matmul("qkv", L, pass, T_, (a_ + 2 * kv_) * d_, h_, {x}, qkv_model_fraction());
    if (m_.position == PositionKind::kRope) {
      const int64_t e = T_ * (a_ + kv_) * d_;
      x = memop(ComputeKind::kElementwise, "rope", L, pass, e, e * kAct, e * kAct, 6, {x});
    }
    x = attention(L, pass, x);
    x = matmul("attn out", L, pass, T_, h_, a_ * d_, {x});
    x = row_parallel_out("attn all-reduce", L, pass, x);
    x = residual(L, pass, x);
    x = b_.add(norm_op("mlp norm", L, pass), {x});
    if (m_.is_moe_layer(L)) return residual(L, pass, moe_forward(L, pass, x));
    x = column_parallel_in("mlp all-gather", L, pass, x);
    x = matmul("mlp up", L, pass, T_, up_n_, h_, {x});
    x = act_op(L, pass, x);
    x = matmul("mlp down", L, pass, T_, h_, f_, {x});
    x = row_parallel_out("mlp all-reduce", L, pass, x);
    return residual(L, pass, x);
  }

  /// Residual add (with dropout: Megatron's fused bias-dropout-add, which
  /// also writes a 1-byte mask).
  OpId residual(int32_t L, Pass pass, OpId x) {
    const int64_t e = Ts_ * h_;
    const int64_t mask = m_.dropout ? e : 0;
    return memop(ComputeKind::kElementwise, m_.dropout ? "bias-dropout-add" : "residual", L, pass, e, 2 * e * kAct,
                 e * kAct + mask, 2, {x});
  }

  /// One layer's backward from the gradient at its output (`cur`). Returns
  /// the last op and sets `wgrad` to its last weight-gradient op.
  OpId layer_backward(int32_t L, OpId cur, OpId weights, OpId& wgrad) {
    OpId recomputed = kNone;
    if (p_.recompute == Recompute::kFull) recomputed = layer_forward(L, Pass::kRecompute, {cur, weights});
    // MLP block.
    OpId x, dg, wg;
    if (m_.is_moe_layer(L)) {
      x = moe_backward(L, cur, weights, recomputed, wg);
      x = b_.add(norm_op("mlp norm", L, Pass::kBackward), {x, wg});
    } else {
      x = row_parallel_grad("mlp grad all-gather", L, cur);
      dg = matmul("mlp down dgrad", L, Pass::kBackward, T_, f_, h_, {x, weights, recomputed});
      matmul("mlp down wgrad", L, Pass::kBackward, f_, h_, T_, {x});
      x = act_op(L, Pass::kBackward, dg);
      dg = matmul("mlp up dgrad", L, Pass::kBackward, T_, h_, up_n_, {x});
      wg = matmul("mlp up wgrad", L, Pass::kBackward, h_, up_n_, T_, {x});
      x = column_parallel_grad("mlp grad all-reduce", L, dg);
      x = b_.add(norm_op("mlp norm", L, Pass::kBackward), {x, wg});
    }
    x = residual(L, Pass::kBackward, x);
    // Attention block.
    x = row_parallel_grad("attn grad all-gather", L, x);
    dg = matmul("attn out dgrad", L, Pass::kBackward, T_, a_ * d_, h_, {x});
    matmul("attn out wgrad", L, Pass::kBackward, a_ * d_, h_, T_, {x});
    // Selective recomputation re-runs the attention core (Korthikanti et al.).
    if (p_.recompute == Recompute::kSelective) dg = attention(L, Pass::kRecompute, dg);
    x = attention(L, Pass::kBackward, dg);
    if (m_.position == PositionKind::kRope) {
      const int64_t e = T_ * (a_ + kv_) * d_;
      x = memop(ComputeKind::kElementwise, "rope", L, Pass::kBackward, e, e * kAct, e * kAct, 6, {x});
    }
    const int64_t qkv_n = (a_ + 2 * kv_) * d_;
    dg = matmul("qkv dgrad", L, Pass::kBackward, T_, h_, qkv_n, {x}, qkv_model_fraction());
    wg = matmul("qkv wgrad", L, Pass::kBackward, h_, qkv_n, T_, {x}, qkv_model_fraction());
    x = column_parallel_grad("attn grad all-reduce", L, dg);
    x = b_.add(norm_op("attn norm", L, Pass::kBackward), {x, wg});
    wgrad = wg;
    return residual(L, Pass::kBackward, x);
  }

  // ---- mixture of experts ---------------------------------------------------------------
  // Each device routes its own tokens (the sequence-parallel shard when tp >
  // 1): a router matmul and top-k, a permutation into per-expert buffers of
  // capacity_factor · tokens · top_k / experts slots, an all-to-all over ep
  // to the devices holding the experts (dispatch), the local experts as one
  // grouped SwiGLU matmul, an all-to-all back (combine) and the weighted
  // un-permutation (Lepikhin et al. 2020, GShard; Megatron-LM's MoE layer).
  // Shared experts see every token and run during the dispatch.
  int64_t moe_slots() const {
    const double routed = static_cast<double>(Ts_ * m_.moe.top_k);
    return static_cast<int64_t>(std::ceil(routed * m_.moe.capacity_factor));
  }
  /// Token slots each local expert processes (balanced routing).
  int64_t slots_per_expert() const {
    return std::max<int64_t>(1, (moe_slots() * p_.ep + m_.moe.experts - 1) / m_.moe.experts);
  }
  /// Grouped matmul over the local experts; padding slots are not model work.
  OpId experts_matmul(std::string_view name, int32_t L, Pass pass, int64_t m, int64_t n, int64_t k,
                      std::initializer_list<OpId> deps) {
    const double useful = static_cast<double>(Ts_ * m_.moe.top_k) /
                          static_cast<double>(slots_per_expert() * m_.moe.experts / p_.ep);
    return matmul(name, L, pass, m, n, k, deps, std::min(1.0, useful), local_experts_);
  }
  OpId all_to_all(std::string_view name, int32_t L, Pass pass, OpId dep) {
    if (p_.ep == 1) return dep;
    return collective(CollectiveKind::kAllToAll, kEpAxis, kEpS, name, L, pass, moe_slots() * h_ * kAct,
                      DType::kBf16, {dep});
  }

  OpId moe_forward(int32_t L, Pass pass, OpId x) {
    const int64_t E = m_.moe.experts, k = m_.moe.top_k, fe = m_.moe.expert_ffn_hidden;
    const int64_t slots = moe_slots(), me = slots_per_expert();
    OpId r = matmul("router", L, pass, Ts_, E, h_, {x});
    r = memop(ComputeKind::kSoftmax, "router top-k", L, pass, Ts_ * E, Ts_ * E * kAct, Ts_ * k * 8, 4, {r});
    OpId y = memop(ComputeKind::kElementwise, "moe permute", L, pass, slots * h_, Ts_ * h_ * kAct,
                   slots * h_ * kAct, 0, {r});
    y = all_to_all("moe dispatch", L, pass, y);
    OpId shared = kNone;
    if (m_.moe.shared_experts > 0) {
      const int64_t fs = m_.moe.shared_experts * fe;
      shared = matmul("shared experts up", L, pass, Ts_, 2 * fs, h_, {x});
      shared = memop(ComputeKind::kElementwise, "swiglu", L, pass, Ts_ * fs, 2 * Ts_ * fs * kAct, Ts_ * fs * kAct, 8,
                     {shared});
      shared = matmul("shared experts down", L, pass, Ts_, h_, fs, {shared});
    }
    y = experts_matmul("experts up", L, pass, me, 2 * fe, h_, {y});
    const int64_t e = local_experts_ * me * fe;
    y = memop(ComputeKind::kElementwise, "swiglu", L, pass, e, 2 * e * kAct, e * kAct, 8, {y});
    y = experts_matmul("experts down", L, pass, me, h_, fe, {y});
    y = all_to_all("moe combine", L, pass, y);
    return memop(ComputeKind::kElementwise, "moe unpermute", L, pass, Ts_ * h_, slots * h_ * kAct + Ts_ * k * 4,
                 Ts_ * h_ * kAct, static_cast<double>(k), {y, shared});
  }

  /// Backward of the MoE block from the gradient at its output; `wgrad` is
  /// set to its last weight-gradient op.
  OpId moe_backward(int32_t L, OpId cur, OpId weights, OpId recomputed, OpId& wgrad) {
    const Pass pass = Pass::kBackward;
    const int64_t E = m_.moe.experts, k = m_.moe.top_k, fe = m_.moe.expert_ffn_hidden;
    const int64_t slots = moe_slots(), me = slots_per_expert();
    OpId y = memop(ComputeKind::kElementwise, "moe unpermute", L, pass, slots * h_, Ts_ * h_ * kAct + Ts_ * k * 4,
                   slots * h_ * kAct, 1, {cur, weights, recomputed});
    y = all_to_all("moe combine", L, pass, y);
    OpId shared = kNone;
    if (m_.moe.shared_experts > 0) {
      const int64_t fs = m_.moe.shared_experts * fe;
      shared = matmul("shared experts down dgrad", L, pass, Ts_, fs, h_, {cur});
      matmul("shared experts down wgrad", L, pass, fs, h_, Ts_, {cur});
      shared = memop(ComputeKind::kElementwise, "swiglu", L, pass, Ts_ * fs, 3 * Ts_ * fs * kAct,
                     2 * Ts_ * fs * kAct, 12, {shared});
      const OpId sd = matmul("shared experts up dgrad", L, pass, Ts_, h_, 2 * fs, {shared});
      matmul("shared experts up wgrad", L, pass, h_, 2 * fs, Ts_, {shared});
      shared = sd;
    }
    OpId dg = experts_matmul("experts down dgrad", L, pass, me, fe, h_, {y});
    experts_matmul("experts down wgrad", L, pass, fe, h_, me, {y});
    const int64_t e = local_experts_ * me * fe;
    dg = memop(ComputeKind::kElementwise, "swiglu", L, pass, e, 3 * e * kAct, 2 * e * kAct, 12, {dg});
    const OpId up_dg = experts_matmul("experts up dgrad", L, pass, me, h_, 2 * fe, {dg});
    experts_matmul("experts up wgrad", L, pass, h_, 2 * fe, me, {dg});
    y = all_to_all("moe dispatch", L, pass, up_dg);
    y = memop(ComputeKind::kElementwise, "moe permute", L, pass, Ts_ * h_, slots * h_ * kAct, Ts_ * h_ * kAct, 1, {y});
    const OpId rd = matmul("router dgrad", L, pass, Ts_, h_, E, {y});
    wgrad = matmul("router wgrad", L, pass, h_, E, Ts_, {y});
    return memop(ComputeKind::kElementwise, "moe grad sum", L, pass, Ts_ * h_, 3 * Ts_ * h_ * kAct, Ts_ * h_ * kAct, 2,
                 {rd, shared});
  }

  // ---- forward of one chunk for one microbatch ----------------------------------------
  void forward(int32_t local) {
    const std::vector<int64_t> us = units(local);
    OpId cur = first_chunk(local) ? kNone : recv(Pass::kForward);
    // FSDP: unit i+1's gather is issued when unit i-1 ends, so it runs during
    // unit i (prefetch); without prefetch, when unit i ends.
    std::vector<OpId> gathered(us.size(), kNone);
    std::vector<OpId> ended(us.size(), kNone);
    auto issue = [&](size_t i, OpId after) {
      if (i < us.size()) gathered[i] = gather(us[i], Pass::kForward, after);
    };
    issue(0, kNone);
    if (p_.fsdp_prefetch) issue(1, kNone);
    for (size_t i = 0; i < us.size(); ++i) {
      const int64_t u = us[i];
      if (u == kEmbedUnit) {
        cur = embedding_forward(gathered[i]);
      } else if (u == kHeadUnit) {
        cur = head_forward(cur, gathered[i]);
      } else {
        cur = layer_forward(unit_layer(u), Pass::kForward, {cur, gathered[i]});
      }
      ended[i] = cur;
      issue(p_.fsdp_prefetch ? i + 2 : i + 1, cur);
    }
    fwd_end_[static_cast<size_t>(local)][static_cast<size_t>(mb_)] = cur;
    if (!last_chunk(local)) send(Pass::kForward, cur);
  }

  OpId embedding_forward(OpId weights) {
    Op o = base("embedding", -1, Pass::kForward, kC);
    o.compute = ComputeKind::kEmbedding;
    o.m = T_;
    o.n = h_;
    o.k = 1;
    o.bytes_read = Bytes(T_ * h_ * kAct + T_ * 4);
    o.bytes_written = Bytes(T_ * h_ * kAct);
    OpId x = b_.add(o, {weights});
    if (m_.position == PositionKind::kLearned) {
      x = memop(ComputeKind::kElementwise, "position add", -1, Pass::kForward, T_ * h_, 2 * T_ * h_ * kAct,
                T_ * h_ * kAct, 1, {x});
    }
    // Vocabulary-parallel lookup: partial rows are summed over tp.
    return row_parallel_out("embedding all-reduce", -1, Pass::kForward, x);
  }

  OpId head_forward(OpId cur, OpId weights) {
    OpId x = b_.add(norm_op("final norm", -1, Pass::kForward), {cur, weights});
    x = column_parallel_in("head all-gather", -1, Pass::kForward, x);
    x = matmul("unembedding", -1, Pass::kForward, T_, v_, h_, {x}, vocab_model_);
    x = memop(ComputeKind::kLoss, "cross-entropy", -1, Pass::kForward, T_ * v_, T_ * v_ * kAct, T_ * 4, 4, {x});
    // Vocabulary-parallel softmax: max and sum over tp (fp32).
    if (t_ > 1) x = tp_coll(CollectiveKind::kAllReduce, "loss all-reduce", -1, Pass::kForward, T_ * 8, x);
    return x;
  }

  // ---- backward of one chunk for one microbatch ----------------------------------------
  void backward(int32_t local, bool last_microbatch) {
    record_buckets_ = last_microbatch;  // the parameter all-gathers follow the last buckets
    const std::vector<int64_t> us = units(local);
    OpId cur = last_chunk(local) ? fwd_end_[static_cast<size_t>(local)][static_cast<size_t>(mb_)]
                                 : recv(Pass::kBackward);
    std::vector<OpId> gathered(us.size(), kNone);
    // Backward runs the units in reverse; the embedding's backward (a
    // scatter-add) needs no weights.
    auto issue = [&](size_t back_index, OpId after) {
      if (back_index >= us.size()) return;
      const size_t i = us.size() - 1 - back_index;
      if (us[i] != kEmbedUnit) gathered[i] = gather(us[i], Pass::kBackward, after);
    };
    issue(0, kNone);
    if (p_.fsdp_prefetch) issue(1, kNone);
    for (size_t k = 0; k < us.size(); ++k) {
      const size_t i = us.size() - 1 - k;
      const int64_t u = us[i];
      OpId wgrad = kNone;
      if (u == kHeadUnit) {
        cur = head_backward(cur, gathered[i], wgrad);
      } else if (u == kEmbedUnit) {
        cur = embedding_backward(cur);
        wgrad = cur;
      } else {
        cur = layer_backward(unit_layer(u), cur, gathered[i], wgrad);
      }
      reduce_unit(u, wgrad, last_microbatch);
      issue(p_.fsdp_prefetch ? k + 2 : k + 1, cur);
    }
    flush_bucket();
    if (!first_chunk(local)) send(Pass::kBackward, cur);
  }

  OpId head_backward(OpId cur, OpId weights, OpId& wgrad) {
    const int64_t logits = T_ * v_ * kAct;
    Op lg = base("cross-entropy", -1, Pass::kBackward, kC);
    lg.compute = ComputeKind::kLoss;
    lg.m = T_ * v_;
    lg.n = lg.k = 1;
    lg.flops = Flops(4.0 * static_cast<double>(T_ * v_));
    lg.bytes_read = Bytes(logits);
    lg.bytes_written = Bytes(logits);
    OpId x = b_.add(lg, {cur, weights});
    const OpId dg = matmul("unembedding dgrad", -1, Pass::kBackward, T_, h_, v_, {x}, vocab_model_);
    wgrad = matmul("unembedding wgrad", -1, Pass::kBackward, h_, v_, T_, {x}, vocab_model_);
    x = column_parallel_grad("head grad all-reduce", -1, dg);
    return b_.add(norm_op("final norm", -1, Pass::kBackward), {x, wgrad});
  }

  OpId embedding_backward(OpId cur) {
    OpId x = row_parallel_grad("embedding grad all-gather", -1, cur);
    return memop(ComputeKind::kEmbedding, "embedding grad", -1, Pass::kBackward, T_ * h_, T_ * h_ * kAct + T_ * 4,
                 T_ * h_ * 4, 1, {x});
  }

  // ---- gradient reduction and optimizer ------------------------------------------------
  /// FSDP reduce-scatters each unit's gradients every microbatch. Otherwise
  /// gradients fill buckets in backward order: all-reduced (zero 0) or
  /// reduce-scattered (zero 1, 2). Zero 0 and 1 accumulate full gradients
  /// locally and reduce in the last microbatch only; zero 2 keeps only its
  /// gradient shard, so it reduce-scatters every microbatch (DeepSpeed).
  void reduce_unit(int64_t u, OpId wgrad, bool last_microbatch) {
    reduce_group(dense_, unit_params(u), fsdp_ ? fsdp_axes_ : kDpAxis, fsdp_ ? fsdp_shards_ : shards_, u, wgrad,
                 last_microbatch);
    // Hybrid FSDP: after the last microbatch, the replicas all-reduce their
    // gradient shards (PyTorch HSDP).
    if (fsdp_ && replicas_ > 1 && last_microbatch && unit_params(u) > 0) {
      collective(CollectiveKind::kAllReduce, kReplicaAxis, kReduce, "hsdp grad all-reduce", unit_layer(u),
                 Pass::kBackward, unit_params(u) / fsdp_shards_ * dtype_bytes(p_.grad_reduce_dtype),
                 p_.grad_reduce_dtype, {b_.last(kReduce)});
    }
    reduce_group(expert_, unit_expert_params(u), kExpertDpAxis, expert_shards_, u, wgrad, last_microbatch);
  }
  /// A gradient bucket of one parameter group (dense, or experts, which are
  /// replicated over fewer ranks).
  struct Bucket {
    int64_t bytes = 0;
    int64_t params = 0;
    OpId dep = kNone;
    std::vector<int64_t> flushed;  // parameters per bucket of the last microbatch
  };
  void reduce_group(Bucket& b, int64_t params, uint8_t axes, int64_t replicas, int64_t u, OpId wgrad,
                    bool last_microbatch) {
    if (replicas == 1 || params == 0) return;
    const int64_t grad_bytes = params * dtype_bytes(p_.grad_reduce_dtype);
    if (fsdp_) {
      // One reduce-scatter per unit; with fsdp_bucket_params set, in
      // grad_bucket_bytes pieces (DeepSpeed's reduce buckets).
      const int64_t piece = p_.fsdp_bucket_params > 0 ? p_.grad_bucket_bytes : grad_bytes;
      for (int64_t done = 0; done < grad_bytes; done += piece) {
        collective(CollectiveKind::kReduceScatter, axes, kReduce, "fsdp reduce-scatter", unit_layer(u),
                   Pass::kBackward, std::min(piece, grad_bytes - done), p_.grad_reduce_dtype, {wgrad});
      }
      return;
    }
    if (!last_microbatch && p_.zero != 2) return;
    b.bytes += grad_bytes;
    b.params += params;
    b.dep = wgrad;
    if (b.bytes >= p_.grad_bucket_bytes) flush(b, axes);
  }
  void flush(Bucket& b, uint8_t axes) {
    if (b.bytes == 0) return;
    const bool sharded = p_.zero >= 1;
    collective(sharded ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, axes, kReduce,
               sharded ? "grad reduce-scatter" : "grad all-reduce", -1, Pass::kBackward, b.bytes,
               p_.grad_reduce_dtype, {b.dep});
    if (record_buckets_) b.flushed.push_back(b.params);
    b.bytes = 0;
    b.params = 0;
  }
  void flush_bucket() {
    flush(dense_, kDpAxis);
    flush(expert_, kExpertDpAxis);
  }

  /// Adam with master weights, first and second moments (fp32 by default):
  /// per parameter it reads the gradient and the three states and writes the
  /// states and the bf16 weight. ZeRO-1/2 then all-gather the updated bf16 weights
  /// in the gradient buckets.
  void optimizer() {
    int64_t dense = 0, experts = 0;
    for (int32_t c = 0; c < v_chunks_; ++c) {
      for (int64_t u : units(c)) {
        dense += unit_params(u);
        experts += unit_expert_params(u);
      }
    }
    const bool sharded = p_.zero >= 1 && shards_ > 1;
    auto shard = [&](int64_t x, int64_t n) { return sharded ? (x + n - 1) / n : x; };
    const int64_t params = shard(dense, fsdp_ ? fsdp_shards_ : shards_) + shard(experts, expert_shards_);
    Op o = base("adam", -1, Pass::kOptimizer, kC);
    o.compute = ComputeKind::kOptimizer;
    o.dtype = DType::kFp32;
    o.m = params;
    o.n = o.k = 1;
    // Master weight and the two moments, at their configured precision.
    const int64_t state = dtype_bytes(p_.master_weights_dtype) + 2 * dtype_bytes(p_.optimizer_state_dtype);
    o.flops = Flops(12.0 * static_cast<double>(params));
    o.bytes_read = Bytes(params * (dtype_bytes(p_.grad_reduce_dtype) + state));
    o.bytes_written = Bytes(params * (state + 2));
    const OpId adam = b_.add(o, {b_.has_last(kReduce) ? b_.last(kReduce) : kNone});
    if (!sharded || fsdp_) return;
    for (const auto& [bucket, axes] : {std::pair{&dense_, kDpAxis}, std::pair{&expert_, kExpertDpAxis}}) {
      for (int64_t params_in_bucket : bucket->flushed) {
        collective(CollectiveKind::kAllGather, axes, kGather, "param all-gather", -1, Pass::kOptimizer,
                   params_in_bucket * kAct, DType::kBf16, {adam});
      }
    }
  }

  static constexpr int64_t kEmbedUnit = -1;
  static constexpr int64_t kHeadUnit = -2;
  const ModelSpec& m_;
  const Plan& p_;
  const ChunkLayout& layout_;
  const int64_t stage_;
  ProgramBuilder b_;
  int64_t t_, T_, Ts_, a_, kv_, d_, h_, f_, up_n_, v_, w_;
  int64_t chunks_ = 1;
  int64_t cp_ = 1;
  int64_t shards_ = 1;         // data-parallel replicas of the dense parameters: dp·cp
  int64_t expert_shards_ = 1;  // replicas of the expert parameters: dp·cp / ep
  int64_t local_experts_ = 0, moe_dense_params_ = 0, moe_expert_params_ = 0;
  int64_t replicas_ = 1;      // hybrid FSDP replicas (1: plain FSDP)
  uint8_t fsdp_axes_ = 0;     // where FSDP gathers and reduce-scatters
  int64_t fsdp_shards_ = 1;   // ranks a parameter is sharded over under FSDP
  int32_t v_chunks_ = 1;
  bool fsdp_ = false;
  int64_t layer_params_ = 0, embed_params_ = 0, head_params_ = 0;
  double vocab_model_ = 1.0;  // model share of the padded vocabulary
  int32_t mb_ = 0;
  std::vector<std::vector<OpId>> fwd_end_;  // [chunk][microbatch]
  Bucket dense_, expert_;
  bool record_buckets_ = false;  // flushed buckets feed the ZeRO-1/2 parameter all-gathers
};

}  // namespace

ChunkLayout chunk_layout(const ModelSpec& m, const Plan& p) {
  const int64_t n = p.chunks();
  ChunkLayout c;
  if (!p.layers_per_stage.empty()) {
    c.count = p.layers_per_stage;
  } else {
    c.count.assign(static_cast<size_t>(n), m.layers / n);
    int64_t rest = m.layers % n;
    for (int64_t g = n > 1 ? 1 : 0; rest > 0; g = (g + 1) % n, --rest) ++c.count[static_cast<size_t>(g)];
  }
  int64_t first = 0;
  for (int64_t cnt : c.count) {
    c.first.push_back(first);
    first += cnt;
  }
  SHARDSIM_ASSERT(first == m.layers, "chunk layout covers every layer once");
  return c;
}

ProgramSet lower_training_step(const Scenario& s) {
  const ChunkLayout layout = chunk_layout(s.model, s.plan);
  ProgramSet set;
  for (int64_t stage = 0; stage < s.plan.pp; ++stage) set.stages.push_back(StageLowering(s, layout, stage).run());
  return set;
}

}  // namespace shardsim
