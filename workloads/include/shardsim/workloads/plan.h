// A parallelism plan for one training step.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/workloads/schedule.h"

namespace shardsim {

/// What each layer keeps for its backward pass; what it does not keep but
/// needs is recomputed just before its backward (docs/model.md,
/// "Recomputation").
enum class Recompute : uint8_t {
  kNone,       ///< keep everything the backward reads
  kSelective,  ///< re-run the attention core (Korthikanti et al. 2022; Megatron's "selective")
  kFull,       ///< keep each layer's input only and re-run the layer
  kSaveDots,   ///< keep matmul and attention outputs (JAX dots_with_no_batch_dims_saveable, MaxText "minimal")
  kSaveQkv,    ///< keep the q, k, v projections (MaxText "save_qkv_proj")
  kOpSac,      ///< torchtitan's per-op selective checkpointing: attention and every other matmul output
  kCustom,     ///< keep the tensors named in Plan::recompute_keep (MaxText "custom")
};
/// The software stack that runs the step: it selects how the stack lowers
/// and schedules the step and what it holds in memory (docs/model.md,
/// "Frameworks"); every knob it sets stays overridable in the plan.
enum class Framework : uint8_t {
  kGeneric,       ///< no stack-specific behaviour (shardsim's defaults before frameworks)
  kMegatron2021,  ///< Megatron-LM of 2021-2022 (the SC'21 and Korthikanti et al. runs)
  kMegatronCore,  ///< Megatron-Core with Transformer Engine (NeMo, 2024-2025)
  kTorchtitan,    ///< PyTorch FSDP2 / DTensor as torchtitan runs it
  kMaxtext,       ///< JAX/XLA (MaxText, Paxml)
  kDeepspeed,     ///< Megatron-DeepSpeed
};
/// What one step does: a training step, or an inference prefill (a batch of
/// prompts) or decode step (one new token for each sequence of a batch).
enum class Phase : uint8_t { kTrain, kPrefill, kDecode };

struct Plan {
  Phase phase = Phase::kTrain;
  int64_t dp = 1, tp = 1, pp = 1, cp = 1, ep = 1;
  /// 0: data parallel with all-reduced gradients; 1: optimizer state sharded
  /// over dp; 2: gradients too; 3: parameters too (FSDP).
  int zero = 0;
  int64_t microbatch_size = 1;  ///< sequences per microbatch per replica
  int64_t global_batch = 1;     ///< sequences per step, all replicas
  int64_t seq_len = 2048;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  /// recompute "custom": the tensors kept, by name (docs/scenario.md).
  std::vector<std::string> recompute_keep;
  /// Tensors kept in host memory instead of HBM (MaxText's "offload"): they
  /// cost no device memory. Their host transfers are not timed (assumed
  /// hidden behind compute, as the offload is scheduled to be; no host-link
  /// rate is modelled: docs/model.md, known gaps).
  std::vector<std::string> recompute_offload;
  /// The policy applies to the first recompute_layers layers of each
  /// pipeline chunk (Megatron's block method); the others keep everything.
  /// 0: every layer.
  int64_t recompute_layers = 0;
  /// The policy applies to one layer in every recompute_every (torchtitan's
  /// "selective layer" checkpointing); the others keep everything. 0: every
  /// layer.
  int64_t recompute_every = 0;
  Framework framework = Framework::kGeneric;
  /// The q, k, v projections run as one GEMM (Megatron's linear_qkv); false:
  /// three (torchtitan's wq, wk, wv; MaxText's query, key, value).
  bool fused_qkv = true;
  /// SwiGLU's gate and up projections run as one GEMM (Megatron's fc1).
  bool fused_gate_up = true;
  /// The layer's elementwise work (norms, rotary embedding, activation,
  /// the loss) runs as fused kernels: Transformer Engine's, XLA's, or
  /// PyTorch's under torch.compile. false: PyTorch eager, one kernel (and
  /// one pass over the tensor) per operator (torchtitan without compile).
  bool compile = true;
  /// Data parallelism: gradient buckets are reduced as soon as they fill
  /// during the last backward (Megatron-Core overlap_grad_reduce, PyTorch
  /// DDP); false: all after the backward.
  bool overlap_grad_reduce = true;
  /// ZeRO-1/2: the all-gather of the updated parameters overlaps the next
  /// step's forward, bucket by bucket (Megatron-Core overlap_param_gather):
  /// in a steady-state step it runs at the step's start and each layer's
  /// forward waits for its bucket only.
  bool overlap_param_gather = false;
  /// Parameter all-gathers (ZeRO-1/2 and FSDP) move fp8 weights (Transformer
  /// Engine fp8 parameters, torchao's float8 all-gather).
  bool fp8_param_gather = false;
  /// fp8 GEMMs of the backward pass (activation and weight gradients)
  /// accumulate fast, as the forward's do; false (every stack's default):
  /// they promote partial sums to fp32 (Transformer Engine's DelayedScaling
  /// and Float8CurrentScaling use the split accumulator for dgrad and wgrad,
  /// transformer_engine/common/recipe/__init__.py; torchao's Float8LinearConfig
  /// fast-accumulates gemm_config_output only, torchao/float8/config.py;
  /// Flax's fp8 dot takes its gradients at Precision.HIGHEST, which XLA runs
  /// without fast accumulation, flax/linen/fp8_ops.py).
  bool fp8_backward_fast_accum = false;
  /// FSDP: a unit's gathered parameters are freed after its forward and
  /// gathered again for its backward; false: kept until the backward.
  bool fsdp_reshard_after_forward = true;
  /// FSDP: gradients are reduce-scattered after every microbatch's backward
  /// (PyTorch FSDP2's default); false: the unit stays gathered and its
  /// gradients accumulate unsharded over the microbatches, gathered once
  /// and reduce-scattered once per step (PyTorch's pipeline schedules turn
  /// gradient sync off for all but the last microbatch; NeMo AutoModel's
  /// enable_fsdp_optimizations). Defaults to false for torchtitan with pp > 1.
  bool fsdp_sync_each_microbatch = true;
  /// Tensor-parallel communication overlapped with the GEMMs around it
  /// (Transformer Engine userbuffers): the all-gather before a
  /// column-parallel GEMM and the reduce-scatter after a row-parallel one
  /// run in chunks pipelined with the GEMM's chunks, and the backward's
  /// gathers and reduce-scatters overlap the independent GEMM beside them.
  bool tp_comm_overlap = false;
  /// SMs a pipelined userbuffers reduce-scatter holds beside its GEMM
  /// (Transformer Engine's num_sm; ring exchanges use copy engines).
  int tp_comm_overlap_sms = 16;
  /// How context parallelism moves keys and values: a ring of
  /// point-to-point transfers overlapped with the attention steps (p2p,
  /// Megatron's default), one all-gather of the keys and values per
  /// attention (PyTorch's allgather rotation), or all-to-alls that trade
  /// sequence for heads (a2a, Ulysses).
  enum class CpComm : uint8_t { kP2p, kAllGather, kAllToAll } cp_comm = CpComm::kP2p;
  /// How the loss runs, which decides what the head holds per logit of the
  /// device's vocabulary shard (loss_memory.h gives the bytes; docs/model.md
  /// "The head's memory"): megatron (Megatron-Core's VocabParallelCrossEntropy,
  /// fused or not: fp32 softmax kept), te (Transformer Engine's in-place
  /// Triton kernel: the bf16 logits kept), torch (torch.nn.functional.cross_entropy
  /// on logits.float(), eager: torchtitan), torch_bf16 (the same on bf16
  /// logits, kept referenced: NeMo AutoModel), xla (fused by XLA: the fp32
  /// logits kept: MaxText), torch_compiled (torchtitan's cross-entropy on
  /// logits.float() under torch.compile, since 2025-04: the bf16 logits kept).
  enum class LossKernel : uint8_t {
    kMegatron,
    kTe,
    kTorch,
    kTorchBf16,
    kXla,
    kTorchCompiled
  } loss_kernel = LossKernel::kMegatron;
  /// The head and the loss run over the tokens in this many chunks, each
  /// chunk's logits recomputed in the backward (MaxText's num_vocab_tiling):
  /// only one chunk's logits are ever live, for one more head GEMM.
  int64_t vocab_tiling = 1;
  /// The embedding lookup runs as a matmul of the tokens' one-hot rows by
  /// the table, and its gradient as the transposed one (MaxText's
  /// use_iota_embed, which its TPU recipes set): 2·T·V·h FLOPs each way on
  /// the matrix units instead of a gather and a scatter-add.
  bool embedding_matmul = false;
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  int64_t virtual_stages = 1;  ///< model chunks per pipeline stage (interleaving)
  /// Layers of each model chunk in pipeline order (pp·virtual_stages
  /// entries); empty for an even split.
  std::vector<int64_t> layers_per_stage;
  /// Fused (flash) attention keeps no s² tensors; unfused attention writes
  /// the scores and softmax to HBM (and keeps them for backward).
  bool fused_attention = true;
  /// Which fused attention kernel runs it (its measured rate comes from the
  /// chip preset): the framework's default.
  AttentionKernel attention_kernel = AttentionKernel::kDefault;
  /// Splash attention's blocks (MaxText's sa_block_q, sa_block_kv and their
  /// _dkv and _dq variants; 512 each in its base.yml): the kernel computes
  /// every (query block, key block) pair that holds an unmasked element in
  /// full, the forward in q x kv blocks, the backward's dkv and dq kernels
  /// in their own.
  int64_t splash_block_q = 512;
  int64_t splash_block_kv = 512;
  int64_t splash_block_q_dkv = 512;
  int64_t splash_block_kv_dkv = 512;
  int64_t splash_block_q_dq = 512;
  int64_t splash_block_kv_dq = 512;
  /// Splash's one-kernel backward (MaxText's sa_use_fused_bwd_kernel,
  /// false by default): 5 matmuls a block pair; false: a dkv kernel (4)
  /// and a dq kernel (3), the scores and dP computed twice.
  bool splash_fused_backward = false;
  bool fsdp_prefetch = true;  ///< ZeRO-3: all-gather layer i+1 during layer i
  /// Pipeline sends and receives block the compute stream (Megatron-LM
  /// 2021-2022: batch_isend_irecv, wait, torch.cuda.synchronize()); false:
  /// they run on their own streams beside compute.
  bool p2p_blocking = false;
  /// Without sequence parallelism, each tensor-parallel rank sends only its
  /// 1/tp slice of the boundary activation and the receiver all-gathers it
  /// over NVLink (Narayanan et al. 2021, section 4.1, "scatter/gather").
  bool p2p_scatter_gather = false;
  /// The tensor-parallel all-reduce of an input gradient overlaps the
  /// weight-gradient matmul (Megatron-LM's async all-reduce, late 2021);
  /// false: it starts after it, as autograd ran it before.
  bool tp_grad_overlap = true;
  /// Weight-gradient matmuls accumulate straight into the main gradient
  /// buffer (Megatron-LM's gradient-accumulation fusion, late 2021); false:
  /// they write a fresh gradient that a separate kernel adds into the
  /// buffer, every microbatch (Megatron-LM's local DDP hook and PyTorch's
  /// AccumulateGrad before it).
  bool grad_accumulation_fusion = true;
  /// Hybrid FSDP (zero 3): shard within groups of this many dp ranks and
  /// replicate across dp / fsdp_shard_size groups; 0 shards over all of dp.
  int64_t fsdp_shard_size = 0;
  /// FSDP gathers each unit in slices of this many parameters and
  /// reduce-scatters in grad_bucket_bytes pieces (DeepSpeed ZeRO-3's prefetch
  /// and reduce buckets); 0: one collective per unit (PyTorch FSDP).
  int64_t fsdp_bucket_params = 0;
  /// FSDP (zero 3) holds the sharded parameters in master_weights_dtype and
  /// casts them to bf16 as it gathers them (PyTorch FSDP2's mixed precision,
  /// MaxText's weight_dtype): the shards are the master copy and gradients
  /// come back in that dtype. false: a bf16 shard beside the master copy
  /// (DeepSpeed ZeRO-3).
  bool fsdp_params_are_master = false;
  /// FSDP (zero 3) copies through staging buffers, as PyTorch FSDP2 does
  /// (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py): after each
  /// all-gather, split_with_sizes_copy moves the gathered flat buffer into
  /// the unsharded parameters (read and write every gathered byte, on the
  /// compute stream); before each reduce-scatter, chunk_cat packs the
  /// unsharded gradients into the reduce-scatter input in grad_reduce_dtype
  /// (read the bf16 gradients, write the buffer). false: the collectives
  /// work on the parameters and gradients in place (Megatron-Core's
  /// contiguous buffers, XLA).
  bool fsdp_copy_out = false;
  /// FSDP keeps the root and the last layer gathered from their forward to
  /// their backward, as PyTorch FSDP2 under torchtitan does: the root (the
  /// embedding, the final norm and the output layer, one FSDP unit whose
  /// parameters are gathered when the step starts) is never resharded after
  /// its forward and its gradients are reduced after the embedding's
  /// backward; torchtitan wraps each block with reshard_after_forward =
  /// layer_id < n_layers - 1 (parallelize_llama.py).
  bool fsdp_keep_root = false;
  /// Each pipeline chunk keeps the output it sends on from its forward to
  /// its backward, as PyTorch's pipelining does (stage.py: forward_one_chunk
  /// puts it in fwd_cache, backward_one_chunk pops it); false: freed once
  /// sent, as Megatron's deallocate_output_tensor does (only the layers'
  /// inputs are kept).
  bool pp_keep_outputs = false;
  /// Transformer Engine keeps each linear layer's fp8 weight and its
  /// transpose across steps when bf16 weights run fp8 GEMMs (Megatron-Core
  /// passes is_first_microbatch): 2 bytes per linear parameter.
  bool fp8_weight_cache = false;
  /// A low-precision linear keeps the input its weight gradient needs in
  /// the GEMM's own format (fp8, or NVFP4 codes, with their scales) instead
  /// of bf16: Transformer Engine's Linear and LayerNormLinear under every
  /// fp8 and block-scaled recipe (they save the quantised input, column-wise
  /// usage only), torchao's NVFP4Linear (it saves the column-wise NVFP4
  /// codes). torchao's Float8Linear and MX linears keep the bf16 input
  /// (false). A tensor another backward also reads in bf16 (attention's
  /// output, which flash attention's backward needs) is kept twice.
  bool low_precision_saved_inputs = false;
  /// Delayed-scaling fp8 quantisation is fused into the kernels that
  /// produce the quantised tensors, as XLA compiles flax's Fp8DotGeneralOp
  /// (MaxText): the convert and the amax reduction join the producer's loop
  /// fusion, which writes the fp8 copy (1 byte an element) with no pass of
  /// its own, and XLA's GEMM rewriter folds the scales into the cuBLASLt fp8
  /// GEMM (openxla/xla gemm_rewriter.cc, __cublas$lt$matmul$f8). Tensors
  /// made by a library call or a collective (the attention kernel's output,
  /// dispatched tokens, gathered weights) are still cast by a fusion of
  /// their own (read 2, write 1). false: Transformer Engine's separate cast
  /// and cast-transpose kernels (its norms write fp8 themselves). Other
  /// recipes keep their kernels.
  bool fp8_casts_fused = false;
  /// Precision of the optimizer copies, fp32 by default (Micikevicius et al.
  /// 2018, mixed precision): master weights and the two Adam moments.
  DType master_weights_dtype = DType::kFp32;
  DType optimizer_state_dtype = DType::kFp32;
  /// What the optimizer holds of the master weights (Apex
  /// DistributedFusedAdam, NeMo 1.x's data-parallel optimizer, as NeMo's
  /// MegatronBaseModel.setup_optimization configures it): full (a copy at
  /// master_weights_dtype); remainder (store_param_remainders: only the low
  /// 16 bits of each fp32 master weight, whose high 16 bits are the bf16
  /// parameter; 2 bytes; needs master_weights_dtype fp32); none
  /// (store_params false when the optimizer dtype is the model's: the bf16
  /// parameters are the master weights; needs master_weights_dtype bf16).
  enum class MasterCopy : uint8_t { kFull, kRemainder, kNone } master_copy = MasterCopy::kFull;
  int64_t grad_bucket_bytes = 160'000'000;  ///< Megatron default: 40M fp32 grads
  DType grad_reduce_dtype = DType::kFp32;
  DType matmul_dtype = DType::kBf16;
  /// How low-precision matmuls are scaled (the quantisation recipe):
  /// Transformer Engine's delayed scaling (amax history), per-tensor current
  /// scaling (tensorwise), per-row scaling (rowwise; rowwise_gw_hp keeps
  /// the weight-gradient GEMM in bf16), MXFP8 (an E8M0 scale per block of
  /// 32), blockwise fp8 (an fp32 scale per 1x128 block of activations and
  /// 128x128 block of weights: DeepSeek-V3, TE Float8BlockScaling), all with
  /// matmul_dtype fp8; NVFP4 (E2M1 elements, an E4M3 scale per block of 16
  /// and an fp32 one per tensor) with matmul_dtype fp4, the only fp4 recipe.
  /// Decides the quantisation kernels a GEMM pays for, the scale bytes its
  /// operands carry and which GEMMs run in low precision.
  enum class Fp8Recipe : uint8_t {
    kDelayed,
    kTensorwise,
    kRowwise,
    kRowwiseGwHp,
    kMxfp8,
    kBlockwise,
    kNvfp4
  } fp8_recipe = Fp8Recipe::kDelayed;
  /// The last this-many decoder layers keep bf16 matmuls under an fp8 or
  /// fp4 matmul_dtype (torchtitan's NVFP4 "bf16 tail", after "Pretraining
  /// LLMs with NVFP4", arXiv:2509.25149; Megatron-LM's
  /// --num-layers-at-end-in-bf16). 0: every layer in low precision.
  int64_t bf16_tail_layers = 0;
  /// Mixture of experts: how tokens reach the experts' devices, by
  /// all-to-all (Megatron's alltoall dispatcher) or by all-gathering every
  /// token over the expert-parallel group (its allgather dispatcher).
  enum class MoeDispatcher : uint8_t { kAllToAll, kAllGather } moe_dispatcher = MoeDispatcher::kAllToAll;
  /// Experts' MLPs split over this many tensor-parallel ranks (Megatron's
  /// expert_tensor_parallel_size); 1: whole experts.
  int64_t expert_tp = 1;
  /// Which devices form an expert-parallel group. kNested: ep is the inner
  /// part of data parallelism, outside tp and cp (Megatron-Core up to
  /// core_v0.9.0: one RankGenerator, order "tp-cp-ep-dp-pp"; ep divides dp).
  /// kFolded: Megatron-Core's "parallel folding" (core_v0.10.0 on: a second
  /// RankGenerator for the expert layers, tp = expert_tp, cp = 1, over the
  /// same order; arXiv:2504.14960), where an expert group takes consecutive
  /// ranks past its expert_tp ones, spanning the context-parallel ranks and,
  /// with expert_tp 1, the tensor-parallel ones before data parallelism.
  /// Training only (expert_fold).
  enum class ExpertLayout : uint8_t { kNested, kFolded } expert_layout = ExpertLayout::kNested;
  /// The local experts run as one grouped GEMM; false: one GEMM per expert.
  bool moe_grouped_gemm = true;
  /// A model with biases adds its experts' biases in separate passes after
  /// each grouped GEMM (NeMo AutoModel's GroupedExperts._apply_bias: a
  /// per-expert add and a concatenation, in fp32 after the down projection
  /// where the bias is weighted by the routing probability); false: in the
  /// GEMM's epilogue, free.
  bool moe_bias_passes = false;
  /// The dispatch sends a token once to each rank that holds any of its
  /// experts (DeepEP), not once per expert.
  bool moe_dedup = false;
  /// Which experts a token picks, for how many ranks that spreads it over:
  /// balanced random routing (a token's top_k experts fall on distinct
  /// ranks almost independently), or contiguous experts (NeMo AutoModel's
  /// fake balanced gate: experts (token·k + j) mod E, on adjacent ranks).
  enum class MoeRouting : uint8_t { kBalanced, kContiguous } moe_routing = MoeRouting::kBalanced;
  /// The fraction of the chip's streaming bandwidth (its STREAM-measured
  /// memory_efficiency) that the stack's kernels reach on memory-bound work:
  /// 1 for today's fused kernels; fitted for Megatron-LM 2021's
  /// (examples/validation/fit_megatron2021.py, docs/validation.md).
  double memory_kernel_efficiency = 1.0;
  /// Device memory the stack holds outside the step's tensors: CUDA context,
  /// NCCL and library workspaces (bytes); the framework's default.
  int64_t memory_reserved_bytes = 0;
  /// What a caching allocator reserves beyond the bytes allocated at the
  /// peak, as a fraction of them (fragmentation); the framework's default.
  double allocator_overhead = 0;
  std::array<MeshAxis, kNumMeshAxes> mesh_order{MeshAxis::kTp, MeshAxis::kCp, MeshAxis::kPp, MeshAxis::kDp};
  // Inference (phase prefill or decode). Each of the dp replicas serves its
  // own batch of microbatch_size sequences; seq_len is the prompt length
  // (prefill) or the tokens already in each sequence's KV cache (decode).
  /// Weights as stored: bf16, fp8 (fp8 matmuls where the chip has them) or
  /// int8 (weight-only quantisation: read as 1 byte, multiplied in bf16).
  DType weight_dtype = DType::kBf16;
  DType kv_dtype = DType::kBf16;  ///< KV cache elements: bf16, fp8 or int8
  /// Decode kernels replayed as a CUDA graph (vLLM's default): no per-op
  /// launch overhead.
  bool cuda_graphs = true;
  /// Inference: small tensor-parallel all-reduces inside an NVLink node use
  /// the engine's custom kernels rather than NCCL (vLLM, TensorRT-LLM, SGLang
  /// default).
  bool custom_all_reduce = true;
  /// Whose kernels and thresholds those are: vllm (one-shot for small
  /// messages, two-shot up to 8 MiB; SGLang runs the same kernels) or trtllm
  /// (TensorRT-LLM's engine plugin: one-shot only, NCCL past it;
  /// docs/inference.md).
  enum class AllReduceKernels : uint8_t { kVllm, kTrtllm } custom_all_reduce_kernels = AllReduceKernels::kVllm;

