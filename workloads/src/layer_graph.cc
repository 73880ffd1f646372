#include "layer_graph.h"

namespace shardsim::detail {

NodeSet nodes(std::initializer_list<Node> list) {
  NodeSet s;
  for (Node n : list) s.set(idx(n));
  return s;
}

void LayerGraph::link(Node n, std::initializer_list<Node> in) {
  present_.set(idx(n));
  inputs_[idx(n)].assign(in.begin(), in.end());
}

LayerGraph::LayerGraph(const LayerConfig& c) : c_(c) {
  const bool sp = c.tp && c.sequence_parallel;
  // Attention block. A missing node passes its input through: without
  // sequence parallelism the projections read the norm output directly.
  const Node ln1_out = sp ? Node::kAg1 : Node::kLn1;
  link(Node::kLn1, {Node::kIn});
  if (sp) link(Node::kAg1, {Node::kLn1});
  if (c.mla) {
    if (c.q_latent) link(Node::kQa, {ln1_out});
    link(Node::kKva, {ln1_out});
    link(Node::kQ, {c.q_latent ? Node::kQa : ln1_out});
    link(Node::kK, {Node::kKva});
    link(Node::kV, {Node::kKva});
  } else {
    link(Node::kQ, {ln1_out});
    link(Node::kK, {ln1_out});
    link(Node::kV, {ln1_out});
  }
  std::vector<Node> qk = {Node::kQ, Node::kK};
  if (c.rope) {
    link(Node::kRope, {Node::kQ, Node::kK});
    qk = {Node::kRope};
  }
  auto with_v = [&](std::vector<Node> v) {
    v.push_back(Node::kV);
    return v;
  };
  if (c.unfused_attention) {
    present_.set(idx(Node::kScores));
    inputs_[idx(Node::kScores)] = qk;
    link(Node::kSoftmax, {Node::kScores});
    Node probs = Node::kSoftmax;
    if (c.dropout) {
      link(Node::kDropout, {Node::kSoftmax});
      probs = Node::kDropout;
    }
    link(Node::kAttn, {probs, Node::kV});
  } else {
    present_.set(idx(Node::kAttn));
    inputs_[idx(Node::kAttn)] = with_v(qk);
  }
  link(Node::kProj, {Node::kAttn});
  const Node proj_out = c.tp ? Node::kRs1 : Node::kProj;
  if (c.tp) link(Node::kRs1, {Node::kProj});
  // Post-norms: the block's output is normed before the residual add.
  const Node attn_out = c.post_norms ? Node::kPostLn1 : proj_out;
  if (c.post_norms) link(Node::kPostLn1, {proj_out});
  link(Node::kRes1, {Node::kIn, attn_out});
  // MLP block.
  link(Node::kLn2, {Node::kRes1});
  Node mlp_out;
  if (!c.moe) {
    const Node ln2_out = sp ? Node::kAg2 : Node::kLn2;
    if (sp) link(Node::kAg2, {Node::kLn2});
    if (c.swiglu) {
      link(Node::kGate, {ln2_out});
      link(Node::kUp, {ln2_out});
      link(Node::kAct, {Node::kGate, Node::kUp});
    } else {
      link(Node::kUp, {ln2_out});
      link(Node::kAct, {Node::kUp});
    }
    link(Node::kDown, {Node::kAct});
    mlp_out = Node::kDown;
    if (c.tp) {
      link(Node::kRs2, {Node::kDown});
      mlp_out = Node::kRs2;
    }
    if (c.post_norms) {
      link(Node::kPostLn2, {mlp_out});
      mlp_out = Node::kPostLn2;
    }
    link(Node::kRes2, {Node::kRes1, mlp_out});
  } else {
    // Each device routes its own tokens (its sequence-parallel shard).
    link(Node::kRouter, {Node::kLn2});
    link(Node::kTopk, {Node::kRouter});
    link(Node::kPermute, {Node::kLn2, Node::kTopk});
    Node expert_in = Node::kPermute;
    if (c.expert_parallel) {
      link(Node::kDispatch, {Node::kPermute});
      expert_in = Node::kDispatch;
    }
    link(Node::kEUp, {expert_in});
    link(Node::kEAct, {Node::kEUp});
    link(Node::kEDown, {Node::kEAct});
    Node expert_out = Node::kEDown;
    if (c.expert_parallel) {
      link(Node::kCombine, {Node::kEDown});
      expert_out = Node::kCombine;
    }
    link(Node::kUnpermute, {expert_out, Node::kTopk});
    if (c.shared_experts) {
      link(Node::kSUp, {Node::kLn2});
      link(Node::kSAct, {Node::kSUp});
      link(Node::kSDown, {Node::kSAct});
    }
    // The block's output: the routed experts' sum, plus the shared
    // experts' (normed first under post-norms).
    if (c.post_norms) {
      if (c.shared_experts) {
        link(Node::kPostLn2, {Node::kUnpermute, Node::kSDown});
      } else {
        link(Node::kPostLn2, {Node::kUnpermute});
      }
      link(Node::kRes2, {Node::kRes1, Node::kPostLn2});
    } else if (c.shared_experts) {
      link(Node::kRes2, {Node::kRes1, Node::kUnpermute, Node::kSDown});
    } else {
      link(Node::kRes2, {Node::kRes1, Node::kUnpermute});
    }
  }

  // What the backward reads: a matmul's weight gradient its input, a norm's
  // backward its input, an activation's backward its inputs, attention its
  // inputs and output, softmax its output, dropout its mask; the MoE
  // un-permutation the expert outputs and the routing probabilities.
  needed_.set(idx(Node::kIn));                          // attention norm backward
  for (Node n : inputs(Node::kQ)) needed_.set(idx(n));  // QKV weight gradients
  if (c.mla) {
    // The down projections' weight gradients read the norm output, the
    // up projections' the latents (and their norms' backward the latents
    // before the norm: part of kQa's and kKva's bytes).
    needed_.set(idx(ln1_out));
    needed_.set(idx(Node::kKva));
  }
  if (c.unfused_attention) {
    for (Node n : qk) needed_.set(idx(n));  // dQ = dS·K, dK = dSᵀ·Q
    needed_.set(idx(Node::kSoftmax));
    if (c.dropout) needed_.set(idx(Node::kDropout));  // mask, and P·V's input
    needed_.set(idx(Node::kV));
    needed_.set(idx(Node::kAttn));  // the output projection's input
  } else {
    for (Node n : inputs(Node::kAttn)) needed_.set(idx(n));
    needed_.set(idx(Node::kAttn));  // output and log-sum-exp
  }
  if (c.dropout) needed_.set(idx(Node::kRes1));  // its mask
  needed_.set(idx(Node::kRes1));                 // the MLP norm's input
  if (!c.moe) {
    for (Node n : inputs(Node::kUp)) needed_.set(idx(n));
    for (Node n : inputs(Node::kAct)) needed_.set(idx(n));
    needed_.set(idx(Node::kAct));
  } else {
    needed_.set(idx(Node::kLn2));  // router and shared-expert weight gradients
    needed_.set(idx(Node::kTopk));
    needed_.set(idx(c.expert_parallel ? Node::kDispatch : Node::kPermute));
    needed_.set(idx(Node::kEUp));
    needed_.set(idx(Node::kEAct));
    needed_.set(idx(c.expert_parallel ? Node::kCombine : Node::kEDown));
    if (c.shared_experts) {
      needed_.set(idx(Node::kSUp));
      needed_.set(idx(Node::kSAct));
    }
  }
  if (c.dropout) needed_.set(idx(Node::kRes2));  // its mask
  // A post-norm's backward reads its input.
  if (c.post_norms) {
    for (Node n : inputs(Node::kPostLn1)) needed_.set(idx(n));
    for (Node n : inputs(Node::kPostLn2)) needed_.set(idx(n));
  }
}

NodeSet LayerGraph::fused_with(Node n) const {
  const NodeSet qkv = nodes({Node::kQ, Node::kK, Node::kV});
  const NodeSet gate_up = nodes({Node::kGate, Node::kUp});
  if (c_.fused_qkv && qkv.test(idx(n))) return qkv & present_;
  if (c_.fused_gate_up && gate_up.test(idx(n))) return gate_up & present_;
  if (c_.mla && (n == Node::kK || n == Node::kV)) return nodes({Node::kK, Node::kV}) & present_;
  NodeSet s;
  s.set(idx(n));
  return s;
}

std::vector<Node> LayerGraph::matmuls() const {
  std::vector<Node> out;
  for (Node n : {Node::kQa, Node::kKva, Node::kQ, Node::kK, Node::kV, Node::kProj, Node::kGate, Node::kUp, Node::kDown,
                 Node::kRouter, Node::kEUp, Node::kEDown, Node::kSUp, Node::kSDown}) {
    if (present(n) && !(c_.mla && n == Node::kV)) out.push_back(n);  // MLA: keys and values one GEMM
  }
  return out;
}

int64_t LayerGraph::bytes(const NodeSet& s) const {
  int64_t b = 0;
  for (int i = 0; i < kNodes; ++i) {
    if (s.test(static_cast<size_t>(i))) b += c_.bytes[static_cast<size_t>(i)];
  }
  return b;
}

RecomputePlan LayerGraph::plan(NodeSet kept, RecomputeMode mode, NodeSet region) const {
  RecomputePlan r;
  kept.set(idx(Node::kIn));
  kept &= present_ | nodes({Node::kIn});
  r.needed = needed_;
  // The closure: every needed tensor that was not kept, and recursively the
  // unkept inputs of the nodes that make it.
  NodeSet rerun;
  std::vector<Node> todo;
  for (int i = 0; i < kNodes; ++i) {
    const auto n = static_cast<Node>(i);
    if (needed_.test(idx(n)) && !kept.test(idx(n))) todo.push_back(n);
  }
  while (!todo.empty()) {
    const Node n = todo.back();
    todo.pop_back();
    if (rerun.test(idx(n)) || n == Node::kIn) continue;
    const NodeSet kernel = fused_with(n);  // a fused kernel re-runs whole
    rerun |= kernel;
    for (int i = 0; i < kNodes; ++i) {
      if (!kernel.test(static_cast<size_t>(i))) continue;
      for (Node in : inputs(static_cast<Node>(i))) {
        if (!kept.test(idx(in)) && !rerun.test(idx(in))) todo.push_back(in);
      }
    }
  }
  switch (mode) {
    case RecomputeMode::kClosure:
      break;
    case RecomputeMode::kPrefix: {
      // Re-run from the layer's start to the last node needed, skipping the
      // nodes whose outputs the policy kept (PyTorch returns those from its
      // cache instead of running them).
      int last = -1;
      for (int i = 0; i < kNodes; ++i) {
        if (rerun.test(static_cast<size_t>(i))) last = i;
      }
      for (int i = 1; i <= last; ++i) {
        const auto u = static_cast<size_t>(i);
        if (present_.test(u) && !kept.test(u)) rerun.set(u);
      }
      break;
    }
    case RecomputeMode::kRegion:
      // A checkpointed region re-runs whole, kept outputs included (Megatron:
      // the layer under full recomputation, the attention core under
      // selective, whose output is kept all the same by the projection).
      rerun |= region;
      break;
  }
  r.recomputed = rerun & present_;
  r.kept = kept;
  return r;
}

namespace {
struct NamedNodes {
  std::string_view name;
  std::array<Node, 3> nodes;
  int count;
};
// MaxText's names first (MaxText/layers: checkpoint_name tags), then ours.
constexpr NamedNodes kNamed[] = {
    {"decoder_layer_input", {Node::kIn, Node::kIn, Node::kIn}, 1},
    {"query_proj", {Node::kQ, Node::kIn, Node::kIn}, 1},
    {"key_proj", {Node::kK, Node::kIn, Node::kIn}, 1},
    {"value_proj", {Node::kV, Node::kIn, Node::kIn}, 1},
    {"qkv_proj", {Node::kQ, Node::kK, Node::kV}, 3},
    {"mla_latents", {Node::kQa, Node::kKva, Node::kIn}, 2},
    {"context", {Node::kAttn, Node::kIn, Node::kIn}, 1},
    {"out_proj", {Node::kProj, Node::kIn, Node::kIn}, 1},
    {"mlpwi_0", {Node::kGate, Node::kIn, Node::kIn}, 1},
    {"mlpwi_1", {Node::kUp, Node::kIn, Node::kIn}, 1},
    {"mlpwi", {Node::kGate, Node::kUp, Node::kIn}, 2},
    {"mlpwo", {Node::kDown, Node::kIn, Node::kIn}, 1},
    {"attn_norm", {Node::kLn1, Node::kIn, Node::kIn}, 1},
    {"rope", {Node::kRope, Node::kIn, Node::kIn}, 1},
    {"mlp_norm", {Node::kLn2, Node::kIn, Node::kIn}, 1},
    {"mlp_act", {Node::kAct, Node::kIn, Node::kIn}, 1},
    {"residual", {Node::kRes1, Node::kIn, Node::kIn}, 1},
    {"router", {Node::kRouter, Node::kTopk, Node::kIn}, 2},
    {"experts", {Node::kEUp, Node::kEAct, Node::kEDown}, 3},
    {"moe_dispatch", {Node::kPermute, Node::kDispatch, Node::kIn}, 2},
    {"moe_combine", {Node::kCombine, Node::kUnpermute, Node::kIn}, 2},
    {"shared_experts", {Node::kSUp, Node::kSAct, Node::kSDown}, 3},
};
}  // namespace

std::optional<NodeSet> nodes_named(std::string_view name) {
  for (const NamedNodes& n : kNamed) {
    if (n.name != name) continue;
    NodeSet s;
    for (int i = 0; i < n.count; ++i) s.set(idx(n.nodes[static_cast<size_t>(i)]));
    return s;
  }
  return std::nullopt;
}

std::string recompute_names() {
  std::string out;
  for (const NamedNodes& n : kNamed) out += (out.empty() ? "" : ", ") + std::string(n.name);
  return out;
}

RecomputePlan plan_recompute(const LayerGraph& g, const RecomputeSpec& spec) {
  using P = RecomputeSpec::Policy;
  const NodeSet present = g.present_nodes();
  const NodeSet core = nodes({Node::kScores, Node::kSoftmax, Node::kDropout, Node::kAttn}) & present;
  NodeSet needed = g.needed_by_backward();
  // Sequence parallelism: what is kept of a gathered norm output is the
  // shard (Korthikanti et al. 2022, section 4.2.2), gathered again in
  // backward, unless the framework keeps the gathered tensor.
  NodeSet baseline = needed;
  if (spec.sp_regather) {
    for (auto [gathered, shard] : {std::pair{Node::kAg1, Node::kLn1}, std::pair{Node::kAg2, Node::kLn2}}) {
      if (baseline.test(idx(gathered))) {
        baseline.reset(idx(gathered));
        baseline.set(idx(shard));
      }
    }
  }
  NodeSet kept, region;
  switch (spec.policy) {
    case P::kNone:
      kept = baseline;
      break;
    case P::kSelective:
      // The attention core re-runs (Megatron's selective recomputation);
      // its output stays kept as the projection's input.
      kept = baseline & ~nodes({Node::kScores, Node::kSoftmax, Node::kDropout});
      region = core;
      break;
    case P::kFull:
      kept = nodes({Node::kIn});
      region = present;
      break;
    case P::kSaveDots:
      // Every matmul output and the attention output (jax.checkpoint_policies
      // dots_with_no_batch_dims_saveable; MaxText "minimal").
      for (Node n : g.matmuls()) kept.set(idx(n));
      kept.set(idx(Node::kAttn));
      break;
    case P::kSaveQkv:
      kept = nodes({Node::kQ, Node::kK, Node::kV}) & present;
      break;
    case P::kOpSac: {
      // torchtitan's per-op selective checkpointing: the outputs of
      // attention, of reduce-scatters and of every other matmul (the 1st,
      // 3rd, ... of the layer) are kept; no matmul's where the GEMMs are not
      // ops of its save list (RecomputeSpec::matmuls_saveable).
      int count = 0;
      for (Node n : g.matmuls()) {
        if (++count % 2 == 1 && spec.matmuls_saveable) kept.set(idx(n));
      }
      kept.set(idx(Node::kAttn));
      for (Node n : {Node::kRs1, Node::kRs2}) {
        if (present.test(idx(n)) && g.config().sequence_parallel) kept.set(idx(n));
      }
      // The MoE all-to-alls too: its save list's comm_ops hold
      // _c10d_functional.all_to_all_single (and DeepEP's dispatch and
      // combine), "to avoid re-communication" (torchtitan/distributed/
      // activation_checkpoint.py).
      for (Node n : {Node::kDispatch, Node::kCombine}) {
        if (present.test(idx(n))) kept.set(idx(n));
      }
      break;
    }
    case P::kCustom:
      kept = spec.custom & present;
      break;
  }
  // MaxText's query_proj and key_proj: the rotation's output where there
  // is one and both are named.
  const NodeSet qk = nodes({Node::kQ, Node::kK});
  auto after_rope = [&](const NodeSet& named) {
    return named == qk && present.test(idx(Node::kRope)) ? nodes({Node::kRope}) : named & present;
  };
  if (spec.policy == P::kCustom) kept |= after_rope(spec.custom_qk);
  const NodeSet offloaded = spec.offloaded | after_rope(spec.offloaded_qk);
  // Offloaded tensors are kept (the backward reads them back) in host memory.
  kept |= offloaded & (present | nodes({Node::kIn}));
  if (spec.mode != RecomputeMode::kRegion) region.reset();
  RecomputePlan r = g.plan(kept, spec.mode, region);
  r.offloaded = offloaded & r.kept;
  return r;
}

}  // namespace shardsim::detail
