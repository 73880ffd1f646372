// Dense decoder-only Transformer shapes and their parameter counts.
#pragma once

#include <cstdint>
#include <string>

namespace shardsim {

/// The MLP's activation: gated ones (SwiGLU, GeGLU) have a gate and an up
/// projection, the others one up projection (GeLU; squared ReLU as
/// Nemotron; ReLU).
enum class MlpKind : uint8_t { kGelu, kSwiglu, kGeglu, kRelu2, kRelu };
enum class NormKind : uint8_t { kLayerNorm, kRmsNorm };
/// Positions: a learned table added to the embeddings, rotary embeddings of
/// q and k, or none in the layer's tensors (ALiBi's bias lives inside the
/// attention kernel).
enum class PositionKind : uint8_t { kLearned, kRope, kNone };

/// A mixture-of-experts MLP (Shazeer et al. 2017; Fedus et al. 2021): each
/// token goes to top_k of `experts` routed experts (SwiGLU MLPs of width
/// expert_ffn_hidden) plus `shared_experts` that see every token
/// (DeepSeekMoE). The first `first_dense_layers` layers keep a dense MLP of
/// width ffn_hidden.
struct MoeSpec {
  int64_t experts = 0;  ///< 0: a dense model
  int64_t top_k = 1;
  int64_t shared_experts = 0;
  int64_t expert_ffn_hidden = 0;
  double capacity_factor = 1.0;  ///< expert buffer = capacity_factor · (tokens · top_k / experts)
  int64_t first_dense_layers = 0;
};

/// Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434, section
/// 2.1; DeepSeek-V3; Kimi K2): the hidden state is projected down to a
/// kv_lora_rank latent (normed) and a qk_rope_head_dim rotary key that every
/// head shares; the latent is projected up to each head's key (head_dim, no
/// rotary part) and value (v_head_dim). Queries come up the same way from a
/// q_lora_rank latent (0: straight from the hidden state) and carry
/// head_dim + qk_rope_head_dim per head, the rotary part last. The output
/// projection reads heads · v_head_dim.
struct MlaSpec {
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;  ///< 0: not MLA
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

struct ModelSpec {
  std::string name;
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t ffn_hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;  ///< defaults to hidden / heads
  int64_t vocab = 0;
  MlpKind mlp = MlpKind::kSwiglu;
  NormKind norm = NormKind::kRmsNorm;
  PositionKind position = PositionKind::kRope;
  bool tied_embeddings = false;
  bool dropout = false;  ///< dropout on attention probabilities and hidden states (GPT training)
  /// Biases on every projection (GPT-style); defaults to true for GeLU models.
  bool bias = false;
  /// Sliding-window attention: windowed layers attend to the last
  /// attention_window tokens only (0: every layer attends to all).
  int64_t attention_window = 0;
  /// With a window, every global_every-th layer (layers global_every-1,
  /// 2·global_every-1, ...) attends to all tokens (Gemma 3: 6; GPT-OSS: 2);
  /// 0: every layer is windowed.
  int64_t global_every = 0;
  /// RMS norms of the queries and keys (Qwen 3, Gemma 3).
  bool qk_norm = false;
  /// Norms of the attention block's and the MLP block's outputs before each
  /// residual add, beside the usual pre-norms (Gemma 2 and 3: MaxText's
  /// use_post_attn_norm and use_post_ffw_norm, layers/gemma3.py).
  bool post_norms = false;
  MoeSpec moe;
  MlaSpec mla;
  std::string source;

