// Software stacks: what a framework does by default when it runs a training
// step (docs/model.md, "Frameworks"). A plan names its framework; the
// framework's defaults fill every stack knob the plan leaves out.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "shardsim/topology/chip.h"
#include "shardsim/workloads/plan.h"

namespace shardsim {

std::string_view to_string(Framework f);
/// Device memory a CUDA process holds outside its allocators (the CUDA
/// context and the modules it loads): 470 MiB, measured for PyTorch with
/// lazy module loading (framework.cc has the source).
int64_t cuda_context_bytes();
/// A recomputation policy as a plan names it ("none", "op_sac", ...).
std::string_view to_string(Recompute r);
/// A pipeline schedule as a plan names it ("1f1b", "gpipe", "interleaved").
std::string_view to_string(PipelineSchedule s);
/// An attention kernel as plans and chip presets name it.
std::string_view to_string(AttentionKernel k);
std::optional<AttentionKernel> attention_kernel_named(std::string_view name);
/// A low-precision recipe as a plan names it ("delayed", "tensorwise", ...).
std::string_view to_string(Plan::Fp8Recipe r);
/// Bytes per element of a matmul operand stored at `dtype` under `recipe`,
/// block scales included: MXFP8 one E8M0 byte per 32 elements, blockwise
/// fp8 an fp32 scale per 128, NVFP4 (fp4) half a byte and an E4M3 byte per
/// 16 (OCP Microscaling Formats v1.0; Transformer Engine's
/// Float8BlockScaling and NVFP4BlockScaling). Per-tensor and per-row scales
/// are negligible; byte-sized types are their size.
double operand_bytes(DType dtype, Plan::Fp8Recipe recipe);
/// The plan's linear layers run fp8 or fp4 GEMMs.
bool low_precision_matmuls(const Plan& p);
/// Layer `layer` (0-based) of a model of `layers` is one of the plan's last
/// bf16_tail_layers, whose linears run and keep bf16.
bool in_bf16_tail(const Plan& p, int64_t layers, int64_t layer);
/// A step's phase as a plan names it ("train", "prefill", "decode").
std::string_view to_string(Phase p);
/// How context parallelism moves keys and values ("p2p", "all_gather", "a2a").
std::string_view to_string(Plan::CpComm c);
/// A serving engine's custom all-reduce ("vllm", "trtllm").
std::string_view to_string(Plan::AllReduceKernels k);
/// A mixture-of-experts token dispatcher ("alltoall", "allgather").
std::string_view to_string(Plan::MoeDispatcher d);
/// A loss kernel ("megatron", "te", "torch", "torch_bf16", "xla").
std::string_view to_string(Plan::LossKernel k);
/// Expert routing ("balanced", "contiguous").
std::string_view to_string(Plan::MoeRouting r);
/// An expert-parallel layout ("nested", "folded").
std::string_view to_string(Plan::ExpertLayout l);
/// What the optimizer holds of the master weights ("full", "remainder", "none").
std::string_view to_string(Plan::MasterCopy c);
/// The framework a plan's "framework" value names, or nullopt.
std::optional<Framework> framework_named(std::string_view name);
/// Every framework, in the order the docs list them.
std::span<const Framework> all_frameworks();

/// A training plan whose stack knobs hold `f`'s defaults (the parallel
/// sizes and the batch are left at Plan's defaults).
Plan framework_defaults(Framework f);
/// The attention kernel `f` runs on chips of `family` where that differs
/// from framework_defaults' (which are its GPU choices), or nullopt.
std::optional<AttentionKernel> framework_attention_kernel(Framework f, ChipFamily family);

}  // namespace shardsim
