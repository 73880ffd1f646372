// Memory model of one device during a training step.
//
// Parameters and states (mixed precision with Adam, Megatron-LM convention,
// Narayanan et al. 2021; Rajbhandari et al. 2020, "ZeRO"): bf16 weights (2 B),
// gradients at grad_reduce_dtype (4 B for fp32 main grads), and master
// weight, first and second moment (12 B per parameter in fp32; the plan can
// hold them in bf16). ZeRO-1 shards the
// optimizer state over dp, ZeRO-2 the gradients too, ZeRO-3 (FSDP) the
// weights as well and holds two gathered units (current and prefetched).
//
// Activations saved per layer follow Korthikanti et al. 2022 ("Reducing
// Activation Recomputation", section 4), tensor by tensor, with general
// shapes (GQA, SwiGLU, RMSNorm): for a GPT layer with unfused attention they
// give (with dropout) 34·s·b·h + 5·a·s²·b bytes without tensor parallelism,
// s·b·h·(10 + 24/t + 5·a·s/(h·t)) with it, and s·b·h/t·(34 + 5·a·s/h) with
// sequence parallelism. Fused (flash) attention and selective recomputation
// both drop the 5·a·s² term (a 4-byte log-sum-exp per head and token stays);
// full recomputation keeps only each layer's input, 2·s·b·h (/t with
// sequence parallelism), plus one layer's full set while it is recomputed.
//
// Pipelines keep the activations of every microbatch between its forward and
// backward; the high-water mark comes from walking the stage's schedule,
// which reproduces Korthikanti et al.'s factors (p microbatches on the first
// stage for 1F1B, times 1 + (p-1)/(p·v) with interleaving).
#include "shardsim/workloads/memory.h"

#include <algorithm>

#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/schedule.h"

