#!/usr/bin/env python3
"""Writes one shardsim serving scenario per expressible row of measurements.json (scenarios/*.json) and
manifest.json (every row, with the reason a row is skipped).

Every choice a source leaves open is made by one rule, written into the scenario's published.assumptions,
and made before any prediction was looked at:
- Cluster: the row's GPU preset (an A100 of unstated memory: the 80 GB SXM preset), tp x pp devices on one
  NVSwitch node. fp16 runs as bf16 (same bytes, same tensor-core rate).
- trtllm-bench max-load rows (perf-overview pages): engine "trtllm" (in-flight batching, GUARANTEED_NO_EVICT,
  no chunked context, 32-token blocks: 64 on the 0.17 engine), every request queued at 0 ("arrivals": "burst"), the page's request
  count and fixed lengths (prepare_dataset.py token-norm-dist, stdev 0), --kv_cache_free_gpu_mem_fraction
  0.95 (the pages: "in majority of cases" / "in many cases"), max batch and tokens from trtllm-bench's own
  heuristic (the loader applies it). FP8 quantization: fp8 weights and KV cache (the 0.17 page says FP8
  quantization makes the KV cache FP8; the later pages' ModelOpt FP8 checkpoints are taken alike).
  Mixtral: experts split over tp (TensorRT-LLM's default moe_tp_size = tp, no expert parallelism). The 0.17
  engine (TensorRT backend): 64-token KV pages and no CUDA graphs (its build and bench defaults), and the host
  time each iteration adds, TRTLLM_017_ITERATION_OVERHEAD_US, a parameter of that stack fitted by
  fit_iteration_overhead.py on the source's development rows (marked published.fitted).
- The online table (Triton + tensorrtllm_backend 0.14): engine "trtllm" with the engine builder's defaults
  max_batch_size 2048 and max_num_tokens 8192 (trtllm-build), KV fraction 0.9 (the backend's default),
  bf16 weights and KV cache; Poisson arrivals at the QPS (500 requests), QPS INF as a burst. Throughput is
  a prediction only where the server saturated (request throughput below 0.95 x QPS, or INF): elsewhere it
  equals the offered load and is not compared. TTFT and mean inter-token latency are compared everywhere.
  The host time each iteration adds (the streamed responses through the backend) is a parameter of this
  stack, TRITON_TRTLLM_014_ITERATION_OVERHEAD_US, fitted by fit_iteration_overhead.py on the source's
  development rows (marked published.fitted) and carried by all of its rows.
- Static-batch rows (gptSessionBenchmark, the H200 launch blog): the "generic" engine with the batch as
  max_batch, every request queued at 0, the whole batch's prompts in one iteration (max_batched_tokens =
  batch x input), then decode to the end: one static batch. First-token latency rows: batch 1, output 1.
- vLLM CI latency rows (benchmark_latency, batch of 8 prompts through the LLM class): engine "vllm" with the
  LLM class's max_num_batched_tokens 16384 (H200), every request queued at 0; mean end-to-end latency.
Skipped: rows whose engine is not named (NIM), whose GPU or length distribution is not stated (the vLLM
Llama 3.1 blog), or with no request count.

Usage: make_scenarios.py (from this directory; rewrites scenarios/ and manifest.json)
"""
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
CHIPS = {"h100-sxm": "h100-sxm", "h200-sxm": "h200-sxm", "a100-sxm-80g": "a100-sxm-80g", "a100-sxm": "a100-sxm-80g"}
DTYPES = {"fp8": "fp8", "bf16": "bf16", "fp16": "bf16"}


# TensorRT-LLM's engine (TRT backend) reduces tensor-parallel activations with its AllreducePlugin under the
# default strategy AUTO, which never picks two-shot (docs/inference.md).
TRTLLM_ENGINE_ALL_REDUCE = ("tp all-reduces as TensorRT-LLM's engine plugin picks them under AUTO: one-shot at 2 ranks "
                            "(16 MB workspace), below 1 MB up to 4 ranks and 500 kB beyond, NCCL otherwise "
                            "(cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp selectImplementation at "
                            "0.17.0.post1: two-shot disabled)")

# Host time per iteration of TensorRT-LLM 0.14 streaming through Triton (serving.iteration_overhead_us): no
# source publishes it; fitted by fit_iteration_overhead.py on the development rows of trtllm-online-0.14
# (Llama 3 70B, tp 4, H100 and H200; 2026-12-01: 19.3% -> 13.3% mean |error| over their 92 metrics).
TRITON_TRTLLM_014_ITERATION_OVERHEAD_US = 4250

