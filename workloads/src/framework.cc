// Framework defaults. Each value is the framework's own default or the
// behaviour of its code at the versions the docs name; sources are cited
// beside each, and docs/model.md ("Frameworks") tabulates them.
#include "shardsim/workloads/framework.h"

#include <array>
#include <cstdint>

namespace shardsim {
namespace {

// Megatron-LM 2021's memory-bound kernels (fused scale-mask-softmax,
// dropout, bias-GeLU, the unfused attention's score traffic) reach this
// fraction of the chip's STREAM-measured bandwidth. Fitted, not measured:
// examples/validation/fit_megatron2021.py on the four Megatron-LM SC'21
// Table 1 runs without a pipeline (docs/validation.md).
constexpr double kMegatron2021MemoryKernelEfficiency = 0.67;

/// The CUDA context a PyTorch process holds outside its caching allocator:
/// 0.47 GiB with lazy module loading (A100 80GB, torch 2.1.1+cu121,
/// stas00/ml-engineering training/performance/README.md; ~300-400 MB per
/// pytorch/pytorch#86509 and #107667). No H100 figure is published: the
/// same is assumed. NCCL's buffers (about 9.2 MiB per channel and peer
/// connection, NVIDIA/nccl src/init.cc) are not counted.
constexpr int64_t kCudaContextBytes = 470LL << 20;

constexpr std::array<Framework, 6> kAll = {Framework::kGeneric,    Framework::kMegatron2021, Framework::kMegatronCore,
                                           Framework::kTorchtitan, Framework::kMaxtext,      Framework::kDeepspeed};

}  // namespace

int64_t cuda_context_bytes() {
  return kCudaContextBytes;
}

std::string_view to_string(Framework f) {
  switch (f) {
    case Framework::kGeneric:
      return "generic";
    case Framework::kMegatron2021:
      return "megatron-2021";
    case Framework::kMegatronCore:
      return "megatron-core";
    case Framework::kTorchtitan:
      return "torchtitan";
    case Framework::kMaxtext:
      return "maxtext";
    case Framework::kDeepspeed:
      return "deepspeed";
  }
  return "?";
}

std::string_view to_string(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::kGpipe:
      return "gpipe";
    case PipelineSchedule::kInterleaved:
      return "interleaved";
    case PipelineSchedule::kOneFOneB:
      break;
  }
  return "1f1b";
}

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
    case Recompute::kSaveDots:
      return "save_dots";
    case Recompute::kSaveQkv:
      return "save_qkv_proj";
    case Recompute::kOpSac:
      return "op_sac";
    case Recompute::kCustom:
      return "custom";
  }
  return "?";
}

std::string_view to_string(Plan::Fp8Recipe r) {
  switch (r) {
    case Plan::Fp8Recipe::kDelayed:
      return "delayed";
    case Plan::Fp8Recipe::kTensorwise:
      return "tensorwise";
    case Plan::Fp8Recipe::kRowwise:
      return "rowwise";
    case Plan::Fp8Recipe::kRowwiseGwHp:
      return "rowwise_gw_hp";
    case Plan::Fp8Recipe::kMxfp8:
      return "mxfp8";
    case Plan::Fp8Recipe::kBlockwise:
      return "blockwise";
    case Plan::Fp8Recipe::kNvfp4:
      return "nvfp4";
  }
  return "?";
}

double operand_bytes(DType dtype, Plan::Fp8Recipe recipe) {
  if (dtype == DType::kFp4) return 0.5 + 1.0 / 16;
  if (dtype == DType::kFp8 && recipe == Plan::Fp8Recipe::kMxfp8) return 1.0 + 1.0 / 32;
  if (dtype == DType::kFp8 && recipe == Plan::Fp8Recipe::kBlockwise) return 1.0 + 4.0 / 128;
  return dtype_bytes(dtype);
}

bool low_precision_matmuls(const Plan& p) {
  return p.matmul_dtype == DType::kFp8 || p.matmul_dtype == DType::kFp4;
}

bool in_bf16_tail(const Plan& p, int64_t layers, int64_t layer) {
  return p.bf16_tail_layers > 0 && layer >= 0 && layer >= layers - p.bf16_tail_layers;
}

