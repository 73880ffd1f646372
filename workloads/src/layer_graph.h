// Private to workloads/: one Transformer layer's forward pass as a small
// dataflow graph, and what a recomputation policy makes of it.
//
// Every forward op of a layer is a node; a node reads the outputs of its input
// nodes and writes one tensor. The backward pass needs some of those tensors
// (a matmul's weight gradient needs its input, a norm's backward its input, a
// flash attention's backward q, k, v, its output and log-sum-exp). A
// recomputation policy says which tensors the forward keeps; the others that
// the backward needs are produced again, just before the layer's backward, by
// re-running the nodes that make them (and, recursively, the unkept inputs of
// those). So one description serves every policy of every framework: Megatron's
// none / selective / full, PyTorch's per-op selective checkpointing, JAX's
// remat policies, and their memory (the bytes of the kept tensors) comes from
// the same graph that the lowering emits.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardsim::detail {

/// The nodes of a layer in forward order. kIn is the layer's input (the
/// residual stream), produced by the layer before: no op, always kept (the
/// recomputation checkpoint of every policy).
enum class Node : uint8_t {
  kIn,
  kLn1,        ///< attention norm
  kAg1,        ///< sequence parallel: all-gather of the norm output over tp
  kQa,         ///< MLA: the queries' down projection and the norm of their latent
  kKva,        ///< MLA: the keys' and values' down projection (latent and shared rotary key), the latent's norm
  kQ,          ///< query projection (with kK, kV one fused kernel where the framework fuses them; MLA: up from kQa)
  kK,          ///< key projection (MLA: the up projection of kKva, one kernel with kV)
  kV,          ///< value projection
  kRope,       ///< rotary embedding of q and k
  kScores,     ///< unfused attention: Q·Kᵀ
  kSoftmax,    ///< unfused attention: scale, mask, softmax
  kDropout,    ///< unfused attention with dropout: dropout of the probabilities (mask kept)
  kAttn,       ///< attention output: flash (or ring) attention, or the unfused P·V
  kProj,       ///< attention output projection
  kRs1,        ///< tp > 1: all-reduce (reduce-scatter with sequence parallelism) of the projection
  kPostLn1,    ///< post-norms (Gemma 2, 3): norm of the attention block's output
  kRes1,       ///< residual add (with dropout: bias-dropout-add and its mask)
  kLn2,        ///< MLP norm
  kAg2,        ///< sequence parallel: all-gather of the MLP norm output
  kGate,       ///< SwiGLU gate projection (w1; one kernel with kUp where fused)
  kUp,         ///< up projection (w3; GeLU's only input projection)
  kAct,        ///< activation (SwiGLU: silu(gate)·up; GeLU)
  kDown,       ///< down projection
  kRs2,        ///< tp > 1: all-reduce or reduce-scatter of the down projection
  kRouter,     ///< MoE: router matmul
  kTopk,       ///< MoE: softmax and top-k of the router logits (the probabilities are kept)
  kPermute,    ///< MoE: tokens into per-expert capacity slots
  kDispatch,   ///< MoE, ep > 1: all-to-all to the experts' devices
  kSUp,        ///< MoE shared experts (during the dispatch): gate and up projections
  kSAct,       ///< MoE shared experts: SwiGLU
  kSDown,      ///< MoE shared experts: down projection
  kEUp,        ///< MoE: the local experts' gate and up projections (one grouped matmul)
  kEAct,       ///< MoE: the experts' SwiGLU
  kEDown,      ///< MoE: the experts' down projections
  kCombine,    ///< MoE, ep > 1: all-to-all back
  kUnpermute,  ///< MoE: weighted sum of each token's expert outputs
  kPostLn2,    ///< post-norms: norm of the MLP block's output
  kRes2,       ///< residual add (its output is the next layer's kIn; with dropout the mask is kept)
  kCount
};
inline constexpr int kNodes = static_cast<int>(Node::kCount);
using NodeSet = std::bitset<kNodes>;
constexpr size_t idx(Node n) {
  return static_cast<size_t>(n);
}
NodeSet nodes(std::initializer_list<Node> list);

/// The shape of a layer, as the graph needs it.
struct LayerConfig {
  bool tp = false;                 ///< tensor parallel (tp > 1): kRs1, kRs2
  bool sequence_parallel = false;  ///< with tp: kAg1, kAg2
  bool rope = true;
  bool unfused_attention = false;  ///< kScores, kSoftmax (and kDropout with dropout)
  bool dropout = false;
  bool swiglu = true;            ///< kGate
  bool moe = false;              ///< MoE nodes instead of kGate..kRs2
  bool expert_parallel = false;  ///< kDispatch, kCombine
  bool shared_experts = false;
  bool fused_qkv = true;      ///< q, k, v projections are one kernel
  bool fused_gate_up = true;  ///< gate and up projections are one kernel
  /// Multi-head latent attention (ModelSpec::mla): kKva, and kQa with a
  /// query latent; keys and values come up from kKva in one kernel.
  bool mla = false;
  bool q_latent = false;
  bool post_norms = false;  ///< kPostLn1, kPostLn2 (ModelSpec::post_norms)
  /// Output bytes of each node, per microbatch and device (what keeping it
  /// costs; dropout masks included with the node that makes them).
  std::array<int64_t, kNodes> bytes{};
};