namespace shardsim {
namespace {

/// Bytes of one layer's saved tensors when nothing is recomputed.
int64_t full_layer_bytes(const ModelSpec& m, const Plan& p, bool keep_scores, bool moe_layer) {
  const int64_t t = p.tp;
  const int64_t T = p.microbatch_size * p.seq_len / p.cp;  // this device's sequence shard
  const int64_t a = m.heads / t;
  const int64_t kv = m.kv_heads >= t ? m.kv_heads / t : 1;
  const int64_t d = m.head_dim;
  const int64_t h = m.hidden;
  const int64_t f = m.ffn_hidden / t;
  // Tensors that sequence parallelism splits over tp; otherwise replicated.
  const int64_t rep = p.sequence_parallel ? T / t : T;
  int64_t bytes = 0;
  bytes += 2 * rep * h;                 // attention norm input (residual stream)
  bytes += 2 * rep * h;                 // QKV input (norm output)
  bytes += 2 * T * (a + 2 * kv) * d;    // q, k, v
  bytes += 2 * T * a * d + 4 * T * a;   // attention output (= out-proj input) and log-sum-exp
  bytes += 2 * rep * h;                 // MLP norm input
  bytes += 2 * rep * h;                 // MLP input (norm output)
  if (m.dropout) bytes += 2 * rep * h;  // two hidden dropout masks, 1 B per element each
  if (moe_layer) {
    // Router probabilities, the permuted tokens in their capacity slots, and
    // each slot's gate/up outputs and SwiGLU output; shared experts as a
    // dense SwiGLU MLP over this device's tokens.
    const int64_t fe = m.moe.expert_ffn_hidden;
    const auto slots = static_cast<int64_t>(static_cast<double>(rep * m.moe.top_k) * m.moe.capacity_factor);
    bytes += 2 * rep * m.moe.experts;
    bytes += 2 * slots * h + int64_t{4} * slots * fe + 2 * slots * fe;
    bytes += m.moe.shared_experts * (int64_t{4} * rep * fe + 2 * rep * fe);
  } else if (m.mlp == MlpKind::kGelu) {
    bytes += 2 * T * f;  // GeLU input
    bytes += 2 * T * f;  // GeLU output (down input)
  } else {
    bytes += int64_t{4} * T * f;  // gate and up outputs, 2 B each
    bytes += 2 * T * f;           // SwiGLU output (down input)
  }
  if (keep_scores) {
    // Softmax output (2 B) per head and query-key pair; with dropout also
    // its mask (1 B) and the dropped probabilities (2 B).
    bytes += (m.dropout ? 5 : 2) * a * p.seq_len * p.seq_len * p.microbatch_size;
  }
  return bytes;
}

}  // namespace

int64_t layer_activation_bytes(const ModelSpec& m, const Plan& p, bool moe_layer) {
  switch (p.recompute) {
    case Recompute::kFull: {
      const int64_t T = p.microbatch_size * p.seq_len / p.cp;
      return 2 * (p.sequence_parallel ? T / p.tp : T) * m.hidden;
    }
    case Recompute::kSelective:
      return full_layer_bytes(m, p, false, moe_layer);
    case Recompute::kNone:
      break;
  }
  return full_layer_bytes(m, p, !p.fused_attention, moe_layer);
}

int64_t peak_in_flight_bytes(const Plan& p, int64_t stage, const std::vector<int64_t>& chunk_bytes) {
  const PipelineSchedule sched = p.pp == 1 ? PipelineSchedule::kOneFOneB : p.schedule;
  int64_t live = 0, peak = 0;
  for (const PipelineStep& st : pipeline_steps(sched, p.pp, stage, p.microbatches(), p.virtual_stages)) {
    const int64_t b = chunk_bytes[static_cast<size_t>(st.chunk)];
    live += st.forward ? b : -b;
    peak = std::max(peak, live);
  }
  return peak;
}

MemoryReport training_memory(const Scenario& s) {
  const ModelSpec& m = s.model;
  const Plan& p = s.plan;
  const int64_t t = p.tp;
  // A mixture-of-experts layer has a replicated part (attention, router,
  // shared experts) and this device's experts (replicated over dp·cp / ep).
  const DeviceParams dp_params = device_params(m, t, p.ep, p.seq_len);
  const int64_t layer = dp_params.dense_layer;
  const int64_t moe_dense = dp_params.moe_layer_replicated;
  const int64_t moe_experts = dp_params.moe_layer_experts;
  const int64_t embed = dp_params.embedding;
  const int64_t head = dp_params.head;
  // Parameters are replicated over dp and cp; ZeRO shards over both.
  // Hybrid FSDP shards within its group only.
  const int64_t group = p.zero == 3 && p.fsdp_shard_size > 0 ? p.fsdp_shard_size : p.dp;
  const int64_t shards = group * p.cp;
  const int64_t expert_shards = p.dp * p.cp / p.ep;
  const bool fsdp = p.zero == 3 && shards > 1;
  auto shard_n = [](int64_t x, bool sharded, int64_t n) { return sharded ? (x + n - 1) / n : x; };
  const ChunkLayout layout = chunk_layout(m, p);
  const int64_t dense_act = layer_activation_bytes(m, p, false);
  const int64_t moe_act = layer_activation_bytes(m, p, true);
  const int64_t T = p.microbatch_size * p.seq_len / p.cp;
  // While a layer is recomputed, its full activations exist once.
  const int64_t recompute_extra =
      p.recompute == Recompute::kFull ? full_layer_bytes(m, p, !p.fused_attention, m.is_moe()) : 0;

  MemoryReport best;
  for (int64_t stage = 0; stage < p.pp; ++stage) {
    int64_t params = 0, expert_params = 0;
    std::vector<int64_t> chunk_act;
    bool has_head = false;
    for (int64_t c = 0; c < p.virtual_stages; ++c) {
      const int64_t g = c * p.pp + stage;
      int64_t act = 0;
      for (int64_t i = 0; i < layout.count[static_cast<size_t>(g)]; ++i) {
        const int64_t l = layout.first[static_cast<size_t>(g)] + i;
        const bool moe_layer = m.is_moe_layer(l);
        params += moe_layer ? moe_dense : layer;
        expert_params += moe_layer ? moe_experts : 0;
        act += moe_layer ? moe_act : dense_act;
      }
      if (g == 0) params += embed;
      if (g == p.chunks() - 1) {
        params += head;
        has_head = true;
      }
      chunk_act.push_back(act);
    }
    // Bytes per parameter of a state held `bytes` wide, sharded when `sharded`.
    auto state = [&](int64_t bytes, bool sharded) {
      return bytes * (shard_n(params, sharded && shards > 1, shards) +
                      shard_n(expert_params, sharded && expert_shards > 1, expert_shards));
    };
    MemoryReport r;
    r.capacity_bytes = s.cluster.chip.hbm_capacity.value();
    auto add = [&](const char* name, int64_t b) { r.components.push_back({name, b}); };
    add("weights", state(2, fsdp));
    add("gradients", state(dtype_bytes(p.grad_reduce_dtype), p.zero >= 2));
    add("optimizer_state",
        state(dtype_bytes(p.master_weights_dtype) + 2 * dtype_bytes(p.optimizer_state_dtype), p.zero >= 1));
    add("activations", peak_in_flight_bytes(p, stage, chunk_act) + recompute_extra);
    // Logits of the microbatch in bf16 plus their fp32 softmax (vocab-parallel).
    add("logits", has_head ? T * (padded_vocab(m, t) / t) * (2 + 4) : 0);
    int64_t buffers = 0;
    if (fsdp) buffers += int64_t{4} * std::max({layer, embed, head, moe_dense + moe_experts});  // two gathered units
    if (m.is_moe() && p.ep > 1) {
      // All-to-all send and receive buffers of the dispatched tokens.
      const int64_t rep = p.sequence_parallel ? T / t : T;
      buffers +=
          2 * 2 * static_cast<int64_t>(static_cast<double>(rep * m.moe.top_k) * m.moe.capacity_factor) * m.hidden;
    }
    // DDP: two buckets in flight, together no more than the stage's gradients
    // (a bucket size beyond them means one bucket of everything).
    if (!fsdp && shards > 1) {
      buffers += std::min(2 * p.grad_bucket_bytes, state(dtype_bytes(p.grad_reduce_dtype), false));
    }
    if (p.pp > 1) buffers += 4 * (p.sequence_parallel ? T / t : T) * m.hidden * 2;  // send/recv, both ways
    if (p.cp > 1) {
      const int64_t kv = m.kv_heads >= t ? m.kv_heads / t : 1;
      buffers += 2 * 2 * 2 * T * kv * m.head_dim * 2;  // ring attention: two K,V(+dK,dV) blocks
    }
    add("comm_buffers", buffers);
    for (const auto& c : r.components) r.peak_bytes_per_device += c.bytes;
    r.fits = r.peak_bytes_per_device <= r.capacity_bytes;
    if (stage == 0 || r.peak_bytes_per_device > best.peak_bytes_per_device) best = r;
  }
  return best;
}

}  // namespace shardsim

