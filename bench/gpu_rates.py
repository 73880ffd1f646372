#!/usr/bin/env python3
# What a GPU's kernels reach through PyTorch, to check a chip preset against (docs/model.md,
# "Checked on H100 and H200"):
#   - GEMMs as F.linear (bf16; cuBLASLt's TN layout, a Linear layer's) and torch._scaled_mm (fp8
#     e4m3 with and without fast accumulation) on square and training shapes, and a K sweep at
#     M = N = 8192 (what the preset's fill term E·K/(K + K0) describes);
#   - one 8192^3 GEMM on normal operands (activations N(0, 1), weights N(0, 0.02)) beside the
#     uniform [-0.5, 0.5) ones of the sweep: a GEMM's rate depends on its data (power);
#   - 8 s of an 8192^3 bf16 GEMM and 4 s of fp8, one figure per second (do clocks settle?);
#   - causal attention through SDPA's FlashAttention-2 and cuDNN backends, 32 heads of 128, 16384
#     tokens per call: the forward, and the backward alone (autograd.grad of a kept forward);
#   - streaming copy / scale / triad over 1 GiB of fp32, and GEMV-like products of a 28672 x 8192
#     bf16 weight with 1-512 tokens;
#   - nvidia-smi's SM clock and power every 0.5 s throughout.
# Each figure: the CUDA-event time of back-to-back calls for about 0.8 s after a warm-up.
#
#   python3 bench/gpu_rates.py OUT.json      (PyTorch with CUDA; about 2 minutes on an H100)
import json
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

if len(sys.argv) != 2:
    sys.exit("usage: gpu_rates.py OUT.json")
dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False
out = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name()}
smi_log = tempfile.NamedTemporaryFile(mode="w+", suffix=".csv")
smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu,power.limit",
                        "--format=csv,noheader,nounits", "-lms", "500"], stdout=smi_log, stderr=subprocess.DEVNULL)


def timed(fn, min_s=0.8, warm_s=0.3):
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
    for _ in range(max(1, int(warm_s / per))):
        fn()
    n = max(5, int(min_s / per))
    s.record()
    for _ in range(n):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / 1e3 / n


def log(key, value):
    out[key] = value
    print(key, json.dumps(value), flush=True)


one = torch.tensor(1.0, device=dev)


def gemm_rates(m, n, k, normal=False):
    if normal:
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16) * 0.02
    else:
        x = torch.rand(m, k, device=dev, dtype=torch.bfloat16) - 0.5
        w = torch.rand(n, k, device=dev, dtype=torch.bfloat16) - 0.5
    r = {"m": m, "n": n, "k": k}
    r["bf16_TFLOPps"] = 2 * m * n * k / timed(lambda: F.linear(x, w)) / 1e12
    # fp8 operands scaled into e4m3's range as the recipes do (amax -> 448).
    sx = (448 / x.abs().max().float()).reciprocal()
    sw = (448 / w.abs().max().float()).reciprocal()
    x8 = (x.float() / sx).to(torch.float8_e4m3fn)
    w8 = (w.float() / sw).to(torch.float8_e4m3fn)
    for fast in (True, False):
        t = timed(lambda: torch._scaled_mm(x8, w8.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16,
                                           use_fast_accum=fast))
        r["fp8_fast_TFLOPps" if fast else "fp8_split_TFLOPps"] = 2 * m * n * k / t / 1e12
    return r


shapes = [(2048,) * 3, (4096,) * 3, (8192,) * 3, (16384,) * 3, (4096, 5632, 2048), (16384, 4096, 4096),
          (16384, 14336, 4096), (8192, 10240, 8192), (8192, 28672, 8192), (8192, 8192, 28672)]
shapes += [(8192, 8192, k) for k in (256, 512, 1024, 2048, 3584, 4096, 16384)]
gemm = []
for (m, n, k) in shapes:
    try:
        r = gemm_rates(m, n, k)
        print("gemm", r, flush=True)
        gemm.append(r)
    except Exception as ex:  # noqa: BLE001 - report and go on
        print("gemm failed", m, n, k, ex, flush=True)
out["gemm"] = gemm
try:
    log("gemm_normal_data_8192", gemm_rates(8192, 8192, 8192, normal=True))
