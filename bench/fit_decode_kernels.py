#!/usr/bin/env python3
# Compares what bench/decode_attention_probe.py measured (graphed decode kernels) with what the
# simulator charges such a kernel on the chip's preset: graph_launch_overhead + bytes /
# (HBM bandwidth x memory_efficiency) (sim/src/compute_model.cc), and fits the measured times of
# the bf16 decode GEMMs (m = 1 and 8) to the same form, T = a + V / b, by least squares.
#
#   python3 bench/fit_decode_kernels.py bench/decode_kernels-h100-2026-11-28.json presets/chips/h100-sxm.json
import json
import sys

if len(sys.argv) != 3:
    sys.exit("usage: fit_decode_kernels.py MEASURED.json CHIP_PRESET.json")
m = json.load(open(sys.argv[1]))
chip = json.load(open(sys.argv[2]))
bw = chip["hbm_GBps"] * 1e9 if "hbm_GBps" in chip else m["hbm_GBps"] * 1e9
eff = chip["memory_efficiency"]
a_model = chip["graph_launch_overhead_us"]


def model_us(nbytes):
    return a_model + nbytes / (bw * eff) * 1e6


def report(title, rows):
    errs = [(t - model_us(v)) / t for v, t, _ in rows]
    print(f"{title}: {len(rows)} kernels, measured against the model: mean {100 * sum(errs) / len(errs):+.1f} %, "
          f"range {100 * min(errs):+.1f} .. {100 * max(errs):+.1f} % (positive: the kernel is slower)")
    for v, t, label in rows:
        print(f"  {label:34s} {v / 1e6:8.1f} MB  measured {t:8.1f} us  model {model_us(v):8.1f} us")


gemm = [(r["weight_bytes_bf16"], r["bf16_graph_us"], f"bf16 m={r['m']} {r['n']}x{r['k']}")
        for r in m["gemm"] if r["m"] in (1, 8) and "bf16_graph_us" in r]
report("bf16 decode GEMMs (m = 1, 8)", gemm)
# T = a + V / b by least squares.
n = len(gemm)
sx = sum(v for v, _, _ in gemm)
sy = sum(t for _, t, _ in gemm)
sxx = sum(v * v for v, _, _ in gemm)
sxy = sum(v * t for v, t, _ in gemm)
slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
a = (sy - slope * sx) / n
print(f"  fit T = a + V/b: a = {a:.2f} us, b = {1e-3 / slope:.0f} GB/s = {1e6 / slope / bw:.3f} of HBM "
      f"(model: a = {a_model} us, b = {eff:.3f} of HBM)")
att = [(r["kv_bytes"], r["cudnn_graph_us"], f"cuDNN {r['q_heads']}/{r['kv_heads']} heads B={r['batch']} ctx={r['context']}")
       for r in m["attention"] if "cudnn_graph_us" in r]
report("decode attention, cuDNN", att)
att = [(r["kv_bytes"], r["flash2_graph_us"], f"FA2 {r['q_heads']}/{r['kv_heads']} heads B={r['batch']} ctx={r['context']}")
       for r in m["attention"] if "flash2_graph_us" in r]
report("decode attention, FlashAttention-2", att)
