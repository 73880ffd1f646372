#!/usr/bin/env python3
# What a kernel loses when a communication-like kernel runs beside it on the same GPU, to check
# what the simulator assumes of compute beside a collective (docs/model.md, section 3, "Compute
# beside communication": a compute op beside a collective runs on compute_units - comm_compute_units
# SMs; a memory-bound op is not slowed, HBM contention not modelled).
#
# The co-runner stands in for NCCL's kernels: `blocks` thread blocks of 512 threads, one per SM
# (each asks for enough shared memory that no second block fits), each copying its own slice of a
# buffer far larger than L2 in 32 KiB steps and sleeping `sleep_ns` after each step (__nanosleep):
# a paced stream of HBM reads and writes at a rate set by the sleep, measured alone. `sleep_ns`
# -1 holds the SMs without touching memory (SMs taken, no HBM traffic). One GPU cannot run NCCL
# (it refuses two ranks on one device), so the pacing stands in for a collective's rate: an 8-GPU
# NVLink ring moving B GB/s of bus bandwidth reads and writes about 2B (all-gather) to 3B
# (reduce-scatter) GB/s of its own HBM (send reads, peers' writes into its buffers, reduce reads)
# by counting the ring's steps: an estimate, not measured here.
#
# Victims, each timed with CUDA events over back-to-back calls alone and while the co-runner runs
# (the co-runner is launched first and outlasts them; `overlapped` says it did):
#   - add: c = a + b on 512 MiB bf16 tensors (a memory-bound kernel: bytes/s);
#   - bf16 GEMMs through torch.matmul (cuBLAS): 8192^3, Llama 3 70B's MLP at tp 4 over 16384 tokens
#     (M x N x K = 16384 x 14336 x 8192 and 16384 x 8192 x 7168), and four of 1024-4096 rows whose
#     128 x 256 tiles fill 1, 2, 4 and 8 waves of 132 SMs but 1, 3, 5 and 10 of 108;
#   - FlashAttention through PyTorch SDPA (causal, 1 x 32 heads x 8192 tokens x 128): the forward,
#     and forward + backward.
# In both committed runs (bench/hbm_contention-h100-2026-11-28.json, -h200-) the first victim
# beside the first co-runner (the add beside 24 idle SMs) started only after the co-runner ended:
# the first torch.cuda._sleep loads its kernel lazily, which waits for the device;
# bench/fit_comm_contention.py leaves runs that did not overlap out.
# The co-runner's own rate beside a victim is reported as well (its bytes over the time it ran,
# less what it moved alone after the victims ended, over the time they overlapped).
#
#   python3 bench/hbm_contention_probe.py OUT.json     (about 1.5 minutes on an H200)
import json
import sys

import cupy as cp
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

if len(sys.argv) != 2:
    sys.exit("usage: hbm_contention_probe.py OUT.json")
dev = "cuda"
props = torch.cuda.get_device_properties(0)
out = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
       "sms": props.multi_processor_count, "corunner": {}, "victims": {}, "runs": []}

SRC = r"""
extern "C" __global__ void paced_copy(const float4* __restrict__ src, float4* __restrict__ dst,
                                      long long per_block, int rounds, int sleep_ns) {
  extern __shared__ float4 hold[];  // sized so that one block fills an SM's shared memory
  const long long base = (long long)blockIdx.x * per_block;
  const int step = blockDim.x * 4;  // 4 float4 per thread: 32 KiB per step for 512 threads
  for (int r = 0; r < rounds; ++r) {
    for (long long i = threadIdx.x; i < per_block; i += step) {
      if (sleep_ns >= 0) {
        float4 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          long long j = i + (long long)u * blockDim.x;
          v[u] = j < per_block ? src[base + j] : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          long long j = i + (long long)u * blockDim.x;
          if (j < per_block) dst[base + j] = v[u];
        }
        if (sleep_ns > 0) __nanosleep(sleep_ns);
      } else {
        __nanosleep(2000);
      }
    }
  }
  if (threadIdx.x == 0 && rounds < 0) hold[0] = src[0];  // keeps `hold` alive
}
"""
kernel = cp.RawKernel(SRC, "paced_copy", options=("-std=c++17",))
SMEM = 200 * 1024
kernel.max_dynamic_shared_size_bytes = SMEM
THREADS = 512
SLICE_BYTES = 64 << 20  # per block: 24 blocks move 1.5 GiB per round, far beyond L2
per_block = SLICE_BYTES // 16


def corunner_launch(blocks, sleep_ns, rounds, src, dst):
    kernel((blocks,), (THREADS,), (src, dst, cp.int64(per_block), cp.int32(rounds), cp.int32(sleep_ns)),
           shared_mem=SMEM)


def corunner_alone(blocks, sleep_ns, src, dst):
    """Seconds per round and bytes/s (read + write) of the co-runner alone."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    corunner_launch(blocks, sleep_ns, 1, src, dst)
    torch.cuda.synchronize()
    rounds = 2
    s.record()
    corunner_launch(blocks, sleep_ns, rounds, src, dst)
    e.record()
    e.synchronize()
    per = s.elapsed_time(e) / 1e3 / rounds
    return per, (2 * blocks * SLICE_BYTES / per if sleep_ns >= 0 else 0.0)


def side_stream(stream):
    """CuPy's view of a PyTorch stream (Stream.from_external where this CuPy has it)."""
    if hasattr(cp.cuda.Stream, "from_external"):
        try:
            return cp.cuda.Stream.from_external(stream)
        except (TypeError, AttributeError):
            pass
    return cp.cuda.ExternalStream(stream.cuda_stream)