# Host time per iteration of TensorRT-LLM 0.17's C++ executor on its TensorRT engine path, run by trtllm-bench
# (serving.iteration_overhead_us): scheduling, the runtime's per-request buffers, the decoder's setup and the
# responses, between the GPU's iterations (no overlap scheduler there; 1.0's PyTorch path hides it). No source
# publishes it; fitted by fit_iteration_overhead.py on the development rows of trtllm-perf-0.17 (2026-12-02: their
# 104 throughputs 13.32% -> 7.70% mean |error|; 6250: 7.70%, 6750: 7.72%). A constant fitted to throughput
# absorbs whatever else these rows miss, not host time alone (docs/validation.md, serving evaluation 8).
TRTLLM_017_ITERATION_OVERHEAD_US = 6500

# TensorRT-LLM 0.17's engine as trtllm-bench builds and runs it: KV pages of 64 tokens (tensorrt_llm/plugin/
# plugin.py@258c7540 (0.17.0.post1) PluginConfig._tokens_per_block 64; the 1.0 default of 32 is the trtllm
# engine policy's) and no CUDA graphs (trtllm-bench's PerformanceOptions.cuda_graphs False).
TRTLLM_017_TOKENS_PER_BLOCK = 64


def skip_reason(row):
    if row["engine"] not in ("trtllm", "vllm"):
        return "engine not named by the source (%s)" % row["engine"]
    if row["source"] == "vllm-blog-llama31":
        return "GPU and length distribution not stated"
    if row["mode"] == "max_load" and not row.get("num_requests"):
        return "request count not stated"
    return None


def metrics(row):
    m = row["measured"]
    out = {}
    if row["mode"] == "rate":
        saturated = m["request_throughput_per_s"] < 0.95 * row["rate_per_s"]
        if saturated:
            out["output_tokens_per_s"] = m["output_tokens_per_s"]
        out["ttft_mean_s"] = m["ttft_mean_ms"] / 1000
        out["itl_mean_s"] = m["itl_mean_ms"] / 1000
        return out
    for k, v in m.items():
        if k == "output_tokens_per_s":
            out["output_tokens_per_s"] = v
        elif k == "output_tokens_per_s_per_gpu":
            out["output_tokens_per_s_per_device"] = v
        elif k == "ttft_mean_ms" or k == "ttft_ms":
            out["ttft_mean_s"] = v / 1000
        elif k == "itl_mean_ms":
            out["itl_mean_s"] = v / 1000
        elif k == "e2e_mean_ms":
            out["e2e_mean_s"] = v / 1000
    return out