  bool is_moe() const { return moe.experts > 0; }
  bool is_mla() const { return mla.kv_lora_rank > 0; }
  /// Width of each query and key head in attention (MLA: head_dim plus the
  /// rotary part), and of each value and output head.
  int64_t qk_head_dim() const { return head_dim + (is_mla() ? mla.qk_rope_head_dim : 0); }
  int64_t v_head_dim() const { return is_mla() ? mla.v_head_dim : head_dim; }
  /// Attention FLOPs per query-key pair, forward: QK^T over the query-key
  /// width and AV over the value width, 2 each per multiply-add (4·heads·
  /// head_dim without MLA).
  double attention_flops_per_pair() const {
    return 2.0 * static_cast<double>(heads) * static_cast<double>(qk_head_dim() + v_head_dim());
  }
  /// Elements one cached position keeps per layer on each of tp ranks: K
  /// and V of the KV heads the rank holds (at least one: a head replicated
  /// when tp exceeds them); under MLA the latent and the shared rotary key,
  /// which every rank keeps whole.
  int64_t kv_cache_values(int64_t tp) const {
    if (is_mla()) return mla.kv_lora_rank + mla.qk_rope_head_dim;
    return 2 * kv_heads_per_rank(tp) * head_dim;
  }
  /// KV heads each of tp ranks holds: kv_heads / tp, or one head replicated
  /// when tp exceeds them (Megatron-Core's GQA under tensor parallelism).
  int64_t kv_heads_per_rank(int64_t tp) const { return kv_heads >= tp ? kv_heads / tp : 1; }
  bool gated() const { return mlp == MlpKind::kSwiglu || mlp == MlpKind::kGeglu; }
  /// Whether `layer` attends through a sliding window.
  bool windowed(int64_t layer) const {
    return attention_window > 0 && (global_every <= 0 || (layer + 1) % global_every != 0);
  }
  /// Causal query-key pairs of one sequence of s tokens in `layer`: s(s+1)/2,
  /// or with a window W < s, W(W+1)/2 + (s-W)·W.
  double attention_pairs(int64_t layer, int64_t s) const;
  /// The query-key pairs a block-sparse kernel computes for one sequence of
  /// s tokens in `layer`: every bq x bkv block that holds a causal (or
  /// windowed) pair, in full (blocks at the sequence's end cut to it).
  double attention_block_pairs(int64_t layer, int64_t s, int64_t bq, int64_t bkv) const;
  bool is_moe_layer(int64_t layer) const { return is_moe() && layer >= moe.first_dense_layers; }
  int64_t moe_layers() const { return is_moe() ? layers - moe.first_dense_layers : 0; }
};

/// Parameter counts. "Matmul" parameters are the weights of every matmul
/// (attention and MLP projections of each layer, the router, and the
/// unembedding); the ones a token activates set the 6·N·tokens FLOP term.
/// Norm gains, biases and the embedding table (a lookup, no FLOPs) are
/// counted in total() only.
struct ParamCount {
  int64_t layers = 0, dense_layers = 0, moe_layers = 0;
  int64_t attention = 0;  ///< q, k, v, o weights of one layer (MLA: the down and up projections too)
  int64_t dense_mlp = 0;  ///< MLP weights of a dense layer
  int64_t router = 0;     ///< router weights of an MoE layer
  int64_t expert = 0;     ///< weights of one expert
  int64_t routed_experts = 0, shared_experts = 0, top_k = 0;
  int64_t per_layer_other = 0;  ///< norm gains (and biases for GPT style)
  int64_t unembedding = 0;      ///< vocab · hidden
  int64_t embedding = 0;        ///< vocab · hidden, 0 when tied
  int64_t final_norm = 0;
  /// Matmul weights one token uses.
  int64_t matmul() const {
    return layers * attention + dense_layers * dense_mlp + moe_layers * (router + (top_k + shared_experts) * expert) +
           unembedding;
  }
  int64_t total() const {
    return layers * (attention + per_layer_other) + dense_layers * dense_mlp +
           moe_layers * (router + (routed_experts + shared_experts) * expert) + unembedding + embedding + final_norm;
  }
};

ParamCount count_params(const ModelSpec& m);
/// Causal query-key pairs of one sequence of s tokens summed over the layers.
double attention_pairs_all_layers(const ModelSpec& m, int64_t s);

/// Parameters one device holds before any ZeRO sharding, under tensor
/// parallelism `tp` (heads, MLP and the padded vocabulary split over tp; KV
/// heads replicated when tp exceeds them; experts split over `ep`, not tp;
/// router, shared experts and norms replicated). One source for the lowering
/// and the memory model.
struct DeviceParams {
  int64_t dense_layer = 0;           ///< a layer with a dense MLP
  int64_t moe_layer_replicated = 0;  ///< an MoE layer's attention, norms, router, shared experts
  int64_t moe_layer_experts = 0;     ///< an MoE layer's local routed experts
  int64_t embedding = 0;             ///< embedding rows (0 when tied) and learned positions
  int64_t head = 0;                  ///< unembedding rows and the final norm
  /// Tied embeddings: the table a first pipeline stage holds as its own
  /// copy when the head sits on another stage (Megatron keeps both and
  /// all-reduces their gradients); 0 when untied.
  int64_t tied_copy = 0;
};
/// `expert_tp`: experts' MLPs split over that many tensor-parallel ranks.
DeviceParams device_params(const ModelSpec& m, int64_t tp, int64_t ep, int64_t seq_len, int64_t expert_tp = 1);

/// The vocabulary as tensor parallelism stores it: padded up to a multiple of
/// 128·tp, as Megatron-LM does (--make-vocab-size-divisible-by 128), so each
/// rank holds an equal, aligned slice. The padding is executed, not model,
/// work.
int64_t padded_vocab(const ModelSpec& m, int64_t tp);

}  // namespace shardsim
