#!/usr/bin/env python3
"""Chip-preset rates from a bench/gpu_rates.py measurement (docs/model.md, "Checked on H100 and H200").

    python3 bench/fit_gpu_rates.py bench/gpu_rates-h100-2026-11-27.json [PEAK_BF16_TFLOPps]

Prints, for the preset's formulas in sim/src/compute_model.cc:

- bf16 GEMMs: matmul_efficiency E and matmul_k_overhead K0 of
      rate(K) = peak · E · waves · K / (K + K0)
  fitted (least squares in log rate) to the K sweep at M = N = 8192, K = 1024 ... 16384 (the
  smallest K of a training GEMM in the validation set is a row-parallel layer's hidden / tp =
  8192 / 8), where waves = 2048 tiles of 128 x 256 over 132 SMs = 15.5 / 16. The sweep's operands
  are uniform in [-0.5, 0.5); E is then scaled by the measured rate of normal operands (N(0, 1)
  activations, N(0, 0.02) weights) over uniform ones at 8192^3, since a GEMM's rate depends on its
  data and training data is closer to normal.
- fp8 GEMMs with fast accumulation: fp8_matmul_efficiency with the same fixed time per tile (K0
  bf16 elements = 2·K0 fp8 elements), scaled likewise; and the split-accumulation ratio.
- fused attention, per kernel: the backward's fraction B and its own half-rate length H of
      rate(n) = peak · B · n / (n + H)        (backward counted as 2.5 forwards, as the benchmarks)
  fitted the same way to the five sequence lengths. The forward is printed for comparison only.
"""
import json
import math
import sys


def fit(points, shape):
    """Least squares in log rate of rate = A · shape(x, h) over h (grid), A closed-form."""
    best = None
    for h in [x * 0.5 for x in range(0, 20001)]:
        logs = [math.log(r) - math.log(shape(x, h)) for x, r in points]
        a = sum(logs) / len(logs)
        err = sum((l - a) ** 2 for l in logs)
        if best is None or err < best[0]:
            best = (err, math.exp(a), h)
    err, a, h = best
    return a, h, math.sqrt(err / len(points))


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: fit_gpu_rates.py RATES.json [PEAK_BF16_TFLOPps]")
    d = json.load(open(sys.argv[1]))
    peak = float(sys.argv[2]) if len(sys.argv) == 3 else 989.0
    waves = 2048 / 132 / 16  # useful / padded tiles at M = N = 8192 (compute_model.cc)
    sweep = [(g["k"], g["bf16_TFLOPps"]) for g in d["gemm"]
             if g["m"] == 8192 and g["n"] == 8192 and 1024 <= g["k"] <= 16384]
    a, k0, rms = fit(sweep, lambda k, h: peak * waves * k / (k + h))
    square = next(g for g in d["gemm"] if g["m"] == g["n"] == g["k"] == 8192)
    normal = d["gemm_normal_data_8192"]
    data = normal["bf16_TFLOPps"] / square["bf16_TFLOPps"]
    print(f"{d['device']} (torch {d['torch']}, CUDA {d['cuda']})")
    print(f"bf16 GEMM: uniform operands E = {a:.3f}, K0 = {k0:.0f} (rms log error {rms:.3f}, "
          f"{len(sweep)} K); normal / uniform at 8192^3 = {data:.3f}; "
          f"matmul_efficiency = {a * data:.3f}, matmul_k_overhead = {k0:.0f}")
    for k, r in sweep:
        print(f"  K = {k:5d}: measured {r:6.1f}, fit {peak * a * waves * k / (k + k0):6.1f} TFLOP/s")
    # fp8 (fast accumulation): the same fixed time per tile, which is twice the K elements at twice
    # the rate (compute_model.cc scales matmul_k_overhead by the fp8 / bf16 peak), so only E is fitted.
    sweep8 = [(g["k"], g["fp8_fast_TFLOPps"]) for g in d["gemm"]
              if g["m"] == 8192 and g["n"] == 8192 and 1024 <= g["k"] <= 16384]
    k08 = 2 * round(k0)
    logs = [math.log(r) - math.log(2 * peak * waves * k / (k + k08)) for k, r in sweep8]
    a8 = math.exp(sum(logs) / len(logs))
    rms8 = math.sqrt(sum((l - math.log(a8)) ** 2 for l in logs) / len(logs))
    data8 = normal["fp8_fast_TFLOPps"] / square["fp8_fast_TFLOPps"]
    print(f"fp8 GEMM (fast accumulation, K0 = {k08} fp8 elements): uniform E = {a8:.3f} (rms log error "
          f"{rms8:.3f}); normal / uniform = {data8:.3f}; fp8_matmul_efficiency = {a8 * data8:.3f}")
    for k, r in sweep8:
        print(f"  K = {k:5d}: measured {r:6.1f}, fit {2 * peak * a8 * waves * k / (k + k08):6.1f} TFLOP/s")
    split = [g["fp8_split_TFLOPps"] / g["fp8_fast_TFLOPps"] for g in d["gemm"]
             if g["m"] == 8192 and g["n"] == 8192 and 1024 <= g["k"] <= 16384]
    print(f"fp8 split / fast accumulation: {min(split):.3f} .. {max(split):.3f}")
    for kernel in ("flash2", "cudnn"):
        rows = [r for r in d["attention"] if r["kernel"] == kernel]
        fb, hb, rb = fit([(r["seq"], r["bwd_TFLOPps_2.5x"]) for r in rows], lambda n, h: peak * n / (n + h))
        ff, hf, rf = fit([(r["seq"], r["fwd_TFLOPps"]) for r in rows], lambda n, h: peak * n / (n + h))
        print(f"{kernel}: backward {fb:.3f} half {hb:.0f} (rms {rb:.3f}); forward {ff:.3f} half {hf:.0f} "
              f"(rms {rf:.3f})")


if __name__ == "__main__":
    main()
