#!/usr/bin/env python3
# What the linear layers of a short prefill reach on a GPU: M tokens (16-8192) against the weight
# shards of Llama 3 8B at tp 1 and Llama 3 70B at tp 4, bf16 F.linear (cuBLASLt, a Linear
# layer's layout) and fp8 torch._scaled_mm with fast accumulation (per-tensor scales, M a
# multiple of 16), normally distributed operands. Each GEMM is timed inside a CUDA graph of 16
# calls replayed back-to-back, every call on another copy of the weight so that none is served
# from the 50 MB L2 (what an engine that graphs its steps pays; no host dispatch). The check of
# the simulator's GEMM model in the prefill regime (docs/inference.md): bench/fit_prefill_gemms.py.
#
#   python3 bench/prefill_gemm_probe.py OUT.json      (about 1 minute on an H100)
import json
import math
import sys

import torch
import torch.nn.functional as F

import graph_timing  # bench/, beside this script

if len(sys.argv) != 2:
    sys.exit("usage: prefill_gemm_probe.py OUT.json")
dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False
out = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(), "gemm": []}
CALLS = 16


def graph_s(calls):
    return graph_timing.graph_s(calls, CALLS)


one = torch.tensor(1.0, device=dev)
# (n, k, what)
shapes = [(6144, 4096, "8B qkv"), (4096, 4096, "8B o"), (28672, 4096, "8B gate+up"), (4096, 14336, "8B down"),
          (2560, 8192, "70B/tp4 qkv"), (8192, 2048, "70B/tp4 o"), (14336, 8192, "70B/tp4 gate+up"),
          (8192, 7168, "70B/tp4 down")]
for n, k, what in shapes:
    copies = max(1, min(8, math.ceil(128e6 / (n * k * 2))))
    ws = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
    w8s = [w.to(torch.float8_e4m3fn) for w in ws]
    for m in (16, 64, 128, 202, 256, 467, 512, 1024, 2048, 4096, 8192):
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        row = {"m": m, "n": n, "k": k, "what": what, "copies": copies}
        try:
            t = graph_s([lambda w=w: F.linear(x, w) for w in ws])
            row["bf16_us"] = round(t * 1e6, 2)
            row["bf16_TFLOPps"] = round(2 * m * n * k / t / 1e12, 1)
            if m % 16 == 0:
                x8 = x.to(torch.float8_e4m3fn)
                t = graph_s([lambda w=w: torch._scaled_mm(x8, w.t(), scale_a=one, scale_b=one,
                                                          out_dtype=torch.bfloat16, use_fast_accum=True) for w in w8s])
                row["fp8_us"] = round(t * 1e6, 2)
                row["fp8_TFLOPps"] = round(2 * m * n * k / t / 1e12, 1)
        except RuntimeError as err:
            row["error"] = str(err).splitlines()[0][:120]
        out["gemm"].append(row)
        print(json.dumps(row), flush=True)
    del ws, w8s
    torch.cuda.empty_cache()
json.dump(out, open(sys.argv[1], "w"), indent=1)
