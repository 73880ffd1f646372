#!/usr/bin/env python3
# What a GPU's kernels reach through PyTorch, to check a chip preset against (docs/model.md,
# "Checked on an H200"): GEMMs as F.linear (bf16) and torch._scaled_mm (fp8 e4m3, with and without
# fast accumulation) on square and training shapes, 12 s of one 8192^3 bf16 GEMM and 6 s of fp8 (do
# clocks or power settle lower?), causal attention through SDPA's FlashAttention-2 and cuDNN
# backends (32 heads of 128, 16384 tokens per call), streaming copy / scale / triad over 1 GiB, and
# GEMV-like products of a 28672 x 8192 weight. Each figure: CUDA-event time of back-to-back calls
# for about 0.8 s after a warm-up. Sweep operands are uniform in [-0.5, 0.5); the sustained runs'
# are uniform in [0, 1) (rates depend on the data: see the doc).
#
#   python3 bench/gpu_rates.py OUT.json      (PyTorch with CUDA; about 90 s on an H200)
import json, sys
import torch
import torch.nn.functional as F
if len(sys.argv) != 2:
    sys.exit("usage: gpu_rates.py OUT.json")
out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "cuda": torch.version.cuda}
dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False

def timed(fn, min_s=0.8, warm_s=0.3):
    s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    fn(); torch.cuda.synchronize()
    s.record()
    for _ in range(3): fn()
    e.record(); e.synchronize(); per = s.elapsed_time(e) / 3 / 1e3
    for _ in range(max(1, int(warm_s / per))): fn()
    n = max(5, int(min_s / per))
    s.record()
    for _ in range(n): fn()
    e.record(); e.synchronize()
    return s.elapsed_time(e) / 1e3 / n

def log(k, v):
    out[k] = v; print(k, json.dumps(v), flush=True)

one = torch.tensor(1.0, device=dev)
shapes = [(1024,)*3, (2048,)*3, (4096,)*3, (8192,)*3, (16384,)*3, (4096, 5632, 2048), (16384, 4096, 4096),
          (16384, 14336, 4096), (8192, 10240, 8192), (8192, 28672, 8192), (8192, 8192, 28672)]
gemm = []
for (m, n, k) in shapes:
    try:
        x = torch.rand(m, k, device=dev, dtype=torch.bfloat16) - 0.5
        w = torch.rand(n, k, device=dev, dtype=torch.bfloat16) - 0.5
        r = {"m": m, "n": n, "k": k}
        t = timed(lambda: F.linear(x, w)); r["bf16_TFLOPps"] = 2 * m * n * k / t / 1e12
        x8 = x.to(torch.float8_e4m3fn); w8 = w.to(torch.float8_e4m3fn)
        for fa in (True, False):
            t = timed(lambda: torch._scaled_mm(x8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                               use_fast_accum=fa))
            r["fp8_fast_TFLOPps" if fa else "fp8_split_TFLOPps"] = 2 * m * n * k / t / 1e12
        print("gemm", r, flush=True); gemm.append(r)
        del x, w, x8, w8
    except Exception as ex:
        print("gemm failed", m, n, k, ex, flush=True)
out["gemm"] = gemm

# Sustained: 8192^3 bf16 for 12 s, rate per second (power and clocks settle)
try:
    x = torch.rand(8192, 8192, device=dev, dtype=torch.bfloat16); w = torch.rand(8192, 8192, device=dev, dtype=torch.bfloat16)
    rates = []
    for sec in range(12):
        t = timed(lambda: F.linear(x, w), min_s=1.0, warm_s=0.0); rates.append(2 * 8192**3 / t / 1e12)
    log("sustained_bf16_8192_TFLOPps_per_s", rates)
    x8 = x.to(torch.float8_e4m3fn); w8 = w.to(torch.float8_e4m3fn); rates = []
    for sec in range(6):
        t = timed(lambda: torch._scaled_mm(x8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                           use_fast_accum=True), min_s=1.0, warm_s=0.0)
        rates.append(2 * 8192**3 / t / 1e12)
    log("sustained_fp8fast_8192_TFLOPps_per_s", rates)
    del x, w, x8, w8
except Exception as ex:
    print("sustained failed", ex, flush=True)

# Fused attention, causal, 32 heads of 128, 16384 tokens per call
from torch.nn.attention import sdpa_kernel, SDPBackend
att = []
for name, be in (("flash2", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
    for S in (1024, 2048, 4096, 8192, 16384):
        try:
            B = 16384 // S; H = 32; D = 128
            q, k, v = [(torch.rand(B, H, S, D, device=dev, dtype=torch.bfloat16) - 0.5).requires_grad_() for _ in range(3)]
            g = torch.rand(B, H, S, D, device=dev, dtype=torch.bfloat16)
            with sdpa_kernel([be]):
                tf = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
                def fb():
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True); o.backward(g)
                tfb = timed(fb)
            fl = 4 * B * H * S * S * D / 2  # causal forward FLOPs (FlashAttention's convention)
            r = {"kernel": name, "seq": S, "batch": B, "fwd_s": tf, "fwd_bwd_s": tfb,
                 "fwd_TFLOPps": fl / tf / 1e12, "bwd_TFLOPps_2.5x": 2.5 * fl / (tfb - tf) / 1e12}
            print("attn", r, flush=True); att.append(r)
            del q, k, v, g
        except Exception as ex:
            print("attn failed", name, S, ex, flush=True)
out["attention"] = att

# Streaming: copy, scale, triad over 1 GiB fp32 arrays (bytes read + written)
try:
    N = 1 << 28
    a = torch.empty(N, device=dev); b = torch.rand(N, device=dev); c = torch.rand(N, device=dev)
    st = {"copy_TBps": 2 * 4 * N / timed(lambda: a.copy_(b)) / 1e12,
          "scale_TBps": 2 * 4 * N / timed(lambda: torch.mul(b, 2.0, out=a)) / 1e12,
          "triad_TBps": 3 * 4 * N / timed(lambda: torch.add(b, c, alpha=2.0, out=a)) / 1e12}
    log("stream", st); del a, b, c
except Exception as ex:
    print("stream failed", ex, flush=True)

# GEMV-like (decode): weight 28672 x 8192 bf16, M tokens; weight bytes / time
try:
    w = torch.rand(28672, 8192, device=dev, dtype=torch.bfloat16); gv = []
    for m in (1, 8, 32, 128, 512):
        x = torch.rand(m, 8192, device=dev, dtype=torch.bfloat16)
        t = timed(lambda: F.linear(x, w))
        gv.append({"m": m, "weight_TBps": 28672 * 8192 * 2 / t / 1e12, "TFLOPps": 2 * m * 28672 * 8192 / t / 1e12, "us": t * 1e6})
    log("gemv", gv)
except Exception as ex:
    print("gemv failed", ex, flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