def scenario(row, split):
    notes = []
    chip = CHIPS[row["gpu"]]
    if row["gpu"] == "a100-sxm":
        notes.append("A100 memory not stated: the 80 GB SXM preset")
    tp, pp = row["tp"], row.get("pp") or 1
    wd = DTYPES[row["weight_dtype"]]
    kd = DTYPES.get(row["kv_dtype"] or "", None)
    plan = {"phase": "decode", "tp": tp, "pp": pp, "weight_dtype": wd}
    serving = {"requests": 1, "seed": 1}
    isl, osl = row["input_tokens"], row["output_tokens"]
    src = row["source"]
    if src in ("trtllm-perf-0.17", "trtllm-perf-1.0", "trtllm-perf-devguide-latest"):
        kd = kd or ("fp8" if wd == "fp8" else "bf16")
        serving.update({"engine": "trtllm", "arrivals": "burst", "requests": row["num_requests"],
                        "kv_memory_fraction": 0.95})
        notes.append("trtllm-bench max load: burst of the page's %d requests, KV fraction 0.95 of free memory, "
                     "max batch and tokens from trtllm-bench's heuristic" % row["num_requests"])
        if row["kv_dtype"] is None:
            notes.append("KV cache dtype not stated: %s as the checkpoint's quantization" % kd)
        if src == "trtllm-perf-0.17":
            plan["custom_all_reduce_kernels"] = "trtllm"
            notes.append(TRTLLM_ENGINE_ALL_REDUCE)
            plan["cuda_graphs"] = False
            serving["block_tokens"] = TRTLLM_017_TOKENS_PER_BLOCK
            notes.append("the 0.17 engine's KV pages of %d tokens (tensorrt_llm/plugin/plugin.py@258c7540 "
                         "_tokens_per_block) and no CUDA graphs (trtllm-bench PerformanceOptions.cuda_graphs "
                         "False)" % TRTLLM_017_TOKENS_PER_BLOCK)
            serving["iteration_overhead_us"] = TRTLLM_017_ITERATION_OVERHEAD_US
            notes.append("host time per iteration %d us: the 0.17 executor's work between iterations, a parameter "
                         "of this stack fitted by fit_iteration_overhead.py on the source's development rows"
                         % TRTLLM_017_ITERATION_OVERHEAD_US)
    elif src == "trtllm-online-0.14":
        kd = kd or "bf16"
        serving.update({"engine": "trtllm", "requests": row["num_requests"] or 500, "max_batch": 2048,
                        "max_batched_tokens": 8192, "kv_memory_fraction": 0.9})
        if row["mode"] == "rate":
            serving.update({"arrivals": "poisson", "rate_per_s": row["rate_per_s"]})
            notes.append("Poisson arrivals at %g/s (the table's QPS)" % row["rate_per_s"])
        else:
            serving["arrivals"] = "burst"
        notes.append("engine limits not stated: trtllm-build's defaults max_batch_size 2048, max_num_tokens 8192; "
                     "KV fraction 0.9 (tensorrtllm_backend default); KV cache bf16")
        notes.append("tp all-reduces with the default (vLLM's) kernel choice: 0.14's AllreducePlugin was not read "
                     "(0.10's predates the two-shot workaround that 0.17's carries; evaluation 7 in evaluations.md)")
        serving["iteration_overhead_us"] = TRITON_TRTLLM_014_ITERATION_OVERHEAD_US
        notes.append("host time per iteration %d us: Triton's streamed responses, a parameter of this stack fitted "
                     "by fit_iteration_overhead.py on the source's development rows"
                     % TRITON_TRTLLM_014_ITERATION_OVERHEAD_US)
    elif src in ("trtllm-perf-0.6.1-static", "trtllm-h200-launch-blog"):
        kd = kd or ("fp8" if wd == "fp8" else "bf16")
        b = row["concurrency"]
        if "ttft_ms" in row["measured"]:
            osl = 1
        serving.update({"engine": "generic", "arrivals": "burst", "requests": b, "max_batch": b,
                        "max_batched_tokens": b * isl, "kv_memory_fraction": 0.9})
        notes.append("static batch of %d: all prompts in one iteration, then decode" % b)
        if row["kv_dtype"] is None:
            notes.append("KV cache dtype not stated: %s as the weights" % kd)
    elif src == "vllm-buildkite-perf-9515":
        kd = kd or "bf16"
        b = row["concurrency"]
        serving.update({"engine": "vllm", "arrivals": "burst", "requests": b, "max_batched_tokens": 16384})
        notes.append("benchmark_latency: a batch of %d through the LLM class (max_num_batched_tokens 16384)" % b)
    else:
        raise ValueError(src)
    plan["kv_dtype"] = kd
    serving["prompt_tokens"] = isl
    serving["output_tokens"] = osl
    if row["model"].startswith("mixtral"):
        notes.append("experts split over tp (no expert parallelism stated)")
    published = {"row": row["id"], "split": split, "source_id": src,
                 "source": "%s, %s" % (row["locator"], row["engine_version"]),
                 "assumptions": "; ".join(notes) + ("; caveats: " + row["caveats"] if row.get("caveats") else "")}
    if src in ("trtllm-online-0.14", "trtllm-perf-0.17") and split == "development":
        published["fitted"] = True
    published.update(metrics(row))
    return {
        "description": "%s on %d x %s (tp %d), %d in / %d out, %s (%s)" % (
            row["model"], tp * pp, chip, tp, isl, osl, row["mode"], row["id"]),
        "model": row["model"],
        "cluster": {"chip": chip, "devices": tp * pp, "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": tp * pp}},
        "plan": plan,
        "serving": serving,
        "published": published,
    }


def main():
    rows = json.load(open(os.path.join(HERE, "measurements.json")))["rows"]
    split = json.load(open(os.path.join(HERE, "split.json")))
    side = {r: "development" for r in split["development"]}
    side.update({r: "held_out" for r in split["held_out"]})
    out_dir = os.path.join(HERE, "scenarios")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    manifest = []
    for row in rows:
        entry = {"id": row["id"], "split": side[row["id"]], "framework": row["engine"], "chip": row["gpu"]}
        reason = skip_reason(row)
        if reason:
            entry["skipped"] = reason
        else:
            with open(os.path.join(out_dir, row["id"] + ".json"), "w") as f:
                json.dump(scenario(row, side[row["id"]]), f, indent=1)
                f.write("\n")
        manifest.append(entry)
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        json.dump({"generated_by": "make_scenarios.py", "rows": manifest}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
