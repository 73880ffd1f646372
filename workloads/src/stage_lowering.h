// Private to workloads/: the builder of one pipeline stage's training
// Program, shared by lower_train.cc, lower_attention.cc and lower_moe.cc.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "layer_graph.h"
#include "matmul_op.h"
#include "shardsim/core/error.h"
#include "shardsim/workloads/framework.h"
#include "shardsim/workloads/lower.h"

namespace shardsim::detail {

inline constexpr StreamId kC = TrainStreams::kCompute;
inline constexpr StreamId kTpS = TrainStreams::kTp;
inline constexpr StreamId kGather = TrainStreams::kDpGather;
inline constexpr StreamId kReduce = TrainStreams::kDpReduce;
inline constexpr uint8_t kTpAxis = axis_bit(MeshAxis::kTp);
// Parameters are replicated over dp and cp: gradients reduce (and FSDP
// shards) over both (Megatron-LM's context parallelism folds cp into dp).
inline constexpr uint8_t kDpAxis =
    axis_bit(MeshAxis::kDp) | axis_bit(MeshAxis::kCp) | axis_bit(MeshAxis::kEp) | axis_bit(MeshAxis::kDs);
// Hybrid FSDP shards over its group (ds, and cp) and replicates over dp.
inline constexpr uint8_t kShardGroupAxis = axis_bit(MeshAxis::kDs) | axis_bit(MeshAxis::kCp);
inline constexpr uint8_t kReplicaAxis = axis_bit(MeshAxis::kDp);
// Experts are replicated over the data-parallel ranks outside ep, and over
// tp where they are not split over it (expert_replica_axes).
inline constexpr uint8_t kExpertDpAxis = axis_bit(MeshAxis::kDp) | axis_bit(MeshAxis::kCp);

/// The mesh axes over which a plan's experts are replicated: dp and cp
/// outside ep, and tp when expert_tp is 1 under tp > 1 (each tp rank routes
/// its own tokens to whole experts, which every tp rank of an ep position
/// holds). Megatron-Core's parallel folding gives the same count: the expert
/// data-parallel size is world / (expert_tp · ep · pp)
/// (megatron/core/parallel_state.py, initialize_model_parallel).
/// Under a folded layout (Plan::expert_layout) an expert group already holds
/// its cp ranks and, with expert_tp 1, its tp ranks, so the replicas are the
/// outer data-parallel positions alone: the same count.
inline uint8_t expert_replica_axes(const Plan& p) {
  if (expert_fold(p) > 1) return axis_bit(MeshAxis::kDp);
  return p.expert_tp == 1 && p.tp > 1 ? static_cast<uint8_t>(kExpertDpAxis | kTpAxis) : kExpertDpAxis;
}
/// How many replicas of each expert parameter there are (the shards ZeRO
/// splits expert states into).
inline int64_t expert_replicas(const Plan& p) {
  // Multiplied out first: a folded group of ep may be larger than dp·cp.
  return p.dp * p.cp * (p.expert_tp == 1 ? p.tp : 1) / p.ep;
}
inline constexpr uint8_t kEpAxis = axis_bit(MeshAxis::kEp);
/// The mesh axes of an expert-parallel group: the ep part of data
/// parallelism, and under a folded layout the cp and (expert_tp 1) tp axes
/// it spans first (Megatron-Core's expert RankGenerator: expert_tp ranks
/// innermost, then ep).
inline uint8_t expert_group_axes(const Plan& p) {
  if (expert_fold(p) == 1) return kEpAxis;
  uint8_t axes = kEpAxis | axis_bit(MeshAxis::kCp);
  if (p.expert_tp == 1) axes |= kTpAxis;
  return axes;
}
inline constexpr StreamId kEpS = TrainStreams::kEp;
inline constexpr int64_t kAct = 2;  // activation bytes (bf16)
/// Bytes per element live while an elementwise op runs: a fused kernel
/// holds its inputs and outputs; an unfused chain of them (PyTorch eager)
/// frees each temporary as the next kernel consumes it, so at most the bf16
/// input, its fp32 copy, one fp32 temporary and the bf16 output are live.
inline constexpr int64_t kEagerLiveBytes = 2 + 4 + 4 + 2;
inline constexpr OpId kNone = kNoOp;

/// Bytes per parameter of the optimizer's master weights (Plan::master_copy):
/// a full copy at master_weights_dtype, the 16-bit remainder of an fp32
/// master whose upper half is the bf16 parameter (Apex
/// store_param_remainders), or none where the parameters are the master.
inline int64_t master_copy_bytes(const Plan& p) {
  switch (p.master_copy) {
    case Plan::MasterCopy::kRemainder:
      return 2;
    case Plan::MasterCopy::kNone:
      return 0;
    case Plan::MasterCopy::kFull:
      break;
  }
  return dtype_bytes(p.master_weights_dtype);
}

/// Bytes per parameter of the unsharded gradients FSDP accumulates across
/// microbatches without syncing (Plan::fsdp_sync_each_microbatch false):
/// PyTorch FSDP2 keeps them in the reduce dtype where it differs from the
/// bf16 gradients autograd makes (pytorch/pytorch#125191:
/// FSDPParam.to_accumulated_grad_if_needed upcasts the first microbatch's
/// .grad, accumulate_unsharded_grad_if_needed adds each later one).
inline int64_t accumulated_grad_bytes(const Plan& p) {
  return std::max<int64_t>(kAct, dtype_bytes(p.grad_reduce_dtype));
}

/// A layer's per-device shapes under a plan: tokens of this device's
/// sequence shard (T) and their sequence-parallel share (Ts), local heads,
/// KV heads (a whole head per rank when tp exceeds them) and MLP width.
struct LayerShape {
  int64_t T, Ts, a, kv, f;
  LayerShape(const ModelSpec& m, const Plan& p)
      : T(p.microbatch_size * p.seq_len / p.cp),
        Ts(p.sequence_parallel ? T / p.tp : T),
        a(m.heads / p.tp),
        kv(m.kv_heads_per_rank(p.tp)),
        f(m.ffn_hidden / p.tp) {}
  /// MoE: token slots this device routes (capacity_factor · Ts · top_k).
  int64_t moe_slots(const ModelSpec& m) const {
    return static_cast<int64_t>(std::ceil(static_cast<double>(Ts * m.moe.top_k) * m.moe.capacity_factor));
  }
};

/// The layer graph of a dense (or MoE) layer under a plan: its shape and
/// the bytes of each node's output (lower_layer.cc).
/// One layer kind's graph inputs; `bf16_layer`: a layer of the plan's bf16
/// tail (its linears run and keep bf16 whatever the matmul dtype).
LayerConfig layer_config(const ModelSpec& m, const Plan& p, bool moe, bool bf16_layer = false);
/// The plan's recomputation policy and its framework's semantics.
RecomputeSpec recompute_spec(const Plan& p, bool bf16_layer = false);
/// The same spec with nothing recomputed (what the layers the policy
/// leaves out keep: everything their backward needs; offloads as the spec).
RecomputeSpec keep_everything(RecomputeSpec spec);
/// Whether the policy applies to layer `layer`, the `index`-th of its
/// pipeline chunk: to every layer by default; with recompute_layers > 0 to
/// the first that many of each chunk (Megatron-LM's block method,
/// --recompute-num-layers); with recompute_every = k to one layer in k
/// (torchtitan's selective layer checkpointing wraps block i, counted from
/// 1, when i % k == 0: layers k-1, 2k-1, ... from 0).
bool recompute_applies(const Plan& p, int64_t layer, int64_t index);

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
    kv_ = m_.kv_heads_per_rank(t_);
    d_ = m_.qk_head_dim();
    dv_ = m_.v_head_dim();
    h_ = m_.hidden;
    f_ = m_.ffn_hidden / t_;
    up_n_ = (m_.gated() ? 2 : 1) * f_;
    v_ = padded_vocab(m_, t_) / t_;
    vocab_model_ = static_cast<double>(m_.vocab) / static_cast<double>(padded_vocab(m_, t_));
    const DeviceParams params = device_params(m_, t_, p_.ep, p_.seq_len, p_.expert_tp);
    layer_params_ = params.dense_layer;
    moe_dense_params_ = params.moe_layer_replicated;
    moe_expert_params_ = params.moe_layer_experts;
    if (m_.is_moe()) local_experts_ = m_.moe.experts / p_.ep;
    embed_params_ = params.embedding + (p_.pp > 1 ? params.tied_copy : 0);
    tied_copy_ = p_.pp > 1 ? params.tied_copy : 0;
    head_params_ = params.head;
    chunks_ = p_.chunks();
    v_chunks_ = p_.virtual_stages;
    shards_ = p_.dp * p_.cp;
    expert_shards_ = expert_replicas(p_);
    expert_axes_ = expert_replica_axes(p_);
    const int64_t group = p_.fsdp_shard_size > 0 ? p_.fsdp_shard_size : p_.dp;
    replicas_ = p_.dp / group;
    fsdp_axes_ = replicas_ > 1 ? kShardGroupAxis : kDpAxis;
    fsdp_shards_ = group * p_.cp;
    fsdp_ = p_.zero == 3 && shards_ > 1;
    for (const char* s : {"compute", "tp comm", "dp gather", "dp reduce", "pp send next", "pp send prev", "pp recv",
                          "cp send", "cp recv", "ep comm", "tp send", "tp recv"}) {
      b_.add_stream(s);
    }
    if (!p_.recompute_offload.empty()) {
      b_.add_stream("host d2h");
      b_.add_stream("host h2d");
    }
    const auto nloc = static_cast<size_t>(v_chunks_);
    const auto mbs = static_cast<size_t>(p_.microbatches());
    fwd_end_.assign(nloc, std::vector<OpId>(mbs, kNone));
    fwd_gather_.assign(nloc, std::vector<std::vector<OpId>>(mbs));
    const RecomputeSpec spec = recompute_spec(p_);
    dense_graph_ = std::make_unique<LayerGraph>(layer_config(m_, p_, false));
    dense_plan_ = plan_recompute(*dense_graph_, spec);
    dense_keep_plan_ = plan_recompute(*dense_graph_, keep_everything(spec));
    if (m_.is_moe()) {
      moe_graph_ = std::make_unique<LayerGraph>(layer_config(m_, p_, true));
      moe_plan_ = plan_recompute(*moe_graph_, spec);
      moe_keep_plan_ = plan_recompute(*moe_graph_, keep_everything(spec));
    }
    // The bf16 tail's layers: the same graph, bf16 bytes, and their own
    // plans (a policy may keep a bf16 GEMM's output and not a low-precision
    // one's: RecomputeSpec::matmuls_saveable).
    if (p_.bf16_tail_layers > 0) {
      const RecomputeSpec tail = recompute_spec(p_, true);
      dense_tail_graph_ = std::make_unique<LayerGraph>(layer_config(m_, p_, false, true));
      dense_tail_plan_ = plan_recompute(*dense_tail_graph_, tail);
      dense_tail_keep_plan_ = plan_recompute(*dense_tail_graph_, keep_everything(tail));
      if (m_.is_moe()) {
        moe_tail_graph_ = std::make_unique<LayerGraph>(layer_config(m_, p_, true, true));
        moe_tail_plan_ = plan_recompute(*moe_tail_graph_, tail);
        moe_tail_keep_plan_ = plan_recompute(*moe_tail_graph_, keep_everything(tail));
      }
    }
  }

  /// The stage's program: its pipeline steps, then the optimizer (lower_train.cc).
  Program run();

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
    o.memory_efficiency = static_cast<float>(p_.memory_kernel_efficiency);
    return o;
  }
  /// Recomputed forward ops are executed, not model, work.
  double model_share(Pass pass, double share) const { return pass == Pass::kRecompute ? 0.0 : share; }

  /// What a matmul's operands are: B the weights (forward and activation
  /// gradients), C a weight gradient (it accumulates into the gradient
  /// buffer), or activations throughout (attention's batched products).
  enum class Operands : uint8_t { kWeights, kWeightGrad, kActivations };
  /// Whether a matmul runs at the plan's matmul precision (a linear layer
  /// of the Transformer) or in bf16 regardless: the LM head, the router and
  /// attention's batched products stay high precision in every fp8 recipe
  /// (Megatron-Core's output layer is not a Transformer Engine module;
  /// torchao filters "output"; MaxText does not quantise the logits).
  enum class Precision : uint8_t { kLinear, kHigh };
  DType matmul_dtype(Operands operands, Precision precision, int32_t layer) const {
    if (precision == Precision::kHigh || operands == Operands::kActivations) return DType::kBf16;
    // rowwise_gw_hp keeps the weight-gradient GEMM in bf16 (torchao).
    if (operands == Operands::kWeightGrad && p_.fp8_recipe == Plan::Fp8Recipe::kRowwiseGwHp) return DType::kBf16;
    if (in_bf16_tail(layer)) return DType::kBf16;
    return p_.matmul_dtype;
  }
  /// The plan's linear layers run in fp8 or fp4.
  bool low_precision() const { return low_precision_matmuls(p_); }
  /// Layer `layer` is one of the last bf16_tail_layers, kept in bf16.
  bool in_bf16_tail(int32_t layer) const { return shardsim::in_bf16_tail(p_, m_.layers, layer); }
  /// Bytes per element of a GEMM operand at `dtype`, block scales included.
  double operand_bytes(DType dtype) const { return shardsim::operand_bytes(dtype, p_.fp8_recipe); }
  /// `batch` products [m,k]·[k,n]; `model_fraction` is the part of the work
  /// that is model work (the rest: replicated KV heads, vocabulary padding,
  /// masked attention scores, expert capacity padding). Its working set is
  /// the activations it reads and writes.
  OpId matmul(std::string_view name, int32_t layer, Pass pass, int64_t m, int64_t n, int64_t k,
              const std::vector<OpId>& deps, double model_fraction = 1.0, int64_t batch = 1,
              Operands operands = Operands::kWeights, Precision precision = Precision::kLinear) {
    Op o = matmul_op(base(name, layer, pass, kC), batch, m, n, k, matmul_dtype(operands, precision, layer));
    o.model_flops = o.flops * model_share(pass, model_fraction);
    // fp8 gradient GEMMs promote partial sums to fp32 (Plan::fp8_backward_fast_accum).
    o.split_accumulator = pass == Pass::kBackward && o.dtype == DType::kFp8 && !p_.fp8_backward_fast_accum;
    // Operands are read at the GEMM's own precision: a bf16 GEMM of an fp8
    // plan (the head, the router, attention's products) reads bf16.
    const double w = operand_bytes(o.dtype);
    auto bytes = [w](int64_t elems) { return static_cast<int64_t>(std::llround(static_cast<double>(elems) * w)); };
    o.bytes_read = Bytes(bytes(batch * (m * k + k * n)));
    o.bytes_written = Bytes(batch * m * n * kAct);
    const int64_t a = bytes(batch * m * k), bmat = bytes(batch * k * n), c = batch * m * n * kAct;
    o.mem_transient = Bytes(operands == Operands::kWeights      ? a + c
                            : operands == Operands::kWeightGrad ? a + bmat
                                                                : a + bmat + c);
    return rowwise_rescale(b_.add(o, deps), o, layer, pass, batch * m * n);
  }

  /// Plan::pp_keep_outputs: each chunk's sent output lives until its backward.
  bool keeps_stage_outputs() const { return p_.pp_keep_outputs && p_.pp > 1; }
  int64_t stage_output_bytes() const { return Ts_ * h_ * kAct; }

  OpId memop(ComputeKind kind, std::string_view name, int32_t layer, Pass pass, int64_t elems, int64_t read_b,
             int64_t write_b, double flops_per_elem, const std::vector<OpId>& deps);

  // Attention (lower_attention.cc).
  /// The attention node `n` of layer L (kAttn, or with unfused attention one
  /// of kScores, kSoftmax, kDropout, kAttn) for the forward pass or its
  /// recomputation.
  OpId attention_node(Node n, int32_t layer, Pass pass, const std::vector<OpId>& deps);
  /// The attention core's backward from the gradient of its output.
  OpId attention_backward(int32_t layer, OpId dep);
  /// MLA's down projection of the queries (kQa) or of the keys and values
  /// (kKva), and its latent's norm.
  OpId mla_down(Node n, int32_t layer, Pass pass, const std::vector<OpId>& deps);
  OpId ring_attention(int32_t layer, Pass pass, const std::vector<OpId>& deps);
  OpId allgather_cp_attention(int32_t layer, Pass pass, const std::vector<OpId>& deps);
  OpId pytorch_cp_attention(int32_t layer, Pass pass, const std::vector<OpId>& deps, bool gathered);
  OpId a2a_cp_attention(int32_t layer, Pass pass, const std::vector<OpId>& deps);
  Op cp_attention_step(int32_t layer, Pass pass, int64_t read, int64_t write, double share = 0, int64_t queries = 0,
                       int64_t keys = 0);
  OpId fused_attention(int32_t layer, Pass pass, const std::vector<OpId>& deps);
  std::vector<OpId> repeat_kv(int32_t layer, Pass pass, const std::vector<OpId>& deps);
  OpId collective(CollectiveKind kind, uint8_t axes, StreamId stream, std::string_view name, int32_t layer, Pass pass,
                  int64_t bytes, DType dtype, const std::vector<OpId>& deps) {
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
  /// overlaps the weight-gradient matmul (Megatron-LM's async tensor-parallel
  /// all-reduce); without tp_grad_overlap it waits for the weight gradient
  /// too, as PyTorch autograd ran the linear layer's backward in 2021.
  OpId column_parallel_grad(std::string_view name, int32_t layer, OpId dgrad, OpId wgrad) {
    if (t_ == 1) return dgrad;
    return collective(p_.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, kTpAxis, kTpS,
                      name, layer, Pass::kBackward, T_ * h_ * kAct, DType::kBf16,
                      {dgrad, p_.tp_grad_overlap ? kNone : wgrad});
  }
  OpId row_parallel_grad(std::string_view name, int32_t layer, OpId prev) {
    if (t_ == 1 || !p_.sequence_parallel) return prev;
    return tp_coll(CollectiveKind::kAllGather, name, layer, Pass::kBackward, T_ * h_ * kAct, prev);
  }

  /// Pipeline transfer of one microbatch's boundary activation (or its
  /// gradient): T·h bf16 values, split over tp under sequence parallelism
  /// or with Megatron's scatter/gather (each rank sends its 1/tp slice).
  bool scatter_gather() const { return p_.p2p_scatter_gather && t_ > 1 && !p_.sequence_parallel; }
  int64_t boundary_bytes() const { return (scatter_gather() ? T_ / t_ : Ts_) * h_ * kAct; }
  /// Blocking p2p (Megatron-LM 2021-2022) runs sends and receives in the
  /// compute stream's order: compute waits for them and they for compute.
  StreamId p2p_stream(StreamId own) const { return p_.p2p_blocking ? kC : own; }
  OpId send(Pass pass, OpId dep) {
    const bool next = pass == Pass::kForward;
    Op o = base(next ? "pp send activation" : "pp send gradient", -1, pass,
                p2p_stream(next ? TrainStreams::kSendNext : TrainStreams::kSendPrev));
    o.kind = OpKind::kSend;
    o.peer = next ? 1 : -1;
    o.comm_bytes = Bytes(boundary_bytes());
    return b_.add(o, {dep});
  }
  OpId recv(Pass pass) {
    const bool from_prev = pass == Pass::kForward;
    Op o = base(from_prev ? "pp recv activation" : "pp recv gradient", -1, pass, p2p_stream(TrainStreams::kRecv));
    o.kind = OpKind::kRecv;
    o.peer = from_prev ? -1 : 1;
    o.comm_bytes = Bytes(boundary_bytes());
    return b_.add(o);
  }
  /// One step of a ring over `axis`: a send of `bytes` to the next member
  /// (after `deps`) and the matching receive from the previous one, on their
  /// own streams (ring attention's KV blocks, userbuffers' ring exchange;
  /// `holds_sms` false for copy-engine transfers); or, with `send_peer` and
  /// `recv_peer`, an exchange with the members that far along `axis`
  /// (wrapping round). Returns the receive.
  OpId ring_exchange(std::string_view send_name, std::string_view recv_name, int32_t layer, Pass pass, MeshAxis axis,
                     StreamId send_stream, StreamId recv_stream, int64_t bytes, const std::vector<OpId>& deps,
                     bool holds_sms = true, int8_t send_peer = 1, int8_t recv_peer = -1);
  /// A receive and, with scatter/gather, the all-gather over tp of the
  /// received slices (Megatron's gather_split_1d_tensor).
  OpId received(Pass pass) {
    const OpId r = recv(pass);
    if (!scatter_gather()) return r;
    return tp_coll(CollectiveKind::kAllGather,
                   pass == Pass::kForward ? "pp activation all-gather" : "pp gradient all-gather", -1, pass,
                   T_ * h_ * kAct, r);
  }

  // ---- FSDP parameter gathers ---------------------------------------------------
  /// The expert gather follows the dense one on the same stream, so the
  /// returned (last) op implies both.
  OpId gather(int64_t unit, Pass pass, OpId after);
  /// FSDP2's copy-out of a unit just gathered (fsdp_copy_out): one pass on
  /// the compute stream, issued when the unit is about to run, that reads
  /// the all-gather buffer and writes the unsharded parameters; the buffer
  /// is live beside them while it runs. Otherwise the gather itself.
  OpId copied_out(int64_t unit, OpId gathered, Pass pass);
  /// A unit FSDP keeps gathered from its forward to its backward although
  /// the plan reshards after the forward: with fsdp_keep_root, FSDP2's root
  /// (the embedding and the head: FSDP2 never reshards the root after its
  /// forward) and the model's last layer (torchtitan's
  /// reshard_after_forward = layer_id < n_layers - 1).
  bool kept_gathered(int64_t unit) const {
    return p_.fsdp_keep_root &&
           (unit == kEmbedUnit || unit == kHeadUnit || unit_layer(unit) == static_cast<int32_t>(m_.layers) - 1);
  }
  /// The chunk of units `us` holds FSDP2's whole root (fsdp_keep_root): the
  /// embedding first and the head last, gathered and reduced as one unit.
  bool root_in(const std::vector<int64_t>& us) const {
    return fsdp_ && p_.fsdp_keep_root && us.size() > 1 && us.front() == kEmbedUnit && us.back() == kHeadUnit;
  }
  /// FSDP frees a unit's gathered parameters after its forward (and gathers
  /// them again for its backward).
  bool resharded_after_forward(int64_t unit) const {
    return p_.fsdp_reshard_after_forward && p_.fsdp_sync_each_microbatch && !kept_gathered(unit);
  }
  /// Bytes of a unit's gathered parameters (bf16, its experts included).
  int64_t gathered_bytes(int64_t unit) const {
    return (unit_params(unit) + (expert_shards_ > 1 ? unit_expert_params(unit) : 0)) * param_gather_bytes();
  }

  // ---- layers ----------------------------------------------------------------------
  // Elementwise work (lower_elementwise.cc).
  bool eager() const { return !p_.compile; }
  /// torchtitan compiles the transformer blocks only: the final norm runs
  /// eager under torch.compile too, and so does the loss until torchtitan
  /// compiles it (torch_compiled).
  bool loss_eager() const { return eager() || p_.loss_kernel == Plan::LossKernel::kTorch; }
  bool head_eager() const { return loss_eager() || p_.loss_kernel == Plan::LossKernel::kTorchCompiled; }
  Op norm_op(std::string_view name, int32_t layer, Pass pass) { return norm_op(name, layer, pass, eager()); }
  Op norm_op(std::string_view name, int32_t layer, Pass pass, bool eager_kernels) {
    return norm_op(name, layer, pass, eager_kernels, Ts_, h_);
  }
  /// A norm over `rows` of `width` (MLA's latents: the whole sequence on
  /// every tp rank).
  Op norm_op(std::string_view name, int32_t layer, Pass pass, bool eager_kernels, int64_t rows, int64_t width);
  /// The rotation of q and k (under MLA: of their rotary parts, with the
  /// shared rotary key broadcast into every head's key: one pass over q
  /// and k all the same).
  OpId rope_op(int32_t layer, Pass pass, const std::vector<OpId>& deps);
  /// The MLP's activation (SwiGLU, GeGLU, GeLU, squared ReLU, ReLU).
  OpId act_op(int32_t layer, Pass pass, const std::vector<OpId>& deps);
  /// Keys' and values' elements per token for `heads` heads.
  int64_t kv_width(int64_t heads) const { return heads * (d_ + dv_); }
  /// Attention FLOPs of one layer's forward on this device's microbatch:
  /// QK^T and AV, 2·(qk + v head widths) per causal (or windowed) pair and
  /// head of this rank (4·heads·head_dim without MLA).
  double attention_flops(int32_t layer) const {
    return 2.0 * static_cast<double>(p_.microbatch_size) * static_cast<double>(a_ * (d_ + dv_)) *
           m_.attention_pairs(layer, p_.seq_len);
  }
  /// FLOPs splash attention executes for one layer's pass (lower_attention.cc).
  double splash_flops(int32_t layer, bool backward) const;
  /// Share of a projection's work that is model work: when tp exceeds
  /// kv_heads each rank computes a whole (replicated) KV head.
  double kv_model_fraction() const {
    return static_cast<double>(m_.kv_heads * d_) / static_cast<double>(t_) / static_cast<double>(kv_ * d_);
  }
  double qkv_model_fraction() const {
    const double model =
        static_cast<double>(a_ * d_) + 2.0 * static_cast<double>(m_.kv_heads * d_) / static_cast<double>(t_);
    return model / static_cast<double>((a_ + 2 * kv_) * d_);
  }

  // ---- the layer as a graph (layer_graph.h) ------------------------------------------
  /// Op ids of a layer's nodes in one pass (kNone where not emitted).
  struct LayerOps {
    std::array<OpId, kNodes> op;
    LayerOps() { op.fill(kNone); }
    OpId operator[](Node n) const { return op[idx(n)]; }
  };
  const LayerGraph& graph(int32_t L) const {
    if (in_bf16_tail(L)) return m_.is_moe_layer(L) ? *moe_tail_graph_ : *dense_tail_graph_;
    return m_.is_moe_layer(L) ? *moe_graph_ : *dense_graph_;
  }
  /// The layer's plan: the policy's, or keeping everything where the policy
  /// applies to some layers only (recompute_applies).
  const RecomputePlan& recompute_plan(int32_t L) const {
    const bool moe = m_.is_moe_layer(L);
    const bool applies = recompute_applies(p_, L, index_in_chunk(L));
    if (in_bf16_tail(L)) {
      if (!applies) return moe ? moe_tail_keep_plan_ : dense_tail_keep_plan_;
      return moe ? moe_tail_plan_ : dense_tail_plan_;
    }
    if (!applies) return moe ? moe_keep_plan_ : dense_keep_plan_;
    return moe ? moe_plan_ : dense_plan_;
  }
  /// Layer L's place in its pipeline chunk (0 for the chunk's first).
  int64_t index_in_chunk(int64_t L) const {
    for (size_t g = 0; g < layout_.first.size(); ++g) {
      if (L >= layout_.first[g] && L < layout_.first[g] + layout_.count[g]) return L - layout_.first[g];
    }
    return 0;
  }
  /// Emits node `n` of layer L (the dense nodes here, attention in
  /// lower_attention.cc, the MoE nodes in lower_moe.cc); returns its last op.
  OpId emit_node(Node n, int32_t L, Pass pass, const std::vector<OpId>& deps);
  /// Emits the nodes of `emit`, in forward order, for the forward pass or
  /// its recomputation. `in`: the op that made the layer's input (forward)
  /// or that starts its backward (recomputation); `weights`: its FSDP
  /// gather. Kept outputs are charged to memory until the layer's backward
  /// ends. Returns the last node's op.
  OpId emit_layer(int32_t L, Pass pass, const NodeSet& emit, OpId in, OpId weights, LayerOps& ops);
  OpId cast_op(int32_t L, Pass pass, double read, double written, const std::vector<OpId>& deps);
  /// After GEMM `gemm` (op `o`, `elems` outputs): torchao's row-wise rescale
  /// pass where its recipe takes one, else `gemm` (lower_layer.cc).
  OpId rowwise_rescale(OpId gemm, const Op& o, int32_t layer, Pass pass, int64_t elems);
  OpId layer_forward(int32_t L, OpId in, OpId weights) {
    LayerOps ops;
    return emit_layer(L, Pass::kForward, graph(L).present_nodes(), in, weights, ops);
  }
  /// Offloaded tensors (plan.recompute_offload): layer L's go to the host
  /// when its forward ends (`done`), and come back once the backward before
  /// its own starts (`issue_after`); its backward's next compute op waits.
  void offload(int32_t L, OpId done);
  void reload(int32_t L, OpId issue_after);
  /// One layer's backward from the gradient at its output (`cur`). Returns
  /// the last op and sets `wgrad` to its last weight-gradient op.
  OpId layer_backward(int32_t L, OpId cur, OpId weights, OpId& wgrad);
  /// The dense MLP's backward (from the gradient at its output); returns the
  /// gradient at its input and sets wgrad.
  /// MLA's projections backward, from the queries', keys' and values'
  /// gradients `x`: sets the input gradient `dg` and the last weight
  /// gradient `wg`.
  void mla_backward(int32_t layer, OpId x, const LayerOps& rec, Node ln1_out, OpId& dg, OpId& wg);
  OpId mlp_backward(int32_t L, OpId cur, OpId weights, const LayerOps& rec, OpId& wgrad);

  // Tensor-parallel communication overlap (Transformer Engine userbuffers).
  bool userbuffers() const { return p_.tp_comm_overlap && t_ > 1 && p_.sequence_parallel; }
  /// An all-gather over tp pipelined with the GEMM that consumes it (ring
  /// exchange): the GEMM runs in tp chunks of m/tp rows; chunk 0 uses the
  /// local shard, chunk i the shard the i-th ring step brought, sent on by
  /// copy engines (no SMs). Returns the last chunk; `last_recv` is the
  /// receive after which the whole gathered tensor is present.
  OpId ub_gather_matmul(std::string_view name, int32_t L, Pass pass, int64_t m, int64_t n, int64_t k,
                        const std::vector<OpId>& deps, double model_fraction, OpId& last_recv);
  /// One GEMM of those that read a ring-gathered input: its name, output
  /// width and model share.
  struct RingGemm {
    std::string_view name;
    int64_t n;
    double model_fraction;
  };
  /// The ring exchange of an input under every GEMM that reads it, each
  /// shard multiplied by all of them as it arrives; returns each GEMM's last
  /// chunk.
  std::vector<OpId> ub_gather_matmuls(const std::vector<RingGemm>& gemms, int32_t L, Pass pass, int64_t m, int64_t k,
                                      const std::vector<OpId>& deps, OpId& last_recv);
  /// Forward nodes whose GEMMs read a norm output gathered by a ring
  /// exchange under userbuffers (or PyTorch's async TP), emitted together at
  /// the first of them: q, k, v (not under MLA, whose down projections read
  /// the plain gathered input) and the MLP's gate and up. Empty for others.
  NodeSet ring_group(const LayerGraph& g, Node n) const;
  /// The GEMM of a projection that reads the (gathered) norm output, h_
  /// deep: q, k, v (all three when fused) and gate, up (both when fused);
  /// not MLA's, whose up projections read their latents.
  RingGemm projection(Node n) const;
  /// A GEMM whose output is reduce-scattered over tp in pipelined chunks
  /// (userbuffers' pipeline method): the GEMM runs in tp_comm_chunks chunks
  /// and each chunk's reduce-scatter (holding tp_comm_overlap_sms SMs)
  /// overlaps the next chunk. Returns the last reduce-scatter.
  OpId ub_matmul_scatter(std::string_view name, std::string_view rs_name, int32_t L, Pass pass, int64_t m, int64_t n,
                         int64_t k, const std::vector<OpId>& deps);

  /// Residual add (with dropout: Megatron's fused bias-dropout-add, which
  /// also writes a 1-byte mask).
  OpId residual(int32_t L, Pass pass, const std::vector<OpId>& deps);

  // fp8 quantisation (lower_layer.cc).
  /// Elements of a linear node's input, output and weight on this device,
  /// and whether its input comes from a norm (which Transformer Engine's
  /// LayerNormLinear quantises inside the norm kernel).
  struct LinearShape {
    int64_t in = 0, out = 0, weight = 0;
    bool norm_fed = false;
  };
  LinearShape linear_shape(Node n) const;
  /// The quantisation kernels a linear node's forward (or recomputation)
  /// pays before its GEMM under the plan's fp8 recipe; returns the op the
  /// GEMM then depends on (`deps` unchanged when there is none).
  std::vector<OpId> fp8_forward_casts(Node n, int32_t L, Pass pass, const std::vector<OpId>& deps);
  OpId fp8_backward_casts(Node n, int32_t L, OpId dep);  ///< the same before a linear node's dgrad and wgrad GEMMs

  // Mixture of experts (lower_moe.cc).
  int64_t moe_slots() const;
  int64_t slots_per_expert() const;
  OpId experts_matmul(std::string_view name, int32_t L, Pass pass, int64_t m, int64_t n, int64_t k,
                      const std::vector<OpId>& deps, Operands operands = Operands::kWeights);
  OpId all_to_all(std::string_view name, int32_t L, Pass pass, const std::vector<OpId>& deps);
  OpId expert_bias(int32_t L, Pass pass, int64_t elems, bool down, OpId x);  ///< moe_bias_passes
  double a2a_copies() const;
  OpId moe_dispatch(int32_t L, Pass pass, const std::vector<OpId>& deps);
  OpId moe_combine(int32_t L, Pass pass, const std::vector<OpId>& deps);
  OpId moe_node(Node n, int32_t L, Pass pass, const std::vector<OpId>& deps);
  int64_t shared_width() const;
  std::vector<OpId> shared_gather(std::string_view name, int32_t L, Pass pass, const std::vector<OpId>& deps);
  OpId shared_scatter(int32_t L, Pass pass, OpId x);
  OpId moe_backward(int32_t L, OpId cur, OpId weights, const LayerOps& rec, OpId& wgrad);
  // Chunks, gradient reduction and the optimizer (stage_lowering.cc).
  /// A gradient bucket of one parameter group (dense, or experts, which are
  /// replicated over fewer ranks).
  struct Bucket {
    int64_t bytes = 0;
    int64_t params = 0;
    OpId dep = kNone;
    std::vector<int64_t> flushed;  // parameters per bucket of the last microbatch
  };
  void forward(int32_t local);
  OpId embedding_forward(OpId weights);
  OpId head_forward(OpId cur, OpId weights);
  void backward(int32_t local, bool last_microbatch);
  OpId head_backward(OpId cur, OpId weights, OpId& wgrad);
  OpId embedding_backward(OpId cur);
  void reduce_unit(int64_t u, OpId wgrad, bool last_microbatch);
  void reduce_group(Bucket& b, int64_t params, uint8_t axes, int64_t replicas, int64_t u, OpId wgrad,
                    bool last_microbatch);
  void flush(Bucket& b, uint8_t axes);
  void flush_bucket();
  void optimizer();
  void gather_params_at_start();
  /// A unit's index over the stage's chunks, for per-unit tables.
  size_t unit_index(int32_t local, size_t i) const {
    size_t base = 0;
    for (int32_t c = 0; c < local; ++c) base += units(c).size();
    return base + i;
  }
  /// Parameter all-gathers move bf16 weights, or fp8 ones with fp8_param_gather.
  int64_t param_gather_bytes() const { return p_.fp8_param_gather ? 1 : kAct; }
  DType param_gather_dtype() const { return p_.fp8_param_gather ? DType::kFp8 : DType::kBf16; }
  static constexpr int64_t kEmbedUnit = -1;
  static constexpr int64_t kHeadUnit = -2;
  const ModelSpec& m_;
  const Plan& p_;
  const ChunkLayout& layout_;
  const int64_t stage_;
  ProgramBuilder b_;
  /// d_: each query and key head's width; dv_: each value and output
  /// head's (they differ under MLA).
  int64_t t_, T_, Ts_, a_, kv_, d_, dv_, h_, f_, up_n_, v_;
  int64_t chunks_ = 1;
  int64_t cp_ = 1;
  int64_t shards_ = 1;                   // data-parallel replicas of the dense parameters: dp·cp
  int64_t expert_shards_ = 1;            // replicas of the expert parameters: expert_replicas()
  uint8_t expert_axes_ = kExpertDpAxis;  // the axes they are replicated over
  int64_t local_experts_ = 0, moe_dense_params_ = 0, moe_expert_params_ = 0;
  int64_t replicas_ = 1;     // hybrid FSDP replicas (1: plain FSDP)
  uint8_t fsdp_axes_ = 0;    // where FSDP gathers and reduce-scatters
  int64_t fsdp_shards_ = 1;  // ranks a parameter is sharded over under FSDP
  int32_t v_chunks_ = 1;
  bool fsdp_ = false;
  int64_t layer_params_ = 0, embed_params_ = 0, head_params_ = 0;
  int64_t tied_copy_ = 0;     // the tied embedding table a first or last stage holds (pp > 1)
  double vocab_model_ = 1.0;  // model share of the padded vocabulary
  int32_t mb_ = 0;
  std::map<std::pair<int32_t, int32_t>, OpId> offloaded_;   // (microbatch, layer) -> its copy to the host
  std::vector<std::vector<OpId>> fwd_end_;                  // [chunk][microbatch]
  std::vector<std::vector<std::vector<OpId>>> fwd_gather_;  // [chunk][microbatch][unit]: FSDP forward gathers
  std::vector<OpId> param_gather_;                          // [unit_index]: overlapped ZeRO-1/2 parameter all-gathers
  std::vector<std::pair<int64_t, uint8_t>> deferred_;       // gradient buckets reduced after the backward
  Bucket dense_, expert_;
  std::unique_ptr<LayerGraph> dense_graph_, moe_graph_, dense_tail_graph_, moe_tail_graph_;
  RecomputePlan dense_plan_, moe_plan_, dense_keep_plan_, moe_keep_plan_;
  RecomputePlan dense_tail_plan_, moe_tail_plan_, dense_tail_keep_plan_, moe_tail_keep_plan_;
  bool record_buckets_ = false;                    // flushed buckets feed the ZeRO-1/2 parameter all-gathers
  int64_t rs_held_bytes_ = 0, rs_held_unit_ = -1;  // FSDP2's reduce-scatter inputs held, their unit
  mutable std::array<double, 6> splash_pairs_{-1, -1, -1, -1, -1, -1};  // (windowed, kernel) -> block pairs
};

}  // namespace shardsim::detail
