#!/usr/bin/env python3
# What a decode step's kernels reach on a GPU, to check what the simulator assumes of them
# (workloads/src/lower_inference.cc; docs/inference.md, "Decode kernels measured on H100"):
#   - decode attention: one new query token per sequence (q_len 1) against a contiguous bf16 KV
#     cache of `ctx` positions, head dim 128, grouped-query heads (32 query / 8 KV heads: Llama 3 8B
#     on one GPU; 64 / 8: Llama 3 70B on one GPU), batch B, through PyTorch SDPA's
#     FlashAttention-2 and cuDNN backends (enable_gqa); figure: KV bytes read
#     (B · ctx · 2 · kv_heads · 128 · 2 B) per second;
#   - decode GEMMs: the linear layers as one GPU's shard holds them (weights of 4 MB to 470 MB,
#     1-128 tokens), bf16 F.linear and fp8 torch._scaled_mm with fast accumulation (per-tensor
#     scales); figure: weight bytes per second.
# Each kernel is timed twice: eager (CUDA events around back-to-back calls; on a fast kernel this
# is the host's dispatch rate, not the GPU's) and inside a CUDA graph of 32 calls replayed
# back-to-back (what an engine that graphs its decode step pays: kernel time plus the graph's
# gap between kernels). Every call reads another copy of its operands, with enough copies to
# exceed 256 MB, so that no call finds its operands in the 50 MB L2 cache. Fractions are of the
# nominal HBM bandwidth given on the command line.
# Not measured: paged caches (vLLM's / TensorRT-LLM's block tables), fp8 KV caches, TensorRT-LLM's
# own kernels (XQA, its GEMV plugins); PyTorch has none of them.
#
#   python3 bench/decode_attention_probe.py HBM_GBps OUT.json   (about 2 minutes on an H100)
import json
import math
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import graph_timing  # bench/, beside this script

if len(sys.argv) != 3:
    sys.exit("usage: decode_attention_probe.py HBM_GBps OUT.json")
hbm = float(sys.argv[1]) * 1e9
dev = "cuda"
out = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
       "hbm_GBps": hbm / 1e9, "attention": [], "gemm": []}
CALLS = 32


def copies_for(nbytes):
    return max(1, min(64, math.ceil(256e6 / nbytes)))


def eager_s(calls, min_s=0.1):
    """Seconds per call, back-to-back eager calls cycling through the copies."""
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    for c in calls:
        c()
    torch.cuda.synchronize()
    s.record()
    for c in calls:
        c()
    e.record()
    e.synchronize()
    per = s.elapsed_time(e) / len(calls) / 1e3
    rounds = max(2, int(min_s / (per * len(calls))))
    s.record()
    for _ in range(rounds):
        for c in calls:
            c()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / 1e3 / (rounds * len(calls))


def graph_s(calls):
    return graph_timing.graph_s(calls, CALLS)


def measure(row, name, calls, nbytes):
    for mode, fn in (("eager", eager_s), ("graph", graph_s)):
        try:
            t = fn(calls)
            row[f"{name}_{mode}_us"] = round(t * 1e6, 2)
            row[f"{name}_{mode}_hbm_fraction"] = round(nbytes / t / hbm, 4)
        except RuntimeError as err:  # a backend that refuses the shape or the capture
            row[f"{name}_{mode}_error"] = str(err).splitlines()[0][:120]


def attention():
    backends = {"flash2": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    for hq, hkv in ((32, 8), (64, 8)):
        for batch in (1, 8, 32, 128):
            for ctx in (512, 2048, 8192, 32768):
                kv_bytes = batch * ctx * 2 * hkv * 128 * 2
                if kv_bytes > 8 * 2**30:
                    continue
                n = copies_for(kv_bytes)
                ops = [(torch.randn(batch, hq, 1, 128, device=dev, dtype=torch.bfloat16),
                        torch.randn(batch, hkv, ctx, 128, device=dev, dtype=torch.bfloat16),
                        torch.randn(batch, hkv, ctx, 128, device=dev, dtype=torch.bfloat16)) for _ in range(n)]
                row = {"q_heads": hq, "kv_heads": hkv, "batch": batch, "context": ctx, "kv_bytes": kv_bytes,
                       "copies": n}
                for name, be in backends.items():
                    with sdpa_kernel([be]):
                        calls = [lambda o=o: F.scaled_dot_product_attention(*o, enable_gqa=True) for o in ops]
                        measure(row, name, calls, kv_bytes)
                out["attention"].append(row)
                print(json.dumps(row), flush=True)
                del ops
                torch.cuda.empty_cache()


def gemms():
    one = torch.tensor(1.0, device=dev)
    # (n, k): Llama 3 8B's qkv 6144x4096, o 4096x4096, gate+up 28672x4096, down 4096x14336 at tp 1;
    # 70B's at tp 4 (qkv 2560x8192, o 8192x2048, gate+up 14336x8192, down 8192x7168) and tp 8
    # (qkv 1280x8192, o 8192x1024); a 1024x2048 shard.
    shapes = [(1024, 2048), (1280, 8192), (8192, 1024), (2560, 8192), (8192, 2048), (4096, 4096),
              (6144, 4096), (8192, 7168), (4096, 14336), (14336, 8192), (28672, 4096), (28672, 8192)]
    for n, k in shapes:
        copies = copies_for(n * k * 2)
        ws = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
        w8s = [w.to(torch.float8_e4m3fn) for w in ws[:copies_for(n * k)]]
        for m in (1, 8, 32, 128):
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            x8 = x.to(torch.float8_e4m3fn)
            row = {"m": m, "n": n, "k": k, "weight_bytes_bf16": n * k * 2, "copies": copies}
            measure(row, "bf16", [lambda w=w: F.linear(x, w) for w in ws], n * k * 2)
            if m % 16 == 0:  # torch._scaled_mm wants dimensions divisible by 16
                measure(row, "fp8", [lambda w=w: torch._scaled_mm(x8, w.t(), scale_a=one, scale_b=one,
                                                                   out_dtype=torch.bfloat16, use_fast_accum=True)
                                     for w in w8s], n * k)
            out["gemm"].append(row)
            print(json.dumps(row), flush=True)
        del ws, w8s
        torch.cuda.empty_cache()


gemms()
attention()
json.dump(out, open(sys.argv[2], "w"), indent=1)