namespace shardsim {

// Inference: the replica's weight shard at weight_dtype (every expert of the
// device's ep share), the KV cache of the batch (each layer of the stage
// keeps 2·kv_heads/tp·head_dim elements per cached position at kv_dtype,
// context + the new token), the activations of one layer in flight (prefill:
// the whole prompt batch's widest tensors; decode: negligible) and the
// logits of the last positions in fp32.
MemoryReport inference_memory(const Scenario& s) {
  const ModelSpec& m = s.model;
  const Plan& p = s.plan;
  const ChunkLayout layout = chunk_layout(m, p);
  const DeviceParams dp = device_params(m, p.tp, p.ep, p.seq_len);
  const int64_t t = p.tp;
  const int64_t kv = m.kv_heads >= t ? m.kv_heads / t : 1;
  const int64_t positions = p.seq_len + (p.phase == Phase::kDecode ? 1 : 0);
  const int64_t T = p.phase == Phase::kPrefill ? p.microbatch_size * p.seq_len : p.microbatch_size;
  MemoryReport best;
  for (int64_t stage = 0; stage < p.pp; ++stage) {
    int64_t params = 0, layers = 0;
    const auto g = static_cast<size_t>(stage);
    for (int64_t i = 0; i < layout.count[g]; ++i) {
      const int64_t l = layout.first[g] + i;
      params += m.is_moe_layer(l) ? dp.moe_layer_replicated + dp.moe_layer_experts : dp.dense_layer;
      ++layers;
    }
    if (stage == 0) params += dp.embedding;
    const bool head = stage == p.pp - 1;
    if (head) params += dp.head;
    MemoryReport r;
    r.capacity_bytes = s.cluster.chip.hbm_capacity.value();
    auto add = [&](const char* name, int64_t b) { r.components.push_back({name, b}); };
    add("weights", params * dtype_bytes(p.weight_dtype));
    add("kv_cache", layers * p.microbatch_size * positions * 2 * kv * m.head_dim * dtype_bytes(p.kv_dtype));
    const int64_t widest = std::max({m.hidden * 4, (m.heads / t + 2 * kv) * m.head_dim * 2,
                                     (m.mlp == MlpKind::kSwiglu ? 3 : 2) * (m.ffn_hidden / t)});
    add("activations", T * widest * 2);
    add("logits", head ? p.microbatch_size * (padded_vocab(m, t) / t) * 4 : 0);
    for (const auto& c : r.components) r.peak_bytes_per_device += c.bytes;
    r.fits = r.peak_bytes_per_device <= r.capacity_bytes;
    if (stage == 0 || r.peak_bytes_per_device > best.peak_bytes_per_device) best = r;
  }
  return best;
}

MemoryReport step_memory(const Scenario& s) {
  return s.plan.inference() ? inference_memory(s) : training_memory(s);
}

}  // namespace shardsim