def victims():
    a = torch.randn(256 << 20, device=dev, dtype=torch.bfloat16)
    b = torch.randn_like(a)
    c = torch.empty_like(a)
    res = {"add": (lambda: torch.add(a, b, out=c), 3 * a.numel() * 2, "bytes")}
    for m, n, k in ((8192, 8192, 8192), (16384, 14336, 8192), (16384, 8192, 7168), (1024, 3072, 8192),
                    (2048, 4096, 8192), (2048, 7168, 8192), (4096, 8192, 8192)):
        name = f"gemm_{m}x{n}x{k}"
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        y = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        res[name] = ((lambda x=x, w=w, y=y: torch.matmul(x, w, out=y)), 2 * m * n * k, "flops")
    q, kk, v = (torch.randn(1, 32, 8192, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
                for _ in range(3))
    g = torch.randn(1, 32, 8192, 128, device=dev, dtype=torch.bfloat16)
    flops_fwd = 4 * 32 * 8192 * 8192 * 128 // 2  # causal: half the score matrix

    def fwd():
        with torch.no_grad(), sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            F.scaled_dot_product_attention(q, kk, v, is_causal=True)

    def fwd_bwd():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            o = F.scaled_dot_product_attention(q, kk, v, is_causal=True)
        torch.autograd.grad(o, (q, kk, v), g)

    res["attention_fwd"] = (fwd, flops_fwd, "flops")
    res["attention_fwd_bwd"] = (fwd_bwd, flops_fwd * 7 // 2, "flops")  # backward 2.5x the forward
    return res


def time_calls(fn, reps, stream):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        s.record(stream)
        for _ in range(reps):
            fn()
        e.record(stream)
    return s, e


def main():
    src = cp.random.random(24 * per_block * 4 * 2, dtype=cp.float32)  # enough for 48 blocks
    dst = cp.empty_like(src)
    vs = victims()
    side = torch.cuda.Stream()
    main_stream = torch.cuda.Stream()
    # The victims alone.
    for name, (fn, work, unit) in vs.items():
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        s, e = time_calls(fn, 5, main_stream)
        e.synchronize()
        per = s.elapsed_time(e) / 1e3 / 5
        reps = max(5, int(0.15 / per))
        s, e = time_calls(fn, reps, main_stream)
        e.synchronize()
        per = s.elapsed_time(e) / 1e3 / reps
        out["victims"][name] = {"unit": unit, "work": work, "reps": reps, "alone_s": per,
                                "alone_rate": work / per}
        print(f"{name}: alone {per * 1e3:.3f} ms, {work / per / 1e12:.3f} T{unit}/s", flush=True)
    configs = [(24, -1), (24, 0), (24, 250), (24, 500), (24, 1000), (24, 2000), (16, -1), (16, 0), (32, -1),
               (32, 0)]
    for blocks, sleep_ns in configs:
        per_round, rate = corunner_alone(blocks, sleep_ns, src, dst)
        key = f"{blocks}x{sleep_ns}"
        out["corunner"][key] = {"blocks": blocks, "sleep_ns": sleep_ns, "round_s": per_round,
                                "hbm_Bps_alone": rate}
        print(f"co-runner {key}: {rate / 1e9:.0f} GB/s alone, {per_round * 1e3:.2f} ms a round", flush=True)
        for name, (fn, work, unit) in vs.items():
            v = out["victims"][name]
            span = v["alone_s"] * v["reps"] * 3 + 0.05  # victims may slow down; the co-runner must outlast them
            rounds = max(2, int(span / per_round) + 1)
            torch.cuda.synchronize()
            c0, c1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            c0.record(side)
            with side_stream(side):
                corunner_launch(blocks, sleep_ns, rounds, src, dst)
            c1.record(side)
            with torch.cuda.stream(main_stream):
                torch.cuda._sleep(2_000_000)  # about 1 ms: the co-runner's blocks are resident first
            s, e = time_calls(fn, v["reps"], main_stream)
            torch.cuda.synchronize()
            per = s.elapsed_time(e) / 1e3 / v["reps"]
            start_s, end_s, total_s = (c0.elapsed_time(s) / 1e3, c0.elapsed_time(e) / 1e3,
                                       c0.elapsed_time(c1) / 1e3)
            overlapped = 0 < start_s and end_s < total_s
            run = {"corunner": key, "victim": name, "beside_s": per, "slowdown": per / v["alone_s"],
                   "overlapped": overlapped, "victims_from_s": start_s, "victims_to_s": end_s,
                   "corunner_total_s": total_s, "corunner_rounds": rounds}
            if sleep_ns >= 0 and overlapped:
                # alone before the victims started and after they ended, at its alone rate
                moved = 2 * blocks * SLICE_BYTES * rounds - rate * (total_s - (end_s - start_s))
                run["corunner_hbm_Bps_beside"] = max(0.0, moved) / (end_s - start_s)
            out["runs"].append(run)
            side_rate = run.get("corunner_hbm_Bps_beside")
            print(f"  {name}: {per * 1e3:.3f} ms beside, x{per / v['alone_s']:.3f}"
                  f"{f', co-runner {side_rate / 1e9:.0f} GB/s' if side_rate is not None else ''}"
                  f"{'' if overlapped else f' (NOT overlapped: {start_s:.4f}..{end_s:.4f} of {total_s:.4f} s)'}",
                  flush=True)
    json.dump(out, open(sys.argv[1], "w"), indent=1)


main()
