// Memory model of one device during a training step.
//
// Parameters and states (mixed precision with Adam, Megatron-LM convention,
// Narayanan et al. 2021; Rajbhandari et al. 2020, "ZeRO"): bf16 weights (2 B),
// gradients at grad_reduce_dtype (4 B for fp32 main grads), and master
// weight, first and second moment (12 B per parameter in fp32; the plan can
// hold them in bf16, and Apex's distributed optimizer keeps only a 2 B
// remainder of the fp32 master, or none: Plan::master_copy). ZeRO-1 shards
// the optimizer state over dp, ZeRO-2 the gradients too, ZeRO-3 (FSDP) the
// weights as well.
//
// Activations come from the lowered program: every forward op is a node of
// its layer's graph (layer_graph.h), the recomputation policy decides which
// node outputs are kept for the backward, and the lowering charges them to
// the op that makes them and releases them with the layer's backward (the
// program's MemoryEvents); recomputed tensors are charged when they are
// recomputed, FSDP's gathered parameters when they are gathered and until
// the unit is resharded, and each op's working set while it runs. Walking a
// stage's program in order gives its high-water mark. For a GPT layer with
// dropout the kept tensors are Korthikanti et al.'s (2022, section 4):
// 34·s·b·h + 5·a·s²·b bytes without tensor parallelism, s·b·h·(10 + 24/t +
// 5·a·s/(h·t)) with it and s·b·h/t·(34 + 5·a·s/h) with sequence parallelism
// (unit tests check these against the graph).
//
// The estimate without a program (for the plan search, which sizes
// thousands of plans) takes the same per-layer kept bytes from the layer
// graph and walks the stage's pipeline schedule (p microbatches in flight on
// the first stage of 1F1B, times 1 + (p-1)/(p·v) with interleaving), plus one
// layer's recomputation and two gathered FSDP units.
#include "shardsim/workloads/memory.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "layer_graph.h"
#include "loss_memory.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/schedule.h"
#include "stage_lowering.h"

namespace shardsim {
namespace {

using detail::LayerGraph;
using detail::RecomputePlan;

/// One inference stage's weights, KV cache, activations and logits.
MemoryReport inference_stage_memory(const Scenario& s, int64_t stage);

struct LayerMemory {
  int64_t kept = 0;        ///< bytes kept from the forward to the backward
  int64_t recomputed = 0;  ///< bytes the backward holds beyond `kept`: recomputed and copied back (offloaded)
};
/// With `policy` false, a layer the plan's recomputation policy leaves out
/// (detail::recompute_applies): it keeps everything its backward needs.
/// `bf16_layer`: a layer of the plan's bf16 tail.
LayerMemory layer_memory(const ModelSpec& m, const Plan& p, bool moe_layer, bool policy, bool bf16_layer) {
  const LayerGraph g(detail::layer_config(m, p, moe_layer, bf16_layer));
  const detail::RecomputeSpec spec = detail::recompute_spec(p, bf16_layer);
  const RecomputePlan rp = detail::plan_recompute(g, policy ? spec : detail::keep_everything(spec));
  // Offloaded tensors are off HBM between the forward and the backward; the
  // layer's backward holds them again (copied back), as a recomputation
  // holds what it recomputes.
  return {g.bytes(rp.kept & ~rp.offloaded), g.bytes(rp.recomputed & rp.needed & ~rp.kept) + g.bytes(rp.offloaded)};
}

/// Each layer kind's memory, [moe layer][the policy applies][bf16 tail],
/// built on first use and once per plan: a layer graph and its
/// recomputation plan cost more than everything else the search's memory
/// filter does per stage.
class LayerMemoryTable {
 public:
  LayerMemoryTable(const ModelSpec& m, const Plan& p) : m_(m), p_(p) {}
  const LayerMemory& get(bool moe_layer, bool policy, bool bf16_layer) {
    std::optional<LayerMemory>& slot = mem_[moe_layer ? 1 : 0][policy ? 1 : 0][bf16_layer ? 1 : 0];
    if (!slot) slot = layer_memory(m_, p_, moe_layer, policy, bf16_layer);
    return *slot;
  }

