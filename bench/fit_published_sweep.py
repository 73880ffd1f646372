#!/usr/bin/env python3
"""Blackwell GEMM rates from a published sustained cuBLAS sweep (docs/model.md, "Blackwell").

    python3 bench/fit_published_sweep.py [--check PRESETS_DIR]

With --check, exits 1 unless presets/chips/b200.json and gb200.json hold the fitted values (CTest
`presets.blackwell_sweep_fit`).

No sustained Blackwell GEMM curve was measured by this project. The one published K sweep of a
B200 (tmoreau89/triton python/triton_cublas_bench/RESULTS.md, 2025-10-10, CUDA 13.0 / cuBLAS 13.0,
cuBLASLt with its heuristic's best algorithm, M = N = 8192, triton.testing.do_bench after 10k
warm-up iterations, so at the power-limited clock) is fitted here to the preset's form

    rate(K) = peak · E · waves · K / (K + K0)       (sim/src/compute_model.cc)

with waves = 2048 tiles of 128 x 256 over 148 SMs = 13.84 / 14, by least squares in log rate, over
K >= 512: below that the tile loop is too short for the form (K = 128..384 run 6-32 % under it).
The sweep stops at K = 1024, so E is an extrapolation; the script prints how the fit moves with
the range. fp8 is checked, not fitted: the preset keeps the fp8 shape-search figure and the code's
rule that a tile's fixed time is the same at twice the rate (K0 fp8 elements = 2 K0).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fit_gpu_rates import fit  # noqa: E402

# (K, TFLOP/s), the "Prod cuBLAS" columns.
FP16 = [(128, 493), (256, 845), (384, 1073), (512, 1222), (640, 1313), (768, 1342), (896, 1373),
        (1024, 1389)]
FP8 = [(128, 647), (256, 1102), (384, 1521), (512, 1950), (640, 2300), (768, 2608), (896, 2730),
       (1024, 2770)]
PEAK_BF16, PEAK_FP8 = 2250.0, 4500.0  # B200 dense, TFLOP/s (presets/chips/b200.json)
WAVES = 2048 / 148 / 14
FP8_EFFICIENCY = 0.763  # presets/chips/b200.json fp8_matmul_efficiency
# GB200 over B200 in the same torch.mm shape search, bf16 TFLOP/s (stas00/ml-engineering@744d01e
# compute/accelerator/README.md): the higher power limit's burst rate.
GB200_BURST, B200_BURST, PEAK_GB200 = 1822.0, 1745.0, 2500.0


def check(presets, e, k0):
    """The presets' bf16 rates against the fit, to the digits the presets keep."""
    import json
    b200 = json.load(open(os.path.join(presets, "b200.json")))
    gb200 = json.load(open(os.path.join(presets, "gb200.json")))
    want = {
        ("b200", "matmul_efficiency"): round(e, 3),
        ("b200", "matmul_k_overhead"): round(k0),
        ("gb200", "matmul_efficiency"): round(e * PEAK_BF16 * GB200_BURST / B200_BURST / PEAK_GB200, 3),
        ("gb200", "matmul_k_overhead"): round(k0),
    }
    bad = [f"{c}.{f}: preset {p[f]}, fit {v}" for (c, f), v in want.items()
           for p in [b200 if c == "b200" else gb200] if p.get(f) != v]
    for line in bad:
        print("mismatch:", line)
    return not bad


def main():
    presets = None
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        presets = sys.argv[2]
    elif len(sys.argv) != 1:
        sys.exit("usage: fit_published_sweep.py [--check PRESETS_DIR]")
    print("B200 cuBLAS, M = N = 8192 (tmoreau89/triton RESULTS.md)")
    chosen = None
    for lo in (384, 512, 768):
        pts = [(k, r) for k, r in FP16 if k >= lo]
        a, k0, rms = fit(pts, lambda k, h: PEAK_BF16 * WAVES * k / (k + h))
        print(f"bf16, K >= {lo:4d}: E = {a:.3f}, K0 = {k0:.0f} (rms log error {rms:.3f}, {len(pts)} K)")
        if lo == 512:
            chosen = (a, k0)
    a, k0 = chosen
    print(f"preset: matmul_efficiency = {a:.3f}, matmul_k_overhead = {k0:.0f}")
    for k, r in FP16:
        print(f"  K = {k:5d}: measured {r:6.0f}, fit {PEAK_BF16 * a * WAVES * k / (k + k0):6.0f} TFLOP/s")
    print(f"fp8 check (fp8_matmul_efficiency {FP8_EFFICIENCY}, K0 = {2 * k0:.0f} fp8 elements):")
    for k, r in FP8:
        model = PEAK_FP8 * FP8_EFFICIENCY * WAVES * k / (k + 2 * k0)
        print(f"  K = {k:5d}: measured {r:6.0f}, model {model:6.0f} TFLOP/s ({100 * (model / r - 1):+.0f} %)")
    gb = a * PEAK_BF16 * GB200_BURST / B200_BURST / PEAK_GB200
    print(f"gb200: matmul_efficiency = {gb:.3f} ({a * PEAK_BF16:.0f} x {GB200_BURST:.0f} / {B200_BURST:.0f} "
          f"TFLOP/s of {PEAK_GB200:.0f}), matmul_k_overhead = {k0:.0f}")
    if presets is not None and not check(presets, a, k0):
        sys.exit(1)


if __name__ == "__main__":
    main()
