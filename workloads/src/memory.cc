// Memory model of one device during a training step.
//
// Parameters and states (mixed precision with Adam, Megatron-LM convention,
// Narayanan et al. 2021 / Rajbhandari et al. 2020 "ZeRO"): bf16 weights (2 B),
// gradients at grad_reduce_dtype (4 B for fp32 main grads), and fp32 master
// weight, first and second moment (12 B) per parameter. ZeRO-1 shards the
// optimizer state over dp, ZeRO-3 (FSDP) shards all three and holds the
// gathered weights of two units (the current one and the prefetched one).
//
// Activations saved per layer follow Korthikanti et al. 2022 ("Reducing
// Activation Recomputation", section 4), tensor by tensor, with two changes:
// attention is fused (flash), so the s² softmax and dropout tensors are not
// stored (the 5·a·s/h term vanishes and a log-sum-exp of 4 B per head and
// token is kept); and the shapes are general (GQA, SwiGLU, RMSNorm). For a
// GPT layer without tensor parallelism this gives their 34·s·b·h bytes.
#include "shardsim/workloads/memory.h"

#include <algorithm>

namespace shardsim {

int64_t layer_activation_bytes(const ModelSpec& m, const Plan& p) {
  const int64_t t = p.tp;
  const int64_t T = p.microbatch_size * p.seq_len;
  const bool sp = p.sequence_parallel;
  const int64_t a = m.heads / t;
  const int64_t kv = m.kv_heads >= t ? m.kv_heads / t : 1;
  const int64_t d = m.head_dim;
  const int64_t h = m.hidden;
  const int64_t f = m.ffn_hidden / t;
  const bool gpt = m.mlp == MlpKind::kGelu;
  // Tensors that sequence parallelism splits over tp; otherwise replicated.
  const int64_t rep_tokens = sp ? T / t : T;
  int64_t bytes = 0;
  bytes += 2 * rep_tokens * h;         // attention norm input (residual stream)
  bytes += 2 * rep_tokens * h;         // QKV input (norm output)
  bytes += 2 * T * (a + 2 * kv) * d;   // q, k, v
  bytes += 2 * T * a * d + 4 * T * a;  // attention output (= out-proj input) and log-sum-exp
  bytes += 2 * rep_tokens * h;         // MLP norm input
  bytes += 2 * rep_tokens * h;         // MLP input (norm output)
  if (gpt) {
    bytes += 2 * T * f;           // GeLU input
    bytes += 2 * T * f;           // GeLU output (down input)
    bytes += 2 * rep_tokens * h;  // two dropout masks, 1 B per element each
  } else {
    bytes += int64_t{4} * T * f;  // gate and up outputs, 2 B each
    bytes += 2 * T * f;      // SwiGLU output (down input)
  }
  return bytes;
}

MemoryReport training_memory(const Scenario& s) {
  const ModelSpec& m = s.model;
  const Plan& p = s.plan;
  const ParamCount pc = count_params(m);
  const int64_t t = p.tp;
  const int64_t kv = m.kv_heads >= t ? m.kv_heads / t : 1;
  const int64_t layer = m.hidden * (m.heads / t) * m.head_dim * 2 + 2 * m.hidden * kv * m.head_dim +
                        (m.mlp == MlpKind::kSwiglu ? 3 : 2) * m.hidden * (m.ffn_hidden / t) + pc.per_layer_other;
  const int64_t vocab_rows = padded_vocab(m, t) / t * m.hidden;
  const int64_t embed =
      (m.tied_embeddings ? 0 : vocab_rows) + (m.position == PositionKind::kLearned ? p.seq_len * m.hidden : 0);
  const int64_t head = vocab_rows + pc.final_norm;
  const int64_t params = m.layers * layer + embed + head;
  const bool fsdp = p.zero == 3 && p.dp > 1;
  auto shard = [&](int64_t x, bool sharded) { return sharded ? (x + p.dp - 1) / p.dp : x; };

  MemoryReport r;
  r.capacity_bytes = s.cluster.chip.hbm_capacity.value();
  auto add = [&](const char* name, int64_t b) { r.components.push_back({name, b}); };
  add("weights", 2 * shard(params, fsdp));
  add("gradients", dtype_bytes(p.grad_reduce_dtype) * shard(params, p.zero >= 2 && p.dp > 1));
  add("optimizer_state", 12 * shard(params, p.zero >= 1 && p.dp > 1));
  // One microbatch in flight without pipelining.
  add("activations", m.layers * layer_activation_bytes(m, p));
  // Logits of the microbatch in bf16 plus their fp32 softmax (vocab-parallel).
  add("logits", p.microbatch_size * p.seq_len * (padded_vocab(m, t) / t) * (2 + 4));
  int64_t buffers = 0;
  if (fsdp) buffers += int64_t{4} * std::max({layer, embed, head});  // two gathered units, 2 B each
  if (!fsdp && p.dp > 1) buffers += 2 * p.grad_bucket_bytes;    // DDP buckets in flight
  add("comm_buffers", buffers);
  for (const auto& c : r.components) r.peak_bytes_per_device += c.bytes;
  r.fits = r.peak_bytes_per_device <= r.capacity_bytes;
  return r;
}

}  // namespace shardsim