std::string_view to_string(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::kDefault:
      return "default";
    case AttentionKernel::kFlash2:
      return "flash2";
    case AttentionKernel::kFlash3:
      return "flash3";
    case AttentionKernel::kCudnn:
      return "cudnn";
    case AttentionKernel::kSplash:
      return "splash";
  }
  return "?";
}

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::kPrefill:
      return "prefill";
    case Phase::kDecode:
      return "decode";
    case Phase::kTrain:
      break;
  }
  return "train";
}

std::string_view to_string(Plan::AllReduceKernels k) {
  return k == Plan::AllReduceKernels::kTrtllm ? "trtllm" : "vllm";
}

std::string_view to_string(Plan::CpComm c) {
  switch (c) {
    case Plan::CpComm::kAllGather:
      return "all_gather";
    case Plan::CpComm::kAllToAll:
      return "a2a";
    case Plan::CpComm::kP2p:
      break;
  }
  return "p2p";
}

std::string_view to_string(Plan::MoeDispatcher d) {
  return d == Plan::MoeDispatcher::kAllGather ? "allgather" : "alltoall";
}

std::string_view to_string(Plan::LossKernel k) {
  switch (k) {
    case Plan::LossKernel::kTe:
      return "te";
    case Plan::LossKernel::kTorch:
      return "torch";
    case Plan::LossKernel::kTorchBf16:
      return "torch_bf16";
    case Plan::LossKernel::kXla:
      return "xla";
    case Plan::LossKernel::kTorchCompiled:
      return "torch_compiled";
    case Plan::LossKernel::kMegatron:
      break;
  }
  return "megatron";
}

std::string_view to_string(Plan::MoeRouting r) {
  return r == Plan::MoeRouting::kContiguous ? "contiguous" : "balanced";
}

std::string_view to_string(Plan::ExpertLayout l) {
  return l == Plan::ExpertLayout::kFolded ? "folded" : "nested";
}

std::string_view to_string(Plan::MasterCopy c) {
  switch (c) {
    case Plan::MasterCopy::kRemainder:
      return "remainder";
    case Plan::MasterCopy::kNone:
      return "none";
    case Plan::MasterCopy::kFull:
      break;
  }
  return "full";
}

std::optional<AttentionKernel> attention_kernel_named(std::string_view name) {
  for (auto k : {AttentionKernel::kDefault, AttentionKernel::kFlash2, AttentionKernel::kFlash3, AttentionKernel::kCudnn,
                 AttentionKernel::kSplash}) {
    if (to_string(k) == name) return k;
  }
  return std::nullopt;
}

std::optional<Framework> framework_named(std::string_view name) {
  for (Framework f : kAll) {
    if (to_string(f) == name) return f;
  }
  return std::nullopt;
}

std::span<const Framework> all_frameworks() {
  return kAll;
}

std::optional<AttentionKernel> framework_attention_kernel(Framework f, ChipFamily family) {
  // MaxText's attention "autoselected" (its base.yml default) runs Pallas's
  // splash kernel on TPUs for training (attention_op.py, target_hardware
  // "tpu"), cudnn_flash_te on GPUs.
  if (f == Framework::kMaxtext && family == ChipFamily::kTpu) return AttentionKernel::kSplash;
  return std::nullopt;
}

