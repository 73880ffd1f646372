// The plan field table (plan_fields.h). What each field means is documented
// on Plan (plan.h) and in docs/scenario.md; this file says only how each is
// read, written and reset.
#include "plan_fields.h"

#include <string>
#include <utility>
#include <vector>

#include "layer_graph.h"
#include "loader_parts.h"
#include "shardsim/workloads/framework.h"

namespace shardsim::detail {
namespace {

template <class T>
std::function<void(Plan&)> reset_of(T Plan::*m) {
  return [m](Plan& p) { p.*m = Plan{}.*m; };
}

template <class T>
std::function<Json(const Plan&)> write_of(T Plan::*m) {
  return [m](const Plan& p) { return Json(p.*m); };
}

/// An integer in [lo, hi]; absent keeps the current value.
template <class T>
PlanField int_in(std::string_view key, uint8_t phases, T Plan::*m, int64_t lo, int64_t hi) {
  return {key,
          phases,
          false,
          [key = std::string(key), m, lo, hi](ObjectReader& r, Plan& p, bool) {
            p.*m = static_cast<T>(r.int_in(key, lo, hi, static_cast<int64_t>(p.*m)));
          },
          write_of(m),
          reset_of(m)};
}

/// A positive integer; absent keeps the current value.
PlanField positive(std::string_view key, uint8_t phases, int64_t Plan::*m) {
  return {
      key,         phases,
      false,       [key = std::string(key), m](ObjectReader& r, Plan& p, bool) { p.*m = r.positive_int(key, p.*m); },
      write_of(m), reset_of(m)};
}

/// A positive integer or absent (0: the feature is off). Written only when on.
PlanField positive_or_off(std::string_view key, int64_t Plan::*m) {
  return {key,
          kTrainOnly,
          false,
          [key = std::string(key), m](ObjectReader& r, Plan& p, bool) { p.*m = r.positive_int(key, p.*m); },
          [m](const Plan& p) { return p.*m > 0 ? Json(p.*m) : Json(); },
          reset_of(m)};
}

/// A positive integer the plan must give.
PlanField required(std::string_view key, uint8_t phases, int64_t Plan::*m) {
  return {key,         phases,
          false,       [key = std::string(key), m](ObjectReader& r, Plan& p, bool) { p.*m = r.positive_int(key); },
          write_of(m), reset_of(m)};
}

PlanField boolean(std::string_view key, uint8_t phases, bool Plan::*m) {
  return {key,         phases,
          false,       [key = std::string(key), m](ObjectReader& r, Plan& p, bool) { p.*m = r.boolean(key, p.*m); },
          write_of(m), reset_of(m)};
}

PlanField number_in(std::string_view key, double Plan::*m, double lo, double hi) {
  return {
      key,
      kTrainOnly,
      false,
      [key = std::string(key), m, lo, hi](ObjectReader& r, Plan& p, bool) { p.*m = r.number_in(key, lo, hi, p.*m); },
      write_of(m),
      reset_of(m)};
}

/// One of `values`, named by to_string, in the order the error message
/// lists them; absent keeps the current value.
template <class E>
PlanField choice(std::string_view key, uint8_t phases, E Plan::*m, std::vector<E> values) {
  auto read = [key = std::string(key), m, values](ObjectReader& r, Plan& p, bool) {
    std::vector<std::string> names;
    names.reserve(values.size());
    for (E v : values) names.emplace_back(to_string(v));
    const std::string got = r.choice(key, names, std::string(to_string(p.*m)));
    for (E v : values) {
      if (to_string(v) == got) p.*m = v;
    }
  };
  return {key,        phases, false, std::move(read), [m](const Plan& p) { return Json(std::string(to_string(p.*m))); },
          reset_of(m)};
}

/// Tensor names of the layer graph (recompute_keep, recompute_offload).
void read_tensor_names(ObjectReader& r, const std::string& key, std::vector<std::string>& out) {
  if (!r.has(key)) return;
  const Json& names = r.raw(key);
  if (!names.is_array() || names.size() > 64) {
    r.fail(key, "expected an array of tensor names (" + recompute_names() + ")");
  }
  out.clear();
  for (size_t i = 0; i < names.size(); ++i) {
    if (!names[i].is_string() || !nodes_named(names[i].get<std::string>()).has_value()) {
      r.fail(key + "/" + std::to_string(i), "expected one of " + recompute_names() + ", got " + describe(names[i]));
    }
    out.push_back(names[i].get<std::string>());
  }
}

PlanField tensor_names(std::string_view key, std::vector<std::string> Plan::*m) {
  return {key,
          kTrainOnly,
          false,
          [key = std::string(key), m](ObjectReader& r, Plan& p, bool) { read_tensor_names(r, key, p.*m); },
          [m](const Plan& p) { return (p.*m).empty() ? Json() : Json(p.*m); },
          reset_of(m)};
}

PlanField searched(PlanField f) {
  f.searched = true;
  return f;
}

std::vector<PlanField> make_fields() {
  using P = Plan;
  const uint8_t train = kTrainOnly;
  std::vector<PlanField> f;
  // The phase decides which fields a plan has; the loader reads it first.
  f.push_back({"phase", kEveryPhase, false, [](ObjectReader& r, Plan&, bool) { r.has("phase"); },
               [](const Plan& p) { return Json(std::string(to_string(p.phase))); }, reset_of(&P::phase)});
  // The framework sets the defaults of every stack knob below.
  f.push_back({"framework", train, false,
               [](ObjectReader& r, Plan& p, bool) {
                 std::vector<std::string> names;
                 for (Framework fw : all_frameworks()) names.emplace_back(to_string(fw));
                 p = framework_defaults(*framework_named(r.choice("framework", names, "generic")));
               },
               [](const Plan& p) { return Json(std::string(to_string(p.framework))); }, reset_of(&P::framework)});
  f.push_back(searched(positive("dp", kEveryPhase, &P::dp)));
  f.push_back(searched(positive("tp", kEveryPhase, &P::tp)));
  f.push_back(searched(positive("pp", kEveryPhase, &P::pp)));
  f.push_back(searched(positive("cp", train, &P::cp)));
  f.push_back(searched(positive("ep", kEveryPhase, &P::ep)));
  f.push_back(searched(int_in("zero", train, &P::zero, 0, 3)));
  f.push_back(searched(positive("microbatch_size", train, &P::microbatch_size)));
  f.push_back(required("global_batch", train, &P::global_batch));
  f.push_back(required("seq_len", train, &P::seq_len));
  // Inference: sequences per replica and the step's token position.
  f.push_back(positive("batch", kInferenceOnly, &P::microbatch_size));
  for (Phase ph : {Phase::kPrefill, Phase::kDecode}) {
    const char* key = ph == Phase::kPrefill ? "prompt_tokens" : "context_tokens";
    // `shardsim serve` sizes each iteration itself: the step shape is optional.
    f.push_back({key, phase_bit(ph), false,
                 [key](ObjectReader& r, Plan& p, bool serving) {
                   p.seq_len = serving ? r.positive_int(key, 1) : r.positive_int(key);
                 },
                 write_of(&P::seq_len), reset_of(&P::seq_len)});
  }
  f.push_back(
      searched(choice("schedule", train, &P::schedule,
                      {PipelineSchedule::kOneFOneB, PipelineSchedule::kGpipe, PipelineSchedule::kInterleaved})));
  f.push_back(searched(int_in("virtual_stages", train, &P::virtual_stages, 1, 1024)));
  f.push_back(searched(choice("recompute", train, &P::recompute,
                              {Recompute::kNone, Recompute::kSelective, Recompute::kFull, Recompute::kSaveDots,
                               Recompute::kSaveQkv, Recompute::kOpSac, Recompute::kCustom})));
  f.push_back(tensor_names("recompute_offload", &P::recompute_offload));
  f.push_back(int_in("recompute_layers", train, &P::recompute_layers, 0, kMaxLayers));
  f.push_back({"recompute_every", train, false,
               [](ObjectReader& r, Plan& p, bool) {
                 p.recompute_every = r.int_in("recompute_every", 0, kMaxLayers, p.recompute_every);
                 if (p.recompute_layers > 0 && p.recompute_every > 0) {
                   r.fail("recompute_every", "recompute_layers and recompute_every cannot both be set");
                 }
               },
               write_of(&P::recompute_every), reset_of(&P::recompute_every)});
  {
    PlanField keep = tensor_names("recompute_keep", &P::recompute_keep);
    keep.searched = true;
    keep.read = [](ObjectReader& r, Plan& p, bool) {
      read_tensor_names(r, "recompute_keep", p.recompute_keep);
      if (p.recompute != Recompute::kCustom && !p.recompute_keep.empty()) {
        r.fail("recompute_keep", "needs \"recompute\": \"custom\"");
      }
      if (p.recompute == Recompute::kCustom && p.recompute_keep.empty() && p.recompute_offload.empty()) {
        r.fail("recompute_keep", "required with \"recompute\": \"custom\": the tensors each layer keeps (" +
                                     recompute_names() + "), or recompute_offload");
      }
    };
    f.push_back(std::move(keep));
  }
  f.push_back({"attention", train, false,
               [](ObjectReader& r, Plan& p, bool) {
                 p.fused_attention =
                     r.choice("attention", {"fused", "unfused"}, p.fused_attention ? "fused" : "unfused") == "fused";
               },
               [](const Plan& p) { return Json(p.fused_attention ? "fused" : "unfused"); },
               reset_of(&P::fused_attention)});
  f.push_back(choice("attention_kernel", train, &P::attention_kernel,
                     {AttentionKernel::kDefault, AttentionKernel::kFlash2, AttentionKernel::kFlash3,
                      AttentionKernel::kCudnn, AttentionKernel::kSplash}));
  f.push_back(boolean("fused_qkv", train, &P::fused_qkv));
  f.push_back(boolean("fused_gate_up", train, &P::fused_gate_up));
  f.push_back(boolean("compile", train, &P::compile));
  f.push_back(boolean("overlap_grad_reduce", train, &P::overlap_grad_reduce));
  f.push_back(boolean("overlap_param_gather", train, &P::overlap_param_gather));
  f.push_back(boolean("fp8_param_gather", train, &P::fp8_param_gather));
  f.push_back(boolean("fp8_backward_fast_accum", train, &P::fp8_backward_fast_accum));
  f.push_back(boolean("fsdp_reshard_after_forward", train, &P::fsdp_reshard_after_forward));
  {
    // torch.distributed.pipelining's stages turn FSDP gradient sync and the
    // post-backward reshard off for all but the last microbatch.
    PlanField sync = boolean("fsdp_sync_each_microbatch", train, &P::fsdp_sync_each_microbatch);
    sync.read = [](ObjectReader& r, Plan& p, bool) {
      p.fsdp_sync_each_microbatch =
          r.boolean("fsdp_sync_each_microbatch", !(p.framework == Framework::kTorchtitan && p.pp > 1));
    };
    f.push_back(std::move(sync));
  }
  f.push_back(boolean("tp_comm_overlap", train, &P::tp_comm_overlap));
  f.push_back(int_in("tp_comm_overlap_sms", train, &P::tp_comm_overlap_sms, 0, 1024));
  f.push_back(
      choice("cp_comm", train, &P::cp_comm, {Plan::CpComm::kP2p, Plan::CpComm::kAllGather, Plan::CpComm::kAllToAll}));
  f.push_back(choice("moe_dispatcher", train, &P::moe_dispatcher,
                     {Plan::MoeDispatcher::kAllToAll, Plan::MoeDispatcher::kAllGather}));
  f.push_back(choice("loss_kernel", train, &P::loss_kernel,
                     {Plan::LossKernel::kMegatron, Plan::LossKernel::kTe, Plan::LossKernel::kTorch,
                      Plan::LossKernel::kTorchBf16, Plan::LossKernel::kXla, Plan::LossKernel::kTorchCompiled}));
  f.push_back(int_in("vocab_tiling", train, &P::vocab_tiling, 1, 4096));
  f.push_back(boolean("embedding_matmul", train, &P::embedding_matmul));
  f.push_back(int_in("splash_block_q", train, &P::splash_block_q, 8, int64_t{1} << 20));
  f.push_back(int_in("splash_block_kv", train, &P::splash_block_kv, 8, int64_t{1} << 20));
  f.push_back(int_in("splash_block_q_dkv", train, &P::splash_block_q_dkv, 8, int64_t{1} << 20));
  f.push_back(int_in("splash_block_kv_dkv", train, &P::splash_block_kv_dkv, 8, int64_t{1} << 20));
  f.push_back(int_in("splash_block_q_dq", train, &P::splash_block_q_dq, 8, int64_t{1} << 20));
  f.push_back(int_in("splash_block_kv_dq", train, &P::splash_block_kv_dq, 8, int64_t{1} << 20));
  f.push_back(boolean("splash_fused_backward", train, &P::splash_fused_backward));
  f.push_back(int_in("expert_tp", train, &P::expert_tp, 1, 1024));
  f.push_back(
      choice("expert_layout", train, &P::expert_layout, {Plan::ExpertLayout::kNested, Plan::ExpertLayout::kFolded}));
  f.push_back(boolean("moe_grouped_gemm", train, &P::moe_grouped_gemm));
  f.push_back(boolean("moe_bias_passes", train, &P::moe_bias_passes));
  f.push_back(boolean("moe_dedup", train, &P::moe_dedup));
  f.push_back(
      choice("moe_routing", train, &P::moe_routing, {Plan::MoeRouting::kBalanced, Plan::MoeRouting::kContiguous}));
  f.push_back(int_in("memory_reserved_bytes", train, &P::memory_reserved_bytes, 0, int64_t{1} << 50));
  f.push_back(number_in("allocator_overhead", &P::allocator_overhead, 0, 10));
  f.push_back(number_in("memory_kernel_efficiency", &P::memory_kernel_efficiency, 0.01, 1));
  f.push_back(searched(boolean("sequence_parallel", train, &P::sequence_parallel)));
  f.push_back(boolean("fsdp_prefetch", train, &P::fsdp_prefetch));
  f.push_back(boolean("p2p_blocking", train, &P::p2p_blocking));
  f.push_back(boolean("p2p_scatter_gather", train, &P::p2p_scatter_gather));
  f.push_back(boolean("tp_grad_overlap", train, &P::tp_grad_overlap));
  f.push_back(boolean("grad_accumulation_fusion", train, &P::grad_accumulation_fusion));
  f.push_back(searched(positive_or_off("fsdp_shard_size", &P::fsdp_shard_size)));
  f.push_back(searched(positive_or_off("fsdp_bucket_params", &P::fsdp_bucket_params)));
  f.push_back(boolean("fsdp_params_are_master", train, &P::fsdp_params_are_master));
  f.push_back(boolean("fsdp_copy_out", train, &P::fsdp_copy_out));
  f.push_back(boolean("fsdp_keep_root", train, &P::fsdp_keep_root));
  f.push_back(boolean("pp_keep_outputs", train, &P::pp_keep_outputs));
  f.push_back(boolean("fp8_weight_cache", train, &P::fp8_weight_cache));
  f.push_back(boolean("low_precision_saved_inputs", train, &P::low_precision_saved_inputs));
  f.push_back(boolean("fp8_casts_fused", train, &P::fp8_casts_fused));
  f.push_back(choice("master_weights_dtype", train, &P::master_weights_dtype, {DType::kFp32, DType::kBf16}));
  f.push_back(choice("optimizer_state_dtype", train, &P::optimizer_state_dtype, {DType::kFp32, DType::kBf16}));
  f.push_back(choice("master_copy", train, &P::master_copy,
                     {Plan::MasterCopy::kFull, Plan::MasterCopy::kRemainder, Plan::MasterCopy::kNone}));
  f.push_back(positive("grad_bucket_bytes", train, &P::grad_bucket_bytes));
  f.push_back(choice("grad_reduce_dtype", train, &P::grad_reduce_dtype, {DType::kFp32, DType::kBf16, DType::kFp16}));
  f.push_back(choice("matmul_dtype", train, &P::matmul_dtype, {DType::kBf16, DType::kFp8, DType::kFp4}));
  {
    using R = Plan::Fp8Recipe;
    PlanField recipe =
        choice("fp8_recipe", train, &P::fp8_recipe,
               {R::kDelayed, R::kTensorwise, R::kRowwise, R::kRowwiseGwHp, R::kMxfp8, R::kBlockwise, R::kNvfp4});
    recipe.read = [base = recipe.read](ObjectReader& r, Plan& p, bool serving) {
      base(r, p, serving);
      const bool given = r.has("fp8_recipe");
      if (p.matmul_dtype == DType::kFp4) {
        // NVFP4 is the one fp4 recipe; it is implied.
        if (given && p.fp8_recipe != R::kNvfp4)
          r.fail("fp8_recipe", "with \"matmul_dtype\": \"fp4\" expected \"nvfp4\"");
        p.fp8_recipe = R::kNvfp4;
      } else if (given && p.matmul_dtype != DType::kFp8) {
        r.fail("fp8_recipe", "needs \"matmul_dtype\": \"fp8\" (or \"fp4\" for nvfp4)");
      } else if (given && p.fp8_recipe == R::kNvfp4) {
        r.fail("fp8_recipe", "nvfp4 needs \"matmul_dtype\": \"fp4\"");
      }
    };
    // The key is written with fp8 matmuls only (fp4 implies nvfp4).
    recipe.write = [](const Plan& p) {
      return p.matmul_dtype == DType::kFp8 ? Json(std::string(to_string(p.fp8_recipe))) : Json();
    };
    f.push_back(std::move(recipe));
  }
  {
    PlanField tail = int_in("bf16_tail_layers", train, &P::bf16_tail_layers, 0, kMaxLayers);
    tail.write = [](const Plan& p) { return p.bf16_tail_layers > 0 ? Json(p.bf16_tail_layers) : Json(); };
    tail.read = [base = tail.read](ObjectReader& r, Plan& p, bool serving) {
      base(r, p, serving);
      if (r.has("bf16_tail_layers") && p.matmul_dtype == DType::kBf16) {
        r.fail("bf16_tail_layers", "needs an fp8 or fp4 \"matmul_dtype\"");
      }
    };
    f.push_back(std::move(tail));
  }
  f.push_back({"mesh_order", train, false,
               [](ObjectReader& r, Plan& p, bool) {
                 if (!r.has("mesh_order")) return;
                 const Json& mo = r.raw("mesh_order");
                 if (!mo.is_array() || mo.size() != kNumMeshAxes) {
                   r.fail("mesh_order",
                          "expected an array naming each of \"tp\", \"cp\", \"pp\", \"dp\" once, innermost first");
                 }
                 uint8_t seen = 0;
                 for (size_t i = 0; i < mo.size(); ++i) {
                   const std::string where = "mesh_order/" + std::to_string(i);
                   std::optional<MeshAxis> a;
                   for (MeshAxis x : {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp}) {
                     if (mo[i].is_string() && mo[i].get<std::string>() == to_string(x)) a = x;
                   }
                   if (!a) r.fail(where, "expected one of \"tp\", \"cp\", \"pp\", \"dp\", got " + describe(mo[i]));
                   if (seen & axis_bit(*a)) r.fail(where, "axis named twice");
                   seen |= axis_bit(*a);
                   p.mesh_order[i] = *a;
                 }
               },
               [](const Plan& p) {
                 Json out = Json::array();
                 for (MeshAxis a : p.mesh_order) out.push_back(std::string(to_string(a)));
                 return out;
               },
               reset_of(&P::mesh_order)});
  f.push_back({"layers_per_stage", train, true,
               [](ObjectReader& r, Plan& p, bool) {
                 if (!r.has("layers_per_stage")) return;
                 const Json& ls = r.raw("layers_per_stage");
                 if (!ls.is_array() || ls.empty() || ls.size() > 1 << 16) {
                   r.fail("layers_per_stage", "expected an array of layer counts, one per pipeline chunk");
                 }
                 p.layers_per_stage.clear();
                 for (size_t i = 0; i < ls.size(); ++i) {
                   if (!ls[i].is_number_integer() || ls[i].get<int64_t>() < 0 || ls[i].get<int64_t>() > kMaxLayers) {
                     r.fail(
                         "layers_per_stage/" + std::to_string(i),
                         "expected a layer count from 0 to " + std::to_string(kMaxLayers) + ", got " + describe(ls[i]));
                   }
                   p.layers_per_stage.push_back(ls[i].get<int64_t>());
                 }
               },
               [](const Plan& p) { return p.layers_per_stage.empty() ? Json() : Json(p.layers_per_stage); },
               reset_of(&P::layers_per_stage)});
  // Inference: how weights and the KV cache are stored, and how the step runs.
  f.push_back(choice("weight_dtype", kInferenceOnly, &P::weight_dtype, {DType::kBf16, DType::kFp8, DType::kInt8}));
  f.push_back(choice("kv_dtype", kInferenceOnly, &P::kv_dtype, {DType::kBf16, DType::kFp8, DType::kInt8}));
  {
    PlanField graphs = boolean("cuda_graphs", kInferenceOnly, &P::cuda_graphs);
    graphs.read = [](ObjectReader& r, Plan& p, bool) {
      p.cuda_graphs = r.boolean("cuda_graphs", p.phase == Phase::kDecode);
    };
    f.push_back(std::move(graphs));
  }
  f.push_back(boolean("custom_all_reduce", kInferenceOnly, &P::custom_all_reduce));
  f.push_back(choice("custom_all_reduce_kernels", kInferenceOnly, &P::custom_all_reduce_kernels,
                     {Plan::AllReduceKernels::kVllm, Plan::AllReduceKernels::kTrtllm}));
  return f;
}

}  // namespace

std::span<const PlanField> plan_fields() {
  static const std::vector<PlanField> kFields = make_fields();
  return kFields;
}

Plan read_plan_fields(ObjectReader& r, Phase phase, bool serving) {
  Plan p;
  p.phase = phase;
  for (const PlanField& f : plan_fields()) {
    if (f.phases & phase_bit(phase)) f.read(r, p, serving);
  }
  if (p.inference()) {
    // Each of the dp replicas serves its own batch; the matmuls run in fp8
    // where the weights are stored in fp8.
    p.global_batch = p.microbatch_size * p.dp;
    p.matmul_dtype = p.weight_dtype == DType::kFp8 ? DType::kFp8 : DType::kBf16;
  }
  return p;
}

Json write_plan_fields(const Plan& p) {
  Json out = Json::object();
  for (const PlanField& f : plan_fields()) {
    if (!(f.phases & phase_bit(p.phase))) continue;
    Json v = f.write(p);
    if (!v.is_null()) out[std::string(f.key)] = std::move(v);
  }
  return out;
}

}  // namespace shardsim::detail