 private:
  const ModelSpec& m_;
  const Plan& p_;
  std::optional<LayerMemory> mem_[2][2][2];
};

/// What one pipeline stage holds before activations: its parameters and
/// the chunks' per-microbatch activation bytes.
struct StageShape {
  int64_t params = 0, expert_params = 0;
  int64_t layer_params = 0;                ///< of the transformer layers (their linear weights, norms aside)
  int64_t low_precision_layer_params = 0;  ///< of those outside the bf16 tail
  bool has_head = false;
  std::vector<int64_t> chunk_act;
  int64_t recompute_extra = 0;
};
StageShape stage_shape(const Scenario& s, const ChunkLayout& layout, LayerMemoryTable& mem, int64_t stage) {
  const ModelSpec& m = s.model;
  const Plan& p = s.plan;
  const DeviceParams dp = device_params(m, p.tp, p.ep, p.seq_len, p.expert_tp);
  StageShape st;
  for (int64_t c = 0; c < p.virtual_stages; ++c) {
    const int64_t g = c * p.pp + stage;
    int64_t act = 0;
    for (int64_t i = 0; i < layout.count[static_cast<size_t>(g)]; ++i) {
      const int64_t l = layout.first[static_cast<size_t>(g)] + i;
      const bool moe_layer = m.is_moe_layer(l);
      const bool bf16_layer = in_bf16_tail(p, m.layers, l);
      const LayerMemory& lm = mem.get(moe_layer, detail::recompute_applies(p, l, i), bf16_layer);
      st.params += moe_layer ? dp.moe_layer_replicated : dp.dense_layer;
      st.expert_params += moe_layer ? dp.moe_layer_experts : 0;
      st.layer_params += moe_layer ? dp.moe_layer_replicated + dp.moe_layer_experts : dp.dense_layer;
      if (!bf16_layer) {
        st.low_precision_layer_params += moe_layer ? dp.moe_layer_replicated + dp.moe_layer_experts : dp.dense_layer;
      }
      act += lm.kept;
      st.recompute_extra = std::max(st.recompute_extra, lm.recomputed);
    }
    if (g == 0) st.params += dp.embedding + (p.pp > 1 ? dp.tied_copy : 0);
    if (g == p.chunks() - 1) {
      st.params += dp.head;
      st.has_head = true;
    }
    st.chunk_act.push_back(act);
  }
  return st;
}

/// Weights, gradients and optimizer state of a stage, and the buffers the
/// program does not allocate itself (DDP buckets, pipeline, ring-attention
/// and all-to-all buffers).
MemoryReport resident(const Scenario& s, const StageShape& st) {
  const ModelSpec& m = s.model;
  const Plan& p = s.plan;
  const int64_t t = p.tp;
  // Parameters are replicated over dp and cp; ZeRO shards over both.
  // Hybrid FSDP shards within its group only.
  const int64_t group = p.zero == 3 && p.fsdp_shard_size > 0 ? p.fsdp_shard_size : p.dp;
  const int64_t shards = group * p.cp;
  const int64_t expert_shards = detail::expert_replicas(p);
  const bool fsdp = p.zero == 3 && shards > 1;
  auto shard_n = [](int64_t x, bool sharded, int64_t n) { return sharded ? (x + n - 1) / n : x; };
  // Bytes of a state held `bytes` wide per parameter, sharded when `sharded`.
  auto state = [&](int64_t bytes, bool sharded) {
    return bytes * (shard_n(st.params, sharded && shards > 1, shards) +
                    shard_n(st.expert_params, sharded && expert_shards > 1, expert_shards));
  };
  MemoryReport r;
  r.capacity_bytes = s.cluster.chip.hbm_capacity.value();
  auto add = [&](const char* name, int64_t b) { r.components.push_back({name, b}); };
  // FSDP over master-dtype shards keeps no bf16 copy: the shards are the
  // master weights (counted with the optimizer) and the gradients come back
  // in their dtype.
  const bool master_shards = fsdp && p.fsdp_params_are_master;
  add("weights", master_shards ? 0 : state(2, fsdp));
  // Transformer Engine's cached low-precision weights and transposes (fp8:
  // one byte each; MXFP8 and NVFP4 copies carry their block scales).
  const bool low = low_precision_matmuls(p);
  const bool fp8_cache = p.fp8_weight_cache && low && !p.fp8_param_gather;
  const double copy_bytes = low ? operand_bytes(p.matmul_dtype, p.fp8_recipe) : 0;
  add("fp8_weight_cache",
      fp8_cache
          ? static_cast<int64_t>(std::llround(2 * copy_bytes * static_cast<double>(st.low_precision_layer_params)))
          : 0);
  // FSDP without per-microbatch sync accumulates unsharded gradients until
  // the last microbatch reduce-scatters them, in the reduce dtype: PyTorch
  // FSDP2 moves each bf16 .grad into an fp32 accumulator when reduce_dtype
  // is fp32 (pytorch/pytorch#125191, FSDPParam.to_accumulated_grad_if_needed
  // and accumulate_unsharded_grad_if_needed, since 2024-05).
  const bool unsharded_grads = fsdp && !p.fsdp_sync_each_microbatch && p.microbatches() > 1;
  const int64_t grad_bytes = dtype_bytes(master_shards ? p.master_weights_dtype : p.grad_reduce_dtype);
  add("gradients",
      state(grad_bytes, p.zero >= 2) + (unsharded_grads ? state(detail::accumulated_grad_bytes(p), false) : 0));
  add("optimizer_state", state(detail::master_copy_bytes(p) + 2 * dtype_bytes(p.optimizer_state_dtype), p.zero >= 1));
  const int64_t T = p.microbatch_size * p.seq_len / p.cp;
  int64_t buffers = 0;
  if (m.is_moe() && p.ep > 1) {
    // All-to-all send and receive buffers of the dispatched tokens.
    const int64_t rep = p.sequence_parallel ? T / t : T;
    buffers += 2 * 2 * static_cast<int64_t>(static_cast<double>(rep * m.moe.top_k) * m.moe.capacity_factor) * m.hidden;
  }
  // DDP: two buckets in flight, together no more than the stage's gradients
  // (a bucket size beyond them means one bucket of everything). Megatron
  // reduces its contiguous gradient buffer in place.
  const bool in_place = p.framework == Framework::kMegatronCore || p.framework == Framework::kMegatron2021;
  if (!fsdp && shards > 1 && !in_place) {
    buffers += std::min(2 * p.grad_bucket_bytes, state(dtype_bytes(p.grad_reduce_dtype), false));
  }
  if (p.pp > 1) buffers += 4 * (p.sequence_parallel ? T / t : T) * m.hidden * 2;  // send/recv, both ways
  if (p.cp > 1) {
    const int64_t kv = m.kv_heads_per_rank(t);
    buffers += 2 * 2 * T * kv * (m.qk_head_dim() + m.v_head_dim()) * 2;  // ring attention: two K,V(+dK,dV) blocks
  }
  add("comm_buffers", buffers);
  return r;
}

/// Adds the stack's share: what its caching allocator reserves beyond the
/// bytes allocated at the peak (plan.allocator_overhead) and what it holds
/// outside the step (plan.memory_reserved_bytes: CUDA context, NCCL and
/// library workspaces); then the total and whether it fits.
void finish(double allocator_overhead, int64_t reserved_bytes, MemoryReport& r) {
  int64_t allocated = 0;
  for (const auto& c : r.components) allocated += c.bytes;
  r.components.push_back(
      {"allocator_overhead", static_cast<int64_t>(std::llround(allocator_overhead * static_cast<double>(allocated)))});
  r.components.push_back({"framework_reserved", reserved_bytes});
  r.peak_bytes_per_device = 0;
  for (const auto& c : r.components) r.peak_bytes_per_device += c.bytes;
  r.fits = r.peak_bytes_per_device <= r.capacity_bytes;
}
void finish(const Plan& p, MemoryReport& r) {
  finish(p.allocator_overhead, p.memory_reserved_bytes, r);
}

/// "LABEL: name (pass, layer L, microbatch M)" of op `id`.
std::string describe_op(const std::string& label, const Program& program, OpId id) {
  if (program.size() == 0) return "";
  const Op& o = program.op(id);
  std::string out = label + ": " + std::string(program.name(o)) + " (" + std::string(to_string(o.pass));
  if (o.layer >= 0) out += ", layer " + std::to_string(o.layer);
  if (o.microbatch >= 0) out += ", microbatch " + std::to_string(o.microbatch);
  return out + ")";
}

}  // namespace

int64_t layer_activation_bytes(const ModelSpec& m, const Plan& p, bool moe_layer) {
  return layer_memory(m, p, moe_layer, true, false).kept;
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

ProgramMemory walk_program_memory(const Program& program) {
  ProgramMemory w;
  std::array<int64_t, kMemKinds> live{};
  int64_t total = 0;
  const std::vector<MemoryEvent>& ev = program.memory_events();
  size_t e = 0;
  for (OpId i = 0; i < program.size(); ++i) {
    const size_t first = e;
    for (; e < ev.size() && ev[e].op == i; ++e) {
      live[static_cast<size_t>(ev[e].kind)] += ev[e].alloc;
      total += ev[e].alloc;
    }
    w.max_activations = std::max(w.max_activations, live[static_cast<size_t>(MemKind::kActivation)]);
    const int64_t transient = program.op(i).mem_transient.value();
    if (total + transient > w.peak) {
      w.peak = total + transient;
      w.activations = live[static_cast<size_t>(MemKind::kActivation)];
      w.head = live[static_cast<size_t>(MemKind::kHead)];
      w.gathered_params = live[static_cast<size_t>(MemKind::kParams)];
      w.working_set = transient + live[static_cast<size_t>(MemKind::kRecomputed)] +
                      live[static_cast<size_t>(MemKind::kGradBuffers)];
      w.peak_op = i;
    }
    for (size_t j = first; j < e; ++j) {
      live[static_cast<size_t>(ev[j].kind)] -= ev[j].free;
      total -= ev[j].free;
    }
  }
  return w;
}

MemoryReport training_memory(const Scenario& s) {
  const ModelSpec& m = s.model;
  const Plan& p = s.plan;
  const ChunkLayout layout = chunk_layout(m, p);
  const detail::LayerShape sh(m, p);
  const int64_t v = padded_vocab(m, p.tp) / p.tp;
  const DeviceParams dp = device_params(m, p.tp, p.ep, p.seq_len, p.expert_tp);
  const bool fsdp = p.zero == 3 && (p.zero == 3 && p.fsdp_shard_size > 0 ? p.fsdp_shard_size : p.dp) * p.cp > 1;
  LayerMemoryTable mem(m, p);
  MemoryReport best;
  for (int64_t stage = 0; stage < p.pp; ++stage) {
    const StageShape st = stage_shape(s, layout, mem, stage);
    MemoryReport r = resident(s, st);
    r.components.push_back({"activations", peak_in_flight_bytes(p, stage, st.chunk_act) + st.recompute_extra});
    // The head keeps the final norm's input and output and what the loss
    // keeps for its backward (none with vocabulary tiling; loss_memory.h).
    const detail::LossBytes lb = detail::loss_bytes(p.loss_kernel);
    const int64_t loss_kept = p.vocab_tiling > 1 ? 0 : sh.T * v * lb.kept();
    r.components.push_back({"logits", st.has_head ? loss_kept + 2 * sh.Ts * m.hidden * 2 : 0});
    // FSDP: two units gathered at once (the one computing and the
    // prefetched), or every unit of the stage when units stay gathered from
    // their forward to their backward.
    const int64_t per_param = p.fp8_param_gather ? 1 : 2;
    const bool all_gathered = !p.fsdp_reshard_after_forward || !p.fsdp_sync_each_microbatch;
    r.components.push_back({"gathered_params", !fsdp ? 0
                                               : all_gathered
                                                   ? per_param * (st.params + st.expert_params)
                                                   : 2 * per_param *
                                                         std::max({dp.dense_layer, dp.embedding, dp.head,
                                                                   dp.moe_layer_replicated + dp.moe_layer_experts})});
    finish(p, r);
    if (stage == 0 || r.peak_bytes_per_device > best.peak_bytes_per_device) best = r;
  }
  return best;
}

MemoryReport training_memory(const Scenario& s, const ProgramSet& programs) {
  MemoryReport best;
  for (int64_t stage = 0; stage < s.plan.pp; ++stage) {
    const MemoryReport r =
        stage_memory_report(stage_memory_model(s, stage), programs.stages[static_cast<size_t>(stage)],
                            s.cluster.chip.hbm_capacity.value(), "stage " + std::to_string(stage));
    if (stage == 0 || r.peak_bytes_per_device > best.peak_bytes_per_device) best = r;
  }
  return best;
}

StageMemoryModel stage_memory_model(const Scenario& s, int64_t stage) {
  StageMemoryModel m;
  if (s.plan.inference()) {
    m.resident = inference_stage_memory(s, stage).components;
    return m;
  }
  LayerMemoryTable mem(s.model, s.plan);
  m.resident = resident(s, stage_shape(s, chunk_layout(s.model, s.plan), mem, stage)).components;
  m.walk_program = m.finish = true;
  m.allocator_overhead = s.plan.allocator_overhead;
  m.reserved_bytes = s.plan.memory_reserved_bytes;
  return m;
}

MemoryReport stage_memory_report(const StageMemoryModel& model, const Program& program, int64_t capacity_bytes,
                                 const std::string& label) {
  MemoryReport r;
  r.capacity_bytes = capacity_bytes;
  r.components = model.resident;
  if (model.walk_program) {
    const ProgramMemory w = walk_program_memory(program);
    r.components.push_back({"activations", w.activations});
    r.components.push_back({"logits", w.head});
    r.components.push_back({"gathered_params", w.gathered_params});
    r.components.push_back({"working_set", w.working_set});
    r.peak_at = describe_op(label, program, w.peak_op);
  }
  if (model.finish) {
    finish(model.allocator_overhead, model.reserved_bytes, r);
  } else {
    for (const auto& c : r.components) r.peak_bytes_per_device += c.bytes;
    r.fits = r.peak_bytes_per_device <= r.capacity_bytes;
  }
  return r;
}

}  // namespace shardsim

namespace shardsim {

// Inference: the replica's weight shard at weight_dtype (every expert of the
// device's ep share), the KV cache of the batch (each layer of the stage
// keeps 2·kv_heads/tp·head_dim elements per cached position at kv_dtype,
// under MLA the latent and the rotary key, ModelSpec::kv_cache_values;
// context + the new token), the activations of one layer in flight (prefill:
// the whole prompt batch's widest tensors; decode: negligible) and the
// logits of the last positions in fp32.
MemoryReport inference_memory(const Scenario& s) {
  MemoryReport best;
  for (int64_t stage = 0; stage < s.plan.pp; ++stage) {
    const MemoryReport r = inference_stage_memory(s, stage);
    if (stage == 0 || r.peak_bytes_per_device > best.peak_bytes_per_device) best = r;
  }
  return best;
}

namespace {

MemoryReport inference_stage_memory(const Scenario& s, int64_t stage) {
  const ModelSpec& m = s.model;
  const Plan& p = s.plan;
  const ChunkLayout layout = chunk_layout(m, p);
  // The serving lowering splits each expert over tp like a dense MLP
  // (lower_inference.cc), as vLLM and TensorRT-LLM do by default.
  const DeviceParams dp = device_params(m, p.tp, p.ep, p.seq_len, p.tp);
  const int64_t t = p.tp;
  const int64_t positions = p.seq_len + (p.phase == Phase::kDecode ? 1 : 0);
  const int64_t T = p.phase == Phase::kPrefill ? p.microbatch_size * p.seq_len : p.microbatch_size;
  {
    int64_t params = 0, layers = 0;
    const auto g = static_cast<size_t>(stage);
    for (int64_t i = 0; i < layout.count[g]; ++i) {
      const int64_t l = layout.first[g] + i;
      params += m.is_moe_layer(l) ? dp.moe_layer_replicated + dp.moe_layer_experts : dp.dense_layer;
      ++layers;
    }
    // Quantized checkpoints keep the embedding table and the LM head in
    // bf16 (ModelOpt's default configs disable "*lm_head*"; vLLM's fp8 and
    // int8 methods quantize the decoder's linear layers only).
    int64_t bf16_params = 0;
    if (stage == 0) bf16_params += dp.embedding;
    const bool head = stage == p.pp - 1;
    if (head) bf16_params += dp.head;
    MemoryReport r;
    r.capacity_bytes = s.cluster.chip.hbm_capacity.value();
    auto add = [&](const char* name, int64_t b) { r.components.push_back({name, b}); };
    add("weights", params * dtype_bytes(p.weight_dtype) + bf16_params * 2);
    add("kv_cache", layers * p.microbatch_size * positions * m.kv_cache_values(t) * dtype_bytes(p.kv_dtype));
    const int64_t widest = std::max({m.hidden * 4, ((m.heads / t) * m.qk_head_dim() + m.kv_cache_values(t)) * 2,
                                     (m.gated() ? 3 : 2) * (m.ffn_hidden / t)});
    add("activations", T * widest * 2);
    add("logits", head ? p.microbatch_size * (padded_vocab(m, t) / t) * 4 : 0);
    for (const auto& c : r.components) r.peak_bytes_per_device += c.bytes;
    r.fits = r.peak_bytes_per_device <= r.capacity_bytes;
    return r;
  }
}

}  // namespace

MemoryReport step_memory(const Scenario& s, const ProgramSet* programs) {
  if (s.plan.inference()) return inference_memory(s);
  return programs != nullptr ? training_memory(s, *programs) : training_memory(s);
}

}  // namespace shardsim
