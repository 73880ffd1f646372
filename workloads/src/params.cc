#include "shardsim/workloads/model.h"

#include <algorithm>

namespace shardsim {
namespace {

/// Multi-head latent attention's projections for `heads` heads: the queries
/// down to their latent and up (or straight from the hidden state), the keys
/// and values down to their latent plus the shared rotary key and up to each
/// head's key and value, the output from every head's value. The down
/// projections do not depend on the heads (tp replicates them).
int64_t mla_attention_params(const ModelSpec& m, int64_t heads) {
  const MlaSpec& l = m.mla;
  const int64_t h = m.hidden, qk = heads * m.qk_head_dim();
  return (l.q_lora_rank > 0 ? h * l.q_lora_rank + l.q_lora_rank * qk : h * qk) +
         h * (l.kv_lora_rank + l.qk_rope_head_dim) + l.kv_lora_rank * heads * (m.head_dim + m.v_head_dim()) +
         heads * m.v_head_dim() * h;
}

}  // namespace

ParamCount count_params(const ModelSpec& m) {
  ParamCount c;
  const int64_t h = m.hidden;
  const int64_t q = m.heads * m.head_dim;
  const int64_t kv = m.kv_heads * m.head_dim;
  c.layers = m.layers;
  c.moe_layers = m.moe_layers();
  c.dense_layers = m.layers - c.moe_layers;
  c.attention = h * q + 2 * h * kv + q * h;
  if (m.is_mla()) c.attention = mla_attention_params(m, m.heads);
  c.dense_mlp = (m.gated() ? 3 : 2) * h * m.ffn_hidden;
  if (m.is_moe()) {
    c.router = h * m.moe.experts;
    c.expert = 3 * h * m.moe.expert_ffn_hidden;  // SwiGLU experts
    c.routed_experts = m.moe.experts;
    c.shared_experts = m.moe.shared_experts;
    c.top_k = m.moe.top_k;
  }
  // Norm gains (layernorm adds a bias); GPT-style layers carry biases on
  // every projection.
  const int64_t norm = (m.norm == NormKind::kLayerNorm ? 2 : 1) * h;
  c.per_layer_other = (m.post_norms ? 4 : 2) * norm;
  if (m.is_mla()) c.per_layer_other += m.mla.q_lora_rank + m.mla.kv_lora_rank;  // the latents' RMSNorm gains
  if (m.bias) c.per_layer_other += q + 2 * kv + h + (m.gated() ? 2 : 1) * m.ffn_hidden + h;
  c.unembedding = m.vocab * h;
  c.embedding = m.tied_embeddings ? 0 : m.vocab * h;
  c.final_norm = norm;
  return c;
}

DeviceParams device_params(const ModelSpec& m, int64_t tp, int64_t ep, int64_t seq_len, int64_t expert_tp) {
  const ParamCount pc = count_params(m);
  const int64_t h = m.hidden, d = m.head_dim;
  const int64_t a = m.heads / tp;
  const int64_t kv = m.kv_heads_per_rank(tp);
  const int64_t f = m.ffn_hidden / tp;
  // MLA: the down projections replicated over tp (Megatron-Core's MLA
  // duplicates them), the up and output projections split by head.
  const int64_t attention = m.is_mla() ? mla_attention_params(m, a) : 2 * h * a * d + 2 * h * kv * d;
  DeviceParams dp;
  dp.dense_layer = attention + (m.gated() ? 3 : 2) * f * h + pc.per_layer_other;
  if (m.is_moe()) {
    // Shared experts split over tp like the dense MLP (Megatron-Core's SharedExpertMLP).
    dp.moe_layer_replicated =
        attention + pc.per_layer_other + pc.router + (pc.shared_experts * pc.expert + tp - 1) / tp;
    dp.moe_layer_experts = m.moe.experts / ep * pc.expert / std::max<int64_t>(expert_tp, 1);
  }
  const int64_t vocab_rows = padded_vocab(m, tp) / tp * h;  // this rank's padded slice
  dp.embedding = (m.tied_embeddings ? 0 : vocab_rows) + (m.position == PositionKind::kLearned ? seq_len * h : 0);
  dp.head = vocab_rows + pc.final_norm;
  dp.tied_copy = m.tied_embeddings ? vocab_rows : 0;
  return dp;
}

double ModelSpec::attention_pairs(int64_t layer, int64_t s) const {
  const auto sd = static_cast<double>(s);
  if (!windowed(layer) || attention_window >= s) return sd * (sd + 1.0) / 2.0;
  const auto w = static_cast<double>(attention_window);
  return w * (w + 1.0) / 2.0 + (sd - w) * w;
}

double ModelSpec::attention_block_pairs(int64_t layer, int64_t s, int64_t bq, int64_t bkv) const {
  // Query block i holds rows [r0, r1]; they see keys from r0 - W + 1 (0
  // without a window) to r1, so key blocks floor(lo / bkv) .. floor(r1 / bkv).
  const bool window = windowed(layer) && attention_window < s;
  double pairs = 0;
  for (int64_t r0 = 0; r0 < s; r0 += bq) {
    const int64_t r1 = std::min(r0 + bq, s) - 1;
    const int64_t lo = window ? std::max<int64_t>(0, r0 - attention_window + 1) : 0;
    const int64_t first = lo / bkv, last = r1 / bkv;
    const int64_t keys = std::min((last + 1) * bkv, s) - first * bkv;
    pairs += static_cast<double>(r1 - r0 + 1) * static_cast<double>(keys);
  }
  return pairs;
}

double attention_pairs_all_layers(const ModelSpec& m, int64_t s) {
  double pairs = 0;
  for (int64_t l = 0; l < m.layers; ++l) pairs += m.attention_pairs(l, s);
  return pairs;
}

int64_t padded_vocab(const ModelSpec& m, int64_t tp) {
  const int64_t multiple = 128 * tp;
  return (m.vocab + multiple - 1) / multiple * multiple;
}

}  // namespace shardsim
