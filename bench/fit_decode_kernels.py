#!/usr/bin/env python3
# What bench/decode_attention_probe.py measured (graphed decode kernels on one GPU) against what
# the simulator charges such a kernel on the chip's preset (sim/src/compute_model.cc):
#
#   graph_launch_overhead + extra + bytes / (HBM bandwidth x memory_efficiency),
#
# and the two extras that preset holds: with the preset's bandwidth term fixed, the mean of
# (measured - bytes / bandwidth) - graph_launch_overhead over the bf16 decode GEMMs (1 and 8
# rows, weights of 4-470 MB) -> memory_bound_matmul_extra_us, and over cuDNN's decode attention
# below 300 MB of cache -> memory_bound_attention_extra_us (above, the kernel streams faster than
# the preset's memory_efficiency and the fixed time is lost in the bytes). Also T = a + V / b by
# least squares over the GEMMs, free in both, for comparison.
#
#   python3 bench/fit_decode_kernels.py bench/decode_kernels-h100-2026-11-28.json presets/chips/h100-sxm.json [--check]
#
# With --check, exits 1 unless the preset holds the fitted extras (CTest presets.decode_kernel_fit).
import json
import sys

if len(sys.argv) not in (3, 4) or sys.argv[3:] not in ([], ["--check"]):
    sys.exit("usage: fit_decode_kernels.py MEASURED.json CHIP_PRESET.json [--check]")
m = json.load(open(sys.argv[1]))
chip = json.load(open(sys.argv[2]))
bw = chip["hbm_GBps"] * 1e9
eff = chip["memory_efficiency"]
launch = chip["graph_launch_overhead_us"]


def stream_us(nbytes):
    return nbytes / (bw * eff) * 1e6


def extra(rows):
    return round(sum(t - stream_us(v) for v, t, _ in rows) / len(rows) - launch, 1)


gemm = [(r["weight_bytes_bf16"], r["bf16_graph_us"], f"bf16 m={r['m']} {r['n']}x{r['k']}")
        for r in m["gemm"] if r["m"] in (1, 8) and "bf16_graph_us" in r]
cudnn = [(r["kv_bytes"], r["cudnn_graph_us"], f"cuDNN {r['q_heads']}/{r['kv_heads']} heads B={r['batch']} ctx={r['context']}")
         for r in m["attention"] if "cudnn_graph_us" in r]
mm_extra = extra(gemm)
att_extra = extra([p for p in cudnn if p[0] < 300e6])
fits = {"memory_bound_matmul_extra_us": mm_extra, "memory_bound_attention_extra_us": att_extra}
print(f"fitted: memory_bound_matmul_extra_us {mm_extra}, memory_bound_attention_extra_us {att_extra} "
      f"(preset: {chip.get('memory_bound_matmul_extra_us', 0)}, {chip.get('memory_bound_attention_extra_us', 0)})")
if sys.argv[3:] == ["--check"]:
    bad = [f"{k}: preset {chip.get(k, 0)}, fit {v}" for k, v in fits.items() if chip.get(k, 0) != v]
    for line in bad:
        print("mismatch:", line)
    sys.exit(1 if bad else 0)


def model_us(nbytes, kind):
    return launch + chip.get(f"memory_bound_{kind}_extra_us", 0) + stream_us(nbytes)


def report(title, rows, kind):
    errs = [(t - model_us(v, kind)) / t for v, t, _ in rows]
    print(f"{title}: {len(rows)} kernels, measured against the preset: mean {100 * sum(errs) / len(errs):+.1f} %, "
          f"range {100 * min(errs):+.1f} .. {100 * max(errs):+.1f} % of the measured time (positive: the kernel is slower)")
    for v, t, label in rows:
        print(f"  {label:34s} {v / 1e6:8.1f} MB  measured {t:8.1f} us  model {model_us(v, kind):8.1f} us")


report("bf16 decode GEMMs (m = 1, 8)", gemm, "matmul")
# T = a + V / b by least squares.
n = len(gemm)
sx = sum(v for v, _, _ in gemm)
sy = sum(t for _, t, _ in gemm)
sxx = sum(v * v for v, _, _ in gemm)
sxy = sum(v * t for v, t, _ in gemm)
slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
a = (sy - slope * sx) / n
print(f"  free fit T = a + V/b: a = {a:.2f} us, b = {1e-3 / slope:.0f} GB/s = {1e6 / slope / bw:.3f} of HBM")
report("decode attention, cuDNN", cudnn, "attention")
fa2 = [(r["kv_bytes"], r["flash2_graph_us"], f"FA2 {r['q_heads']}/{r['kv_heads']} heads B={r['batch']} ctx={r['context']}")
       for r in m["attention"] if "flash2_graph_us" in r]
report("decode attention, FlashAttention-2", fa2, "attention")