/// Whose recomputation semantics apply (the framework's checkpointing).
enum class RecomputeMode : uint8_t {
  /// Megatron-LM: a checkpointed region re-runs whole (full: the layer;
  /// selective: the attention core).
  kRegion,
  /// PyTorch's non-reentrant checkpoint with early stop: the layer's forward
  /// re-runs from its start up to the last node whose output the backward
  /// needs; nodes whose outputs a selective policy kept are not re-run.
  kPrefix,
  /// JAX/XLA remat: exactly the nodes needed to rebuild the unkept tensors
  /// (XLA removes the rest as dead code).
  kClosure,
};

/// What a policy keeps of a layer's forward, and what runs again before the
/// layer's backward.
struct RecomputePlan {
  NodeSet kept;        ///< node outputs held from the forward to the backward (in HBM or, offloaded, in host memory)
  NodeSet offloaded;   ///< of those, the ones held in host memory
  NodeSet recomputed;  ///< nodes re-run before the backward
  NodeSet needed;      ///< node outputs the backward reads
};

class LayerGraph {
 public:
  explicit LayerGraph(const LayerConfig& c);
  const LayerConfig& config() const { return c_; }
  bool present(Node n) const { return present_[idx(n)]; }
  NodeSet present_nodes() const { return present_; }
  const std::vector<Node>& inputs(Node n) const { return inputs_[idx(n)]; }
  /// Node outputs the backward pass reads (weights aside).
  NodeSet needed_by_backward() const { return needed_; }
  /// Nodes that run as one kernel with `n` (fused projections).
  NodeSet fused_with(Node n) const;
  /// The matmul nodes in the order the layer's forward runs them.
  std::vector<Node> matmuls() const;
  int64_t bytes(Node n) const { return c_.bytes[idx(n)]; }
  int64_t bytes(const NodeSet& s) const;

  /// Recomputation given the node outputs a policy keeps (kIn is always
  /// kept), under a framework's semantics. `region` (kRegion only): the
  /// nodes of the checkpointed region, which re-runs whole.
  RecomputePlan plan(NodeSet kept, RecomputeMode mode, NodeSet region) const;

 private:
  void link(Node n, std::initializer_list<Node> in);
  LayerConfig c_;
  NodeSet present_;
  NodeSet needed_;
  std::array<std::vector<Node>, kNodes> inputs_;
};

/// A plan's recomputation policy in the terms of the graph.
struct RecomputeSpec {
  /// Which policy (Plan::recompute).
  enum class Policy : uint8_t { kNone, kSelective, kFull, kSaveDots, kSaveQkv, kOpSac, kCustom } policy = Policy::kNone;
  RecomputeMode mode = RecomputeMode::kRegion;
  /// Sequence parallelism keeps the norm outputs sharded and all-gathers
  /// them again for the weight gradients (Megatron-LM); false: the gathered
  /// tensor is kept (autograd keeps a matmul's input).
  bool sp_regather = true;
  /// kCustom: the node outputs kept.
  NodeSet custom;
  /// Node outputs kept in host memory (offloaded): kept, but not in HBM.
  NodeSet offloaded;
  /// kCustom under MaxText: the queries and keys its query_proj and
  /// key_proj name (kQ, kK), kept (custom_qk) or offloaded
  /// (offloaded_qk). MaxText tags them after the qk-norms and the rotary
  /// embedding (layers/attentions.py: checkpoint_name after
  /// apply_rotary_embedding): where the layer has the rotation and both
  /// are named, the rotation's output is what is held; otherwise the
  /// projections'.
  NodeSet custom_qk, offloaded_qk;
  /// kOpSac: the layer's GEMMs are ops the policy's save list names (aten
  /// matmuls). false: they run outside it and are recomputed, not kept.
  bool matmuls_saveable = true;
};

/// The nodes a tensor name of a "custom" policy (plan.recompute_keep) names,
/// or nullopt for an unknown name. Names follow MaxText's remat names
/// (decoder_layer_input, query_proj, key_proj, value_proj, qkv_proj, context,
/// out_proj, mlpwi_0, mlpwi_1, mlpwi, mlpwo) and shardsim's own (see
/// recompute_names()).
std::optional<NodeSet> nodes_named(std::string_view name);
/// The names nodes_named knows, comma-separated, for messages.
std::string recompute_names();

/// What `spec` keeps of a layer and re-runs before its backward.
RecomputePlan plan_recompute(const LayerGraph& g, const RecomputeSpec& spec);

}  // namespace shardsim::detail
