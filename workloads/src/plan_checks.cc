// The cross-field checks of a plan against its model and cluster, shared by
// the scenario loader and the plan search.
#include <algorithm>
#include <string>

#include "loader_parts.h"
#include "shardsim/workloads/framework.h"

namespace shardsim {

using namespace detail;

std::optional<PlanIssue> check_plan(const Plan& p, const ModelSpec& m, const ClusterSpec& c) {
  auto s = [](int64_t x) { return std::to_string(x); };
  if (p.cp > 1) {
    if (p.seq_len % (2 * p.cp) != 0) {
      return PlanIssue{"cp", "cp (" + s(p.cp) + ") needs seq_len (" + s(p.seq_len) +
                                 ") to split into 2·cp equal chunks (load-balanced causal ring attention)"};
    }
    if (!p.fused_attention) return PlanIssue{"cp", "ring attention (cp > 1) needs \"attention\": \"fused\""};
    if (p.cp_comm == Plan::CpComm::kAllToAll && (m.heads / std::max<int64_t>(p.tp, 1)) % p.cp != 0) {
      return PlanIssue{"cp_comm", "all-to-all context parallelism needs cp (" + s(p.cp) +
                                      ") to divide the heads per tensor-parallel rank (" + s(m.heads / p.tp) + ")"};
    }
    // The keys' and values' heads too (Transformer Engine's
    // AttnFuncWithCPAndQKVOA2A: "requires num_heads % cp_size == 0 for Q, K,
    // V").
    const int64_t kv_local = m.kv_heads_per_rank(std::max<int64_t>(p.tp, 1));
    if (p.cp_comm == Plan::CpComm::kAllToAll && kv_local % p.cp != 0) {
      return PlanIssue{"cp_comm", "all-to-all context parallelism needs cp (" + s(p.cp) +
                                      ") to divide the key/value heads per tensor-parallel rank (" + s(kv_local) + ")"};
    }
  }
  if (p.master_copy == Plan::MasterCopy::kRemainder && p.master_weights_dtype != DType::kFp32) {
    return PlanIssue{"master_copy",
                     "\"remainder\" keeps the low half of fp32 master weights: needs "
                     "\"master_weights_dtype\": \"fp32\""};
  }
  if (p.master_copy == Plan::MasterCopy::kNone && p.master_weights_dtype != DType::kBf16) {
    return PlanIssue{"master_copy",
                     "\"none\" makes the bf16 parameters the master weights: needs "
                     "\"master_weights_dtype\": \"bf16\""};
  }
  if (p.master_copy != Plan::MasterCopy::kFull && p.zero == 3 && p.fsdp_params_are_master) {
    return PlanIssue{"master_copy",
                     "FSDP shards that are the master weights (fsdp_params_are_master) hold them "
                     "in full: use \"full\""};
  }
  if (p.ep > 1 && !m.is_moe())
    return PlanIssue{"ep", "expert parallelism needs a mixture-of-experts model; use ep = 1"};
  if (p.fsdp_bucket_params > 0 && p.zero != 3) return PlanIssue{"fsdp_bucket_params", "needs zero 3"};
  if (p.fsdp_bucket_params > 0 && p.fsdp_bucket_params < 1'000'000) {
    return PlanIssue{"fsdp_bucket_params", "at least 1,000,000 parameters per bucket are supported"};
  }
  if (p.fsdp_shard_size > 0) {
    if (p.zero != 3) return PlanIssue{"fsdp_shard_size", "hybrid FSDP needs zero 3"};
    if (p.dp % p.fsdp_shard_size != 0) {
      return PlanIssue{"fsdp_shard_size",
                       "fsdp_shard_size (" + s(p.fsdp_shard_size) + ") must divide dp (" + s(p.dp) + ")"};
    }
    if (p.ep > 1 || m.is_moe()) {
      // The experts' shard and replica groups under hybrid FSDP are not
      // modelled (their gradients would reduce over the wrong group).
      return PlanIssue{"fsdp_shard_size", "hybrid FSDP of a mixture of experts is not supported yet"};
    }
    if (p.fsdp_shard_size * p.cp == 1) {
      return PlanIssue{"fsdp_shard_size",
                       "fsdp_shard_size 1 shards nothing: use zero 0 (data parallelism) or a shard group above 1"};
    }
  }
  const int64_t fold = expert_fold(p);
  if (fold > 1 && p.ep > 1 && (p.ep % fold != 0 || p.dp % (p.ep / fold) != 0)) {
    // Smaller expert groups would split a tensor- or context-parallel group,
    // which the mesh's axes cannot name.
    const std::string what = p.expert_tp == 1 && p.tp > 1 ? "tp·cp" : "cp";
    return PlanIssue{"expert_layout", "a folded expert group of ep " + s(p.ep) + " must be a multiple of " + what +
                                          " (" + s(fold) + ") that divides " + what + "·dp (" + s(fold * p.dp) +
                                          "); use expert_layout \"nested\" (ep divides dp)"};
  }
  if (fold == 1 && p.dp % p.ep != 0)
    return PlanIssue{"ep",
                     "ep (" + s(p.ep) + ") must divide dp (" + s(p.dp) + "): experts split the data-parallel ranks"};
  if (m.is_moe() && m.moe.experts % p.ep != 0) {
    return PlanIssue{"ep", "ep (" + s(p.ep) + ") must divide the " + s(m.moe.experts) + " experts"};
  }
  if (p.expert_tp > 1 && (!m.is_moe() || p.expert_tp != p.tp)) {
    return PlanIssue{"expert_tp", "expert_tp must be 1 or tp (" + s(p.tp) +
                                      ") for a mixture of experts: the experts' "
                                      "MLPs split over the tensor-parallel group"};
  }
  if (p.expert_tp > 1 && m.moe.expert_ffn_hidden % p.expert_tp != 0) {
    return PlanIssue{"expert_tp", "expert_tp (" + s(p.expert_tp) + ") must divide expert_ffn_hidden (" +
                                      s(m.moe.expert_ffn_hidden) + ")"};
  }
  if (m.is_moe() && p.tp > 1 && !p.sequence_parallel && !p.inference()) {
    return PlanIssue{"sequence_parallel",
                     "a mixture of experts with tp > 1 needs sequence_parallel: each tp rank routes its own tokens"};
  }
  if (p.matmul_dtype == DType::kFp8 && c.chip.fp8_peak.value() <= 0) {
    return PlanIssue{"matmul_dtype", "chip " + c.chip.name + " has no fp8 matmul peak"};
  }
  if (p.matmul_dtype == DType::kFp4 && c.chip.fp4_peak.value() <= 0) {
    return PlanIssue{"matmul_dtype", "chip " + c.chip.name + " has no fp4 matmul peak (fp4_flops_per_s)"};
  }
  if (!p.recompute_offload.empty() && c.chip.host_link.value() <= 0) {
    return PlanIssue{"recompute_offload", "chip " + c.chip.name +
                                              " states no host link to time the offloaded tensors' copies "
                                              "(host_link_GBps)"};
  }
  // MXFP8 and NVFP4 GEMMs take their block scales in the tensor cores
  // (Blackwell's tcgen05 block-scaled MMA, compute capability 10.0 on).
  const bool block_scaled = p.fp8_recipe == Plan::Fp8Recipe::kMxfp8 || p.fp8_recipe == Plan::Fp8Recipe::kNvfp4;
  if (p.matmul_dtype != DType::kBf16 && block_scaled && c.chip.family == ChipFamily::kGpu &&
      c.chip.compute_capability < 100) {
    return PlanIssue{"fp8_recipe", std::string(to_string(p.fp8_recipe)) + " needs block-scaled tensor cores: chip " +
                                       c.chip.name + " has compute_capability " +
                                       std::to_string(c.chip.compute_capability) + ", expected 100 or more"};
  }
  if (p.bf16_tail_layers > m.layers) {
    return PlanIssue{"bf16_tail_layers", "bf16_tail_layers (" + s(p.bf16_tail_layers) +
                                             ") exceeds the model's layers (" + s(m.layers) + ")"};
  }
  if (m.heads % p.tp != 0) return PlanIssue{"tp", "tp (" + s(p.tp) + ") must divide heads (" + s(m.heads) + ")"};
  if (m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0) {
    return PlanIssue{"tp", "tp (" + s(p.tp) + ") and kv_heads (" + s(m.kv_heads) + ") must divide one another"};
  }
  if (m.ffn_hidden % p.tp != 0)
    return PlanIssue{"tp", "tp (" + s(p.tp) + ") must divide ffn_hidden (" + s(m.ffn_hidden) + ")"};
  if (p.sequence_parallel && (p.seq_len / p.cp) % p.tp != 0) {
    return PlanIssue{"seq_len", "with sequence_parallel, tp (" + s(p.tp) + ") must divide the tokens per cp rank (" +
                                    s(p.seq_len / p.cp) + ")"};
  }
  __int128 prod = static_cast<__int128>(p.dp) * p.tp * p.pp * p.cp;
  if (prod != c.devices) {
    const std::string got =
        prod > kMaxDevices ? std::string("more than ") + s(kMaxDevices) : s(static_cast<int64_t>(prod));
    return PlanIssue{"", "dp·tp·pp·cp = " + got + " but the cluster has " + s(c.devices) + " devices"};
  }
  if (p.pp > 1024) return PlanIssue{"pp", "at most 1024 pipeline stages are supported"};
  if (p.schedule == PipelineSchedule::kOneFOneB && p.virtual_stages > 1) {
    return PlanIssue{"virtual_stages", "virtual_stages > 1 needs schedule \"interleaved\" (or \"gpipe\")"};
  }
  if (p.pp == 1 && p.virtual_stages > 1) {
    return PlanIssue{"virtual_stages", "virtual_stages > 1 needs pp > 1: model chunks interleave over pipeline stages"};
  }
  if (p.layers_per_stage.empty()) {
    if (p.pp * p.virtual_stages > m.layers) {
      return PlanIssue{"virtual_stages",
                       "pp·virtual_stages (" + s(p.pp * p.virtual_stages) + ") exceeds the " + s(m.layers) + " layers"};
    }
  } else {
    if (static_cast<int64_t>(p.layers_per_stage.size()) != p.pp * p.virtual_stages) {
      return PlanIssue{"layers_per_stage", "expected pp·virtual_stages = " + s(p.pp * p.virtual_stages) +
                                               " entries, got " + s(static_cast<int64_t>(p.layers_per_stage.size()))};
    }
    int64_t sum = 0;
    for (int64_t x : p.layers_per_stage) sum += x;
    if (sum != m.layers) {
      return PlanIssue{"layers_per_stage",
                       "the entries sum to " + s(sum) + " but the model has " + s(m.layers) + " layers"};
    }
  }
  if (p.global_batch % (p.dp * p.microbatch_size) != 0) {
    return PlanIssue{"global_batch", "global_batch (" + s(p.global_batch) +
                                         ") must be a multiple of dp·microbatch_size (" + s(p.dp * p.microbatch_size) +
                                         ")"};
  }
  if (p.schedule == PipelineSchedule::kInterleaved && p.pp > 1 && p.microbatches() % p.pp != 0) {
    return PlanIssue{"global_batch", "the interleaved schedule needs the microbatches per replica (" +
                                         s(p.microbatches()) + ") to be a multiple of pp (" + s(p.pp) + ")"};
  }
  const __int128 tokens = static_cast<__int128>(p.global_batch) * p.seq_len;
  if (tokens > (static_cast<__int128>(1) << 50))
    return PlanIssue{"global_batch", "global_batch·seq_len exceeds 2^50 tokens"};
  if (p.seq_len > (int64_t{1} << 24))
    return PlanIssue{"seq_len", "at most 2^24 (16,777,216) tokens per sequence are supported"};
  if (p.microbatch_size > (int64_t{1} << 24) || p.microbatch_size * p.seq_len > (int64_t{1} << 26)) {
    return PlanIssue{"microbatch_size", "microbatch_size·seq_len exceeds 2^26 tokens per microbatch"};
  }
  const __int128 ops = static_cast<__int128>(c.devices) * p.microbatches() * m.layers *
                       (p.recompute == Recompute::kFull ? 60 : 40) / p.pp;
  if (ops > kMaxOpsEstimate) {
    return PlanIssue{"", "the step would have about " + s(static_cast<int64_t>(std::min<__int128>(ops, INT64_MAX))) +
                             " device-ops, more than the supported " + s(kMaxOpsEstimate) +
                             "; use a larger microbatch_size or fewer devices"};
  }
  return std::nullopt;
}

}  // namespace shardsim
