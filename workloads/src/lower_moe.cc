// The mixture-of-experts MLP of a lowered layer: routing, expert-parallel
// all-to-alls, grouped expert matmuls and shared experts, as nodes of the
// layer graph (layer_graph.h).
#include "stage_lowering.h"

namespace shardsim::detail {

// ---- mixture of experts ---------------------------------------------------------------
// Each device routes its own tokens (the sequence-parallel shard when tp >
// 1): a router matmul and top-k, a permutation into per-expert buffers of
// capacity_factor · tokens · top_k / experts slots, an all-to-all over ep
// to the devices holding the experts (dispatch), the local experts as one
// grouped SwiGLU matmul, an all-to-all back (combine) and the weighted
// un-permutation (Lepikhin et al. 2020, GShard; Megatron-LM's MoE layer).
// Shared experts see every token and run during the dispatch.
int64_t StageLowering::moe_slots() const {
  return LayerShape(m_, p_).moe_slots(m_);
}
/// Token slots each local expert processes (balanced routing).
int64_t StageLowering::slots_per_expert() const {
  return std::max<int64_t>(1, (moe_slots() * p_.ep + m_.moe.experts - 1) / m_.moe.experts);
}
/// The local experts' matmuls: one grouped GEMM, or one GEMM per expert
/// (moe_grouped_gemm false); padding slots are not model work.
OpId StageLowering::experts_matmul(std::string_view name, int32_t L, Pass pass, int64_t m, int64_t n, int64_t k,
                                   const std::vector<OpId>& deps, Operands operands) {
  const double useful = std::min(
      1.0, static_cast<double>(Ts_ * m_.moe.top_k) / static_cast<double>(slots_per_expert() * m_.moe.experts / p_.ep));
  if (p_.moe_grouped_gemm) return matmul(name, L, pass, m, n, k, deps, useful, local_experts_, operands);
  OpId x = kNone;
  for (int64_t e = 0; e < local_experts_; ++e) {
    x = matmul(name, L, pass, m, n, k, e == 0 ? deps : std::vector<OpId>{x}, useful, 1, operands);
  }
  return x;
}
/// The experts' biases over `elems` output values of a grouped GEMM, in
/// passes of their own (Plan::moe_bias_passes, NeMo AutoModel's
/// GroupedExperts._apply_bias, components/moe/layers.py at 01926a5c): after
/// the up projection a per-expert t + b and the concatenation (each reads
/// and writes the bf16 output); after the down projection t + b·p with the
/// routing probability p in fp32 (b·p written in fp32, the sum read and
/// written in fp32), the concatenation in fp32 and the cast back to bf16.
/// Backward (`down` the down projection's): the up bias's gradient sums its
/// output gradient over the rows; the down one casts the bf16 gradient up
/// to fp32, back down for the GEMM's input, and reduces it twice (the bias's
/// gradient, weighted by p, and p's, weighted by b).
OpId StageLowering::expert_bias(int32_t L, Pass pass, int64_t elems, bool down, OpId x) {
  if (!p_.moe_bias_passes || !m_.bias) return x;
  const bool backward = pass == Pass::kBackward;
  const char* name = down ? (backward ? "experts down bias grad" : "experts down bias")
                          : (backward ? "experts up bias grad" : "experts up bias");
  if (!down) {
    return backward
               ? memop(ComputeKind::kElementwise, name, L, pass, elems, elems * kAct, 0, 1, {x})
               : memop(ComputeKind::kElementwise, name, L, pass, elems, 2 * elems * kAct, 2 * elems * kAct, 1, {x});
  }
  constexpr int64_t kF32 = 4;
  return backward ? memop(ComputeKind::kElementwise, name, L, pass, elems, elems * (kAct + 3 * kF32),
                          elems * (kF32 + kAct), 4, {x})
                  : memop(ComputeKind::kElementwise, name, L, pass, elems, elems * (kAct + 3 * kF32),
                          elems * (3 * kF32 + kAct), 3, {x});
}

/// Tokens to the experts' devices: an all-to-all of the routed slots over ep
/// (Megatron's alltoall dispatcher), or an all-gather of every token over
/// ep (its allgather dispatcher; each rank keeps the ones its experts got);
/// then, with experts split over tp, an all-gather over tp so that every
/// shard of an expert sees its tokens.
OpId StageLowering::moe_dispatch(int32_t L, Pass pass, const std::vector<OpId>& deps) {
  std::vector<OpId> d = deps;
  if (p_.ep > 1) {
    if (p_.moe_dispatcher == Plan::MoeDispatcher::kAllGather) {
      d = {collective(CollectiveKind::kAllGather, expert_group_axes(p_), kEpS, "moe dispatch all-gather", L, pass,
                      Ts_ * h_ * kAct * p_.ep, DType::kBf16, d)};
    } else {
      d = {all_to_all("moe dispatch", L, pass, d)};
    }
  }
  if (p_.expert_tp > 1) {
    d = {collective(CollectiveKind::kAllGather, kTpAxis, kTpS, "moe expert all-gather", L, pass,
                    moe_slots() * h_ * kAct * p_.expert_tp, DType::kBf16, d)};
  }
  return d.empty() ? kNone : d.front();
}
/// The mirror of moe_dispatch: reduce-scatter over tp, then the all-to-all
/// back (or a reduce-scatter over ep).
OpId StageLowering::moe_combine(int32_t L, Pass pass, const std::vector<OpId>& deps) {
  std::vector<OpId> d = deps;
  if (p_.expert_tp > 1) {
    d = {collective(CollectiveKind::kReduceScatter, kTpAxis, kTpS, "moe expert reduce-scatter", L, pass,
                    moe_slots() * h_ * kAct * p_.expert_tp, DType::kBf16, d)};
  }
  if (p_.ep > 1) {
    if (p_.moe_dispatcher == Plan::MoeDispatcher::kAllGather) {
      d = {collective(CollectiveKind::kReduceScatter, expert_group_axes(p_), kEpS, "moe combine reduce-scatter", L,
                      pass, Ts_ * h_ * kAct * p_.ep, DType::kBf16, d)};
    } else {
      d = {all_to_all("moe combine", L, pass, d)};
    }
  }
  return d.empty() ? kNone : d.front();
}
/// Token copies an all-to-all moves: one per routed slot, or with DeepEP's
/// per-rank deduplication one per distinct destination rank: for balanced
/// random routing ep·(1 - (1 - 1/ep)^k) ranks per token (each of the k
/// experts on a given rank with probability 1/ep), for contiguous experts
/// 1 + (k - 1)/(E/ep) on average (k consecutive experts over blocks of E/ep
/// at a uniformly random offset).
double StageLowering::a2a_copies() const {
  if (!p_.moe_dedup || p_.ep <= 1) return static_cast<double>(moe_slots());
  const double k = static_cast<double>(m_.moe.top_k), ep = static_cast<double>(p_.ep);
  const double per_rank = static_cast<double>(m_.moe.experts) / ep;
  double ranks;
  if (p_.moe_routing == Plan::MoeRouting::kContiguous) {
    ranks = std::min(ep, 1.0 + (k - 1.0) / per_rank);
  } else {
    ranks = ep * (1.0 - std::pow(1.0 - 1.0 / ep, k));
  }
  return static_cast<double>(Ts_) * std::min(ranks, k) * m_.moe.capacity_factor;
}
OpId StageLowering::all_to_all(std::string_view name, int32_t L, Pass pass, const std::vector<OpId>& deps) {
  return collective(CollectiveKind::kAllToAll, expert_group_axes(p_), kEpS, name, L, pass,
                    static_cast<int64_t>(std::llround(a2a_copies())) * h_ * kAct, DType::kBf16, deps);
}

/// The shared experts' hidden width on this tp rank.
int64_t StageLowering::shared_width() const {
  return (m_.moe.shared_experts * m_.moe.expert_ffn_hidden + t_ - 1) / t_;
}

/// The shared MLP reads the whole sequence: its input (forward) or output
/// gradient (backward) all-gathered over tp (an MoE layer under tp > 1 runs
/// with sequence parallelism: plan_checks.cc).
std::vector<OpId> StageLowering::shared_gather(std::string_view name, int32_t L, Pass pass,
                                               const std::vector<OpId>& deps) {
  if (t_ == 1) return deps;
  return {collective(CollectiveKind::kAllGather, kTpAxis, kTpS, name, L, pass, T_ * h_ * kAct, DType::kBf16, deps)};
}

/// The shared MLP's row-parallel output (forward) or input gradient
/// (backward) summed over tp and scattered back to the sequence shards.
OpId StageLowering::shared_scatter(int32_t L, Pass pass, OpId x) {
  if (t_ == 1) return x;
  return collective(CollectiveKind::kReduceScatter, kTpAxis, kTpS, "shared experts reduce-scatter", L, pass,
                    T_ * h_ * kAct, DType::kBf16, {x});
}

OpId StageLowering::moe_node(Node n, int32_t L, Pass pass, const std::vector<OpId>& deps) {
  const int64_t E = m_.moe.experts, k = m_.moe.top_k, fe = m_.moe.expert_ffn_hidden;
  const int64_t slots = moe_slots(), etp = p_.expert_tp;
  const int64_t me = slots_per_expert() * etp, fel = fe / etp;  // tokens and width of a local expert shard
  // Shared experts: an MLP over tp like the dense one (Megatron-Core's
  // SharedExpertMLP, column- then row-parallel on the tp group), on the
  // sequence gathered under sequence parallelism.
  const int64_t fsl = shared_width();
  const int64_t e = local_experts_ * me * fel;
  switch (n) {
    case Node::kRouter:
      return matmul("router", L, pass, Ts_, E, h_, deps, 1.0, 1, Operands::kWeights, Precision::kHigh);
    case Node::kTopk:
      return memop(ComputeKind::kSoftmax, "router top-k", L, pass, Ts_ * E, Ts_ * E * kAct, Ts_ * k * 8, 4, deps);
    case Node::kPermute:
      return memop(ComputeKind::kElementwise, "moe permute", L, pass, slots * h_, Ts_ * h_ * kAct, slots * h_ * kAct, 0,
                   deps);
    case Node::kDispatch:
      return moe_dispatch(L, pass, deps);
    case Node::kSUp: {
      const std::vector<OpId> in = shared_gather("shared experts all-gather", L, pass, deps);
      return matmul("shared experts up", L, pass, T_, 2 * fsl, h_, in);
    }
    case Node::kSAct:
      return memop(ComputeKind::kElementwise, "swiglu", L, pass, T_ * fsl, 2 * T_ * fsl * kAct, T_ * fsl * kAct, 8,
                   deps);
    case Node::kSDown:
      return shared_scatter(L, pass, matmul("shared experts down", L, pass, T_, h_, fsl, deps));
    case Node::kEUp:
      return expert_bias(L, pass, 2 * e, false, experts_matmul("experts up", L, pass, me, 2 * fel, h_, deps));
    case Node::kEAct:
      return memop(ComputeKind::kElementwise, "swiglu", L, pass, e, 2 * e * kAct, e * kAct, 8, deps);
    case Node::kEDown:
      return expert_bias(L, pass, local_experts_ * me * h_, true,
                         experts_matmul("experts down", L, pass, me, h_, fel, deps));
    case Node::kCombine:
      return moe_combine(L, pass, deps);
    case Node::kUnpermute:
      return memop(ComputeKind::kElementwise, "moe unpermute", L, pass, Ts_ * h_, slots * h_ * kAct + Ts_ * k * 4,
                   Ts_ * h_ * kAct, static_cast<double>(k), deps);
    default:
      break;
  }
  SHARDSIM_ASSERT(false, "an MoE node has an op");
  return kNone;
}

/// Backward of the MoE block from the gradient at its output; `wgrad` is
/// set to its last weight-gradient op. `rec` holds the recomputed nodes.
OpId StageLowering::moe_backward(int32_t L, OpId cur, OpId weights, const LayerOps& rec, OpId& wgrad) {
  const Pass pass = Pass::kBackward;
  const LayerGraph& g = graph(L);
  const int64_t E = m_.moe.experts, k = m_.moe.top_k, fe = m_.moe.expert_ffn_hidden;
  const int64_t slots = moe_slots(), etp = p_.expert_tp;
  const int64_t me = slots_per_expert() * etp, fel = fe / etp;
  const Node expert_in = g.present(Node::kDispatch) ? Node::kDispatch : Node::kPermute;
  const Node expert_out = g.present(Node::kCombine) ? Node::kCombine : Node::kEDown;
  OpId y = memop(ComputeKind::kElementwise, "moe unpermute", L, pass, slots * h_, Ts_ * h_ * kAct + Ts_ * k * 4,
                 slots * h_ * kAct, 1, {cur, weights, rec[expert_out], rec[Node::kTopk]});
  // Backward of the combine: the all-to-all back (or an all-gather over
  // ep), then the gather over tp: moe_dispatch's pattern.
  y = moe_dispatch(L, pass, {y});
  OpId shared = kNone;
  if (m_.moe.shared_experts > 0) {
    // The shared MLP's backward over tp: the output gradient gathered (the
    // reduce-scatter's transpose), the input re-gathered for the up
    // projection's weight gradient, the input gradient reduced.
    const int64_t fsl = shared_width();
    const OpId g =
        fp8_backward_casts(Node::kSDown, L, shared_gather("shared experts all-gather", L, pass, {cur}).front());
    shared = matmul("shared experts down dgrad", L, pass, T_, fsl, h_, {g});
    matmul("shared experts down wgrad", L, pass, fsl, h_, T_, {g, rec[Node::kSAct]}, 1.0, 1, Operands::kWeightGrad);
    shared = memop(ComputeKind::kElementwise, "swiglu", L, pass, T_ * fsl, 3 * T_ * fsl * kAct, 2 * T_ * fsl * kAct, 12,
                   {shared, rec[Node::kSUp]});
    shared = fp8_backward_casts(Node::kSUp, L, shared);
    const OpId sd = matmul("shared experts up dgrad", L, pass, T_, h_, 2 * fsl, {shared});
    std::vector<OpId> input = shared_gather("shared experts input all-gather", L, pass, {rec[Node::kLn2]});
    input.push_back(shared);
    matmul("shared experts up wgrad", L, pass, h_, 2 * fsl, T_, input, 1.0, 1, Operands::kWeightGrad);
    shared = shared_scatter(L, pass, sd);
  }
  y = expert_bias(L, pass, local_experts_ * me * h_, true, y);
  y = fp8_backward_casts(Node::kEDown, L, y);
  OpId dg = experts_matmul("experts down dgrad", L, pass, me, fel, h_, {y});
  experts_matmul("experts down wgrad", L, pass, fel, h_, me, {y, rec[Node::kEAct]}, Operands::kWeightGrad);
  const int64_t e = local_experts_ * me * fel;
  dg = memop(ComputeKind::kElementwise, "swiglu", L, pass, e, 3 * e * kAct, 2 * e * kAct, 12, {dg, rec[Node::kEUp]});
  dg = expert_bias(L, pass, 2 * e, false, dg);
  dg = fp8_backward_casts(Node::kEUp, L, dg);
  const OpId up_dg = experts_matmul("experts up dgrad", L, pass, me, h_, 2 * fel, {dg});
  const OpId up_wg =
      experts_matmul("experts up wgrad", L, pass, h_, 2 * fel, me, {dg, rec[expert_in]}, Operands::kWeightGrad);
  // The experts' linear layer is one autograd node whose backward makes the
  // input and the weight gradients before it returns (Transformer Engine's
  // GroupedLinear and Linear, PyTorch's grouped_mm), and the dispatcher's
  // all-to-all is the next node: it waits for the weight gradient too.
  // XLA schedules the two apart.
  std::vector<OpId> up = {up_dg};
  if (p_.framework != Framework::kMaxtext) up.push_back(up_wg);
  y = moe_combine(L, pass, up);
  y = memop(ComputeKind::kElementwise, "moe permute", L, pass, Ts_ * h_, slots * h_ * kAct, Ts_ * h_ * kAct, 1, {y});
  const OpId rd = matmul("router dgrad", L, pass, Ts_, h_, E, {y}, 1.0, 1, Operands::kWeights, Precision::kHigh);
  wgrad = matmul("router wgrad", L, pass, h_, E, Ts_, {y, rec[Node::kLn2]}, 1.0, 1, Operands::kWeightGrad,
                 Precision::kHigh);
  return memop(ComputeKind::kElementwise, "moe grad sum", L, pass, Ts_ * h_, 3 * Ts_ * h_ * kAct, Ts_ * h_ * kAct, 2,
               {rd, shared});
}

}  // namespace shardsim::detail
