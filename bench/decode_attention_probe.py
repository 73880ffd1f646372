#!/usr/bin/env python3
# What decode attention reaches on a GPU, to check the assumption that it streams the KV cache at
# the chip's memory efficiency (workloads/src/lower_inference.cc, "decode attention"; docs/inference.md):
#   - one new query token per sequence (q_len 1) against a contiguous bf16 KV cache of `ctx`
#     positions, head dim 128, grouped-query heads (32 query / 8 KV heads: Llama 3 8B on one GPU;
#     64 / 8: Llama 3 70B on one GPU, 16 / 2 at tp 4 has the same bytes per query head);
#   - through PyTorch SDPA's FlashAttention-2 and cuDNN backends (enable_gqa), and FlashAttention-2
#     with the cache read once for every sequence at the same time (batch B);
#   - the figure: KV bytes read (B · ctx · 2 · kv_heads · 128 · 2 B) over the CUDA-event time of
#     back-to-back calls, as a fraction of the nominal HBM bandwidth given on the command line.
# Not measured: paged caches (vLLM's / TensorRT-LLM's block tables), fp8 KV caches, TensorRT-LLM's
# XQA kernels; PyTorch has none of them.
#
#   python3 bench/decode_attention_probe.py HBM_GBps OUT.json     (about 1 minute on an H100)
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

if len(sys.argv) != 3:
    sys.exit("usage: decode_attention_probe.py HBM_GBps OUT.json")
hbm = float(sys.argv[1]) * 1e9
dev = "cuda"
out = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
       "hbm_GBps": hbm / 1e9, "rows": []}


def timed(fn, min_s=0.15):
    """Seconds per call of fn, from CUDA events around back-to-back calls."""
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    s.record()
    for _ in range(3):
        fn()
    e.record()
    e.synchronize()
    per = s.elapsed_time(e) / 3 / 1e3
    n = max(5, int(min_s / per))
    s.record()
    for _ in range(n):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / 1e3 / n


backends = {"flash2": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
for hq, hkv in ((32, 8), (64, 8)):
    for batch in (1, 8, 32, 128):
        for ctx in (512, 2048, 8192, 32768):
            kv_bytes = batch * ctx * 2 * hkv * 128 * 2
            if kv_bytes > 24 * 2**30:
                continue
            q = torch.randn(batch, hq, 1, 128, device=dev, dtype=torch.bfloat16)
            k = torch.randn(batch, hkv, ctx, 128, device=dev, dtype=torch.bfloat16)
            v = torch.randn(batch, hkv, ctx, 128, device=dev, dtype=torch.bfloat16)
            row = {"q_heads": hq, "kv_heads": hkv, "batch": batch, "context": ctx, "kv_bytes": kv_bytes}
            for name, be in backends.items():
                try:
                    with sdpa_kernel([be]):
                        t = timed(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
                    row[name + "_us"] = round(t * 1e6, 2)
                    row[name + "_hbm_fraction"] = round(kv_bytes / t / hbm, 4)
                except RuntimeError as err:  # a backend that refuses the shape
                    row[name + "_error"] = str(err).splitlines()[0][:120]
            # A plain copy of V into K moves as many bytes (half read, half written): what a kernel
            # streaming this much could reach.
            t = timed(lambda: k.copy_(v))
            row["copy_hbm_fraction"] = round(kv_bytes / t / hbm, 4)
            out["rows"].append(row)
            print(json.dumps(row), flush=True)
            del q, k, v
json.dump(out, open(sys.argv[2], "w"), indent=1)