  /// Every field equal (the search's and the scenario writer's round trip).
  bool operator==(const Plan&) const = default;

  bool inference() const { return phase != Phase::kTrain; }

  int64_t microbatches() const { return global_batch / (dp * microbatch_size); }
  /// Tokens a step processes: a decode step makes one per sequence;
  /// training and prefill process every token of every sequence.
  int64_t tokens_per_step() const { return phase == Phase::kDecode ? global_batch : global_batch * seq_len; }
  int64_t chunks() const { return pp * virtual_stages; }
  int64_t devices() const { return dp * tp * pp * cp; }
};

/// The tensor- and context-parallel ranks a folded expert group spans
/// before data parallelism, whatever ep is: under ExpertLayout::kFolded in
/// training, cp and, with expert_tp 1, tp too; 1 otherwise.
inline int64_t folded_ranks(const Plan& p) {
  if (p.inference() || p.expert_layout != Plan::ExpertLayout::kFolded) return 1;
  return p.cp * (p.expert_tp == 1 ? p.tp : 1);
}
/// How many devices of each expert-parallel group lie outside data
/// parallelism: folded_ranks where there is expert parallelism (the group
/// then holds whole tensor- and context-parallel groups and ep / fold
/// data-parallel positions); 1 without it, or nested, where the group is ep
/// data-parallel positions.
inline int64_t expert_fold(const Plan& p) {
  return p.ep > 1 ? folded_ranks(p) : 1;
}

}  // namespace shardsim
