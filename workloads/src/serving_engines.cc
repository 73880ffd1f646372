// Scheduler policies of serving engines: the defaults a "serving" object's
// `engine` gives the fields it leaves out. Each value is the engine's own
// default, read in its source (the notes name file and version):
//
// vLLM V1 (vllm/engine/arg_utils.py EngineArgs._set_default_args, v0.11):
//   chunked prefill always on, running requests first (decode or next chunk)
//   then waiting ones in the leftover budget, so iterations mix; block_size
//   16; gpu_memory_utilization 0.9 of the device for weights + cache; recompute
//   preemption of the last running request. For the API server
//   (`vllm serve`, what `vllm bench serve` measures) max_num_batched_tokens
//   8192 and max_num_seqs 1024 on GPUs of at least 70 GiB other than A100,
//   2048 and 256 otherwise (the offline LLM class: 16384 / 8192).
// SGLang (python/sglang/srt/server_args.py, v0.5): chunked_prefill_size 8192
//   below 160 GiB of device memory, 16384 above; page_size 1; a prefill batch
//   whenever one can be formed, else a decode batch (enable_mixed_chunk off);
//   mem_fraction_static = (memory - reserved) / memory with reserved = 512 +
//   1.5·max(chunk, 2048) + 2·cuda_graph_max_bs + 1024·tp·pp/8 MiB, at least
//   10 GiB above 60 GiB of memory, cuda_graph_max_bs 256 below tp 4 else 512
//   (512 above 160 GiB); max_running_requests min(KV tokens / 2, 2048): the
//   request pool's floor of 2048 for long-context models (max_batch 2048;
//   the KV / 2 cap is not applied: it binds only below 4096 cached tokens).
// TensorRT-LLM (trtllm-bench throughput, PyTorch backend, 1.0): in-flight
//   batching mixes context and generation requests; chunked context off;
//   GUARANTEED_NO_EVICT reserves each request's prompt and maximum output;
//   tokens_per_block 32; the KV cache takes 0.9 of the memory left after the
//   weights; max_batch_size and max_num_tokens from trtllm-bench's tuning
//   heuristic (tensorrt_llm/bench/build/tuning.py, applied by the loader,
//   which knows the request lengths: trtllm_bench_limits).
// Prefix caching is on by default in all three: vLLM V1 turns it on
//   (tests/v1/engine/test_engine_args.py: "V1 turns on prefix caching by
//   default"), SGLang's radix cache is on unless disable_radix_cache
//   (server_args.py, default False), TensorRT-LLM reuses KV blocks unless
//   told not to (tensorrt_llm/llmapi/llm_args.py KvCacheConfig
//   enable_block_reuse, default True). The generic policy (vLLM V0) has it
//   off (enable_prefix_caching defaulted to False there).
#include <algorithm>
#include <cmath>

#include "shardsim/core/error.h"
#include "shardsim/workloads/framework.h"
#include "shardsim/workloads/serving.h"

namespace shardsim {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

int64_t round_up(double x, int64_t step) {
  return static_cast<int64_t>(std::ceil(x / static_cast<double>(step))) * step;
}

}  // namespace

ServingSpec serving_engine_defaults(const std::string& engine, const ChipSpec& chip, const Plan& plan) {
  ServingSpec s;  // "generic": vLLM V0's scheduler (no chunking, prefill first)
  s.engine = engine;
  const double memory = static_cast<double>(chip.hbm_capacity.value());
  if (engine == "generic") return s;
  if (engine == "vllm") {
    const bool large = memory >= 70 * kGiB && chip.name.find("a100") == std::string::npos;
    s.max_batched_tokens = large ? 8192 : 2048;
    s.max_batch = large ? 1024 : 256;
    s.block_tokens = 16;
    s.kv_memory_fraction = 0.9;
    s.chunked_prefill = true;
    s.mixed_batches = true;
    s.prefix_caching = true;
    return s;
  }
  if (engine == "sglang") {
    const double mib = memory / kMiB;
    const int64_t chunk = mib < 160 * 1024 ? 8192 : 16384;
    const double graph_bs = mib >= 160 * 1024 ? 512 : (plan.tp < 4 ? 256 : 512);
    double reserved = 512 + 1.5 * static_cast<double>(std::max<int64_t>(chunk, 2048)) + 2 * graph_bs +
                      1024.0 * static_cast<double>(plan.tp * plan.pp) / 8;
    if (mib > 60 * 1024) reserved = std::max(reserved, 10.0 * 1024);
    s.kv_memory_fraction = std::round((mib - reserved) / mib * 1000) / 1000;
    s.max_batched_tokens = chunk;
    s.max_batch = 2048;
    s.block_tokens = 1;
    s.activation_workspace = false;  // the reserve above holds them
    s.chunked_prefill = true;
    s.mixed_batches = false;
    s.prefix_caching = true;
    return s;
  }
  if (engine == "trtllm") {
    s.max_batch = 2048;  // trtllm-serve's defaults, until trtllm_bench_limits
    s.max_batched_tokens = 8192;
    s.block_tokens = 32;
    s.kv_memory_fraction = 0.9;
    s.kv_memory_of_free = true;
    // The fraction is of cudaMemGetInfo's free memory once the engine is
    // loaded (KVCacheManager: free memory x kv_cache_free_gpu_mem_fraction),
    // which the CUDA context has already taken.
    s.runtime_reserved_bytes = cuda_context_bytes();
    s.chunked_prefill = false;
    s.mixed_batches = true;
    s.admission = Admission::kReserveOutput;
    s.prefix_caching = true;
    return s;
  }
  throw InputError("", "/serving/engine",
                   "unknown engine \"" + engine + "\" (expected generic, vllm, sglang or trtllm)");
}

TrtllmLimits trtllm_bench_limits(const ModelSpec& m, const ChipSpec& chip, const Plan& plan, DType weight_dtype,
                                 DType kv_dtype, double isl, double osl, double kv_fraction) {
  // calc_engine_setting: bytes of K and V per token over every layer (KV
  // heads replicated up to tp; MLA's latent on every tp rank), and requests
  // of isl + osl tokens that fit in the fraction of the memory the weights
  // leave, on all the GPUs.
  const double gpus = static_cast<double>(plan.tp * plan.pp);
  const double per_token =
      static_cast<double>(m.layers) * static_cast<double>(plan.tp * m.kv_cache_values(plan.tp)) * dtype_bytes(kv_dtype);
  const double weights = static_cast<double>(count_params(m).total()) * dtype_bytes(weight_dtype);
  const double available = static_cast<double>(chip.hbm_capacity.value()) * gpus - weights;
  const double requests = std::max(0.0, available * kv_fraction / (per_token * (isl + osl)));
  // finetune_setting: caps, then rounding to the engine's steps.
  const double raw_bs = std::min(requests, 4096.0) / static_cast<double>(plan.pp);
  const double raw_tokens = std::min(raw_bs * (1 + isl / osl), 32768.0);
  TrtllmLimits out;
  out.max_batch = raw_bs < 256    ? std::max<int64_t>(64, round_up(raw_bs, 32))
                  : raw_bs < 1024 ? round_up(raw_bs, 128)
                                  : round_up(raw_bs, 256);
  out.max_batched_tokens = raw_tokens < 4096   ? std::max<int64_t>(2048, round_up(raw_tokens, 256))
                           : raw_tokens < 8192 ? round_up(raw_tokens, 512)
                                               : round_up(raw_tokens, 1024);
  return out;
}

}  // namespace shardsim