Plan framework_defaults(Framework f) {
  Plan p;
  p.framework = f;
  if (f != Framework::kGeneric && f != Framework::kMaxtext) p.memory_reserved_bytes = kCudaContextBytes;
  switch (f) {
    case Framework::kGeneric:
      break;
    case Framework::kMegatron2021:
      // Megatron-LM of 2021-2022 (Narayanan et al. 2021; Korthikanti et al.
      // 2022): unfused attention (softmax and dropout through HBM),
      // pipeline p2p that blocks the compute stream and splits boundary
      // activations over tp (scatter/gather), the tp all-reduce of an input
      // gradient after its weight gradient, no gradient-accumulation fusion.
      p.fused_attention = false;
      p.p2p_blocking = true;
      p.p2p_scatter_gather = true;
      p.tp_grad_overlap = false;
      p.grad_accumulation_fusion = false;
      p.memory_kernel_efficiency = kMegatron2021MemoryKernelEfficiency;
      break;
    case Framework::kMegatronCore:
      // Transformer Engine's DotProductAttention picks cuDNN's fused
      // attention on sm90 when both backends are allowed (TransformerEngine
      // v1.11 pytorch/attention.py); NeMo's recipes set NVTE_FUSED_ATTN=1.
      p.attention_kernel = AttentionKernel::kCudnn;
      p.fp8_weight_cache = true;
      // TE saves the quantised GEMM input for the weight gradient
      // (TransformerEngine v1.11 pytorch/module/linear.py: saved_inputmat =
      // inputmat (fp8) unless override_linear_precision.wgrad;
      // layernorm_linear.py saves the quantised ln_out).
      p.low_precision_saved_inputs = true;
      // Expert groups by parallel folding (megatron/core/parallel_state.py
      // from core_v0.10.0: expert_decoder_rank_generator).
      p.expert_layout = Plan::ExpertLayout::kFolded;
      break;
    case Framework::kTorchtitan:
      // Separate wq, wk, wv and w1, w3 linears (torchtitan models/llama);
      // SDPA picks FlashAttention-2 for bf16 (flash > efficient > math).
      p.fused_qkv = false;
      p.fused_gate_up = false;
      p.attention_kernel = AttentionKernel::kFlash2;
      p.compile = false;  // training.compile defaults to false (torchtitan config_manager.py)
      // The output projection and the loss stay outside torch.compile
      // (parallelize_llama.py compiles each TransformerBlock only).
      p.loss_kernel = Plan::LossKernel::kTorch;
      p.fsdp_params_are_master = true;  // FSDP2 MixedPrecisionPolicy(param_dtype=bf16) over fp32 shards
      p.fsdp_copy_out = true;           // FSDP2's all-gather copy-out and reduce-scatter copy-in
      p.fsdp_keep_root = true;          // the root and the last block stay gathered for the backward
      p.pp_keep_outputs = true;         // torch.distributed.pipelining keeps each sent output
      // Expert parallelism borrows all of cp (and of tp with expert tp 1)
      // and some of dp_shard (pytorch/torchtitan@0119de1
      // torchtitan/distributed/parallel_dims.py, ParallelDims._validate and
      // build_mesh's ep_computation_dims).
      p.expert_layout = Plan::ExpertLayout::kFolded;
      break;
    case Framework::kMaxtext:
      // Separate query, key, value and wi_0, wi_1 projections (MaxText
      // layers); on GPUs cudnn_flash_te (Transformer Engine over cuDNN).
      p.fused_qkv = false;
      p.fused_gate_up = false;
      p.attention_kernel = AttentionKernel::kCudnn;
      p.loss_kernel = Plan::LossKernel::kXla;
      p.fsdp_params_are_master = true;  // weight_dtype float32, cast to dtype bf16 in the layers
      p.fp8_casts_fused = true;         // XLA fuses flax's fp8 quantisation into the producers
      break;
    case Framework::kDeepspeed:
      // Megatron-DeepSpeed of 2021-2022 runs Megatron-LM's model code of the
      // time: unfused attention and its memory-bound kernels.
      p.fused_attention = false;
      p.memory_kernel_efficiency = kMegatron2021MemoryKernelEfficiency;
      break;
  }
  // Megatron's ranks, innermost first: tensor, context, (expert,) data, then
  // pipeline outermost (megatron/core/parallel_state.py initialize_model_
  // parallel, order "tp-cp-ep-dp-pp", which NeMo 2 passes unless
  // use_tp_pp_dp_mapping: nemo/lightning/_strategy_lib.py; Megatron-LM of
  // 2021, mpu/initialize.py, builds its data-parallel groups inside each
  // pipeline stage's block of ranks the same way), where shardsim's default
  // puts data parallelism outermost.
  if (f == Framework::kMegatron2021 || f == Framework::kMegatronCore || f == Framework::kDeepspeed) {
    p.mesh_order = {MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kDp, MeshAxis::kPp};
  }
  return p;
}

}  // namespace shardsim