except Exception as ex:  # noqa: BLE001
    print("gemm normal failed", ex, flush=True)
torch.cuda.empty_cache()

try:
    x = torch.rand(8192, 8192, device=dev, dtype=torch.bfloat16) - 0.5
    w = torch.rand(8192, 8192, device=dev, dtype=torch.bfloat16) - 0.5
    log("sustained_bf16_8192_TFLOPps_per_s",
        [2 * 8192**3 / timed(lambda: F.linear(x, w), min_s=1.0, warm_s=0.0) / 1e12 for _ in range(8)])
    x8 = x.to(torch.float8_e4m3fn)
    w8 = w.to(torch.float8_e4m3fn)
    log("sustained_fp8fast_8192_TFLOPps_per_s",
        [2 * 8192**3 / timed(lambda: torch._scaled_mm(x8, w8.t(), scale_a=one, scale_b=one,
                                                      out_dtype=torch.bfloat16, use_fast_accum=True),
                             min_s=1.0, warm_s=0.0) / 1e12 for _ in range(4)])
    del x, w, x8, w8
except Exception as ex:  # noqa: BLE001
    print("sustained failed", ex, flush=True)
torch.cuda.empty_cache()

attention = []
for name, backend in (("flash2", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
    for seq in (1024, 2048, 4096, 8192, 16384):
        try:
            b, h, d = 16384 // seq, 32, 128
            q, k, v = [(torch.rand(b, h, seq, d, device=dev, dtype=torch.bfloat16) - 0.5).requires_grad_()
                       for _ in range(3)]
            g = torch.rand(b, h, seq, d, device=dev, dtype=torch.bfloat16) - 0.5
            with sdpa_kernel([backend]):
                t_fwd = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                t_bwd = timed(lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True))
            flops = 4 * b * h * seq * seq * d / 2  # causal forward, FlashAttention's convention
            r = {"kernel": name, "seq": seq, "batch": b, "fwd_s": t_fwd, "bwd_s": t_bwd,
                 "fwd_TFLOPps": flops / t_fwd / 1e12, "bwd_TFLOPps_2.5x": 2.5 * flops / t_bwd / 1e12}
            print("attention", r, flush=True)
            attention.append(r)
            del q, k, v, g, o
        except Exception as ex:  # noqa: BLE001
            print("attention failed", name, seq, ex, flush=True)
out["attention"] = attention
torch.cuda.empty_cache()

try:
    n = 1 << 28
    a = torch.empty(n, device=dev)
    b = torch.rand(n, device=dev)
    c = torch.rand(n, device=dev)
    log("stream", {"copy_TBps": 2 * 4 * n / timed(lambda: a.copy_(b)) / 1e12,
                   "scale_TBps": 2 * 4 * n / timed(lambda: torch.mul(b, 2.0, out=a)) / 1e12,
                   "triad_TBps": 3 * 4 * n / timed(lambda: torch.add(b, c, alpha=2.0, out=a)) / 1e12})
    del a, b, c
except Exception as ex:  # noqa: BLE001
    print("stream failed", ex, flush=True)

try:
    w = torch.rand(28672, 8192, device=dev, dtype=torch.bfloat16) - 0.5
    rows = []
    for m in (1, 8, 32, 128, 512):
        x = torch.rand(m, 8192, device=dev, dtype=torch.bfloat16) - 0.5
        t = timed(lambda: F.linear(x, w))
        rows.append({"m": m, "us": t * 1e6, "weight_TBps": 28672 * 8192 * 2 / t / 1e12,
                     "TFLOPps": 2 * m * 28672 * 8192 / t / 1e12})
    log("gemv", rows)
except Exception as ex:  # noqa: BLE001
    print("gemv failed", ex, flush=True)

smi.terminate()
smi.wait()
smi_log.seek(0)
samples = [line.split(", ") for line in smi_log.read().splitlines() if line.count(",") == 3]
out["nvidia_smi"] = {"sm_MHz": [float(s[0]) for s in samples if s[0].strip().isdigit()],
                     "power_W": [float(s[1]) for s in samples if s[1].replace(".", "", 1).isdigit()],
                     "power_limit_W": samples[0][3] if samples else None}
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=1)
print("written", sys.argv[1])
