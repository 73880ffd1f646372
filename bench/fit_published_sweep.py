#!/usr/bin/env python3
"""Blackwell GEMM rates from published sustained cuBLAS measurements (docs/model.md, "Blackwell").

    python3 bench/fit_published_sweep.py [--check PRESETS_DIR]

With --check, exits 1 unless presets/chips/b200.json and gb200.json hold the fitted values (CTest
`presets.blackwell_sweep_fit`).

No Blackwell GEMM curve was measured by this project. Two published B200 measurements time
cuBLAS over runs long enough to reach the power-limited clock:

- a K sweep at M = N = 8192, K = 128..1024 (tmoreau89/triton python/triton_cublas_bench/RESULTS.md,
  2025-10-10, CUDA 13.0 / cuBLAS 13.0, cuBLASLt's heuristic's best algorithm,
  triton.testing.do_bench after 10k warm-up iterations), the "Prod cuBLAS" columns;
- square GEMMs 1024^3..8192^3 in bf16 and in NVFP4 through torch._scaled_mm (pytorch/ao PR #2427,
  2025-06-23, benchmarks/float8/bench_matmul.py --recipe nvfp4 on a B200: normal operands,
  torch.utils.benchmark's blocked_autorange, at least 0.2 s per point).

bf16: E, K0 and the power cap C of the preset's form (sim/src/compute_model.cc)

    rate(M, N, K) = peak · min(E · waves(M, N) · K / (K + K0), C)

with waves = tiles of 128 x 256 over 148 SMs / (whole waves x 148), are fitted together by least
squares in log rate (a grid, coarse then fine) to three sets: the bf16 sweep over K >= 512 (below,
the tile loop is too short for the form: K = 128..384 run far under it), the bf16 squares from
3072^3 (smaller ones are launch-bound), and the fp8 sweep over K >= 768 at the preset's kept fp8
efficiency with the code's rule that a tile's fixed time is the same at the format's rate (K0 fp8
elements = 2 K0; below K = 768 the fp8 sweep runs far under the form). The sweeps pin the K
dependence but stop at K = 1024; the squares level off at 1410-1450 TFLOP/s from 4096^3 where the
tile form alone keeps rising, which is the power limit binding: C is the largest fraction of a
format's peak any GEMM sustains. C is taken as the same fraction for every format (energy per FLOP
falls as the format's peak rises); the fp8 sweep and the NVFP4 squares, all under it, do not
contradict that, and no large-K fp8 or fp4 measurement tests it.
NVFP4: fp4_matmul_efficiency fitted the same way to the NVFP4 squares from 4096^3 (the range was
chosen on these GEMM points, not on validation rows: at 3072^3, 288 tiles, under two waves, the NVFP4
kernel runs 30 % below the form, where bf16 is within 3 %), K0 fp4 elements = 4 K0, under the cap.
fp8 is not fitted: the preset keeps the shape search's fp8 figure as its E.
GB200 has no such measurement: its rates (E and C) are B200's scaled by the two chips' burst bf16
rates in one shape search (stas00/ml-engineering@744d01e compute/accelerator/README.md: 1822 / 1745
TFLOP/s, GB200's higher power limit), over GB200's peaks; K0 is B200's (same silicon). Its fused
attention rates are derived the same way from B200's measured ones (presets/chips/b200.json
attention_kernels and attention_efficiency, fractions of 2250 TFLOP/s): B200's rate x 1822 / 1745
over GB200's 2500; the half lengths are B200's.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fit_gpu_rates import fit  # noqa: E402

SMS, TILE_M, TILE_N = 148, 128, 256
PEAK = {"bf16": 2250.0, "fp8": 4500.0, "fp4": 9000.0}  # B200 dense, TFLOP/s (presets/chips/b200.json)
PEAK_GB200 = {"bf16": 2500.0, "fp4": 10000.0}          # presets/chips/gb200.json
GB200_BURST, B200_BURST = 1822.0, 1745.0
FP8_EFFICIENCY = 0.763  # presets/chips/b200.json fp8_matmul_efficiency (shape search, kept)

# (M, N, K, TFLOP/s)
SWEEP_BF16 = [(8192, 8192, k, r) for k, r in [(128, 493), (256, 845), (384, 1073), (512, 1222), (640, 1313),
                                               (768, 1342), (896, 1373), (1024, 1389)]]
SWEEP_FP8 = [(8192, 8192, k, r) for k, r in [(128, 647), (256, 1102), (384, 1521), (512, 1950), (640, 2300),
                                              (768, 2608), (896, 2730), (1024, 2770)]]
SQUARES_BF16 = [(s, s, s, r) for s, r in [(1024, 423), (1536, 921), (2048, 1130), (3072, 1510), (4096, 1410),
                                           (6144, 1450), (8192, 1420)]]
# fp8 B200 figures of other kernels than cuBLAS's per-tensor one, printed against the form, not
# fitted: vLLM's CUTLASS kernel on SM100 with per-tensor scales, no quantisation (vllm-project/vllm
# PR #19566, benchmarks/kernels/bench_fp8_gemm.py, M = 16384, N = K = 4096) and torch._scaled_mm
# with rowwise scales (pytorch/helion PR #2756, do_bench, "~1860 TFLOP/s").
OTHER_FP8 = [(16384, 4096, 4096, 2544, "vLLM CUTLASS, per-tensor"), (4096, 4096, 4096, 1860, "torch._scaled_mm rowwise")]
SQUARES_FP4 = [(s, s, s, r) for s, r in [(1024, 366), (1536, 1080), (2048, 1680), (3072, 3510), (4096, 4460),
                                          (6144, 5500), (8192, 5370)]]


def waves(m, n):
    tiles = math.ceil(m / TILE_M) * math.ceil(n / TILE_N)
    return tiles / (math.ceil(tiles / SMS) * SMS)


def rate(m, n, k, e, k0, peak, cap=1.0):
    return peak * min(e * waves(m, n) * k / (k + k0), cap)


def sets():
    """The fitted points: (M, N, K, TFLOP/s, peak, E or None where E is fitted, K0 per bf16 K0)."""
    bf16 = [p + (PEAK["bf16"], None, 1) for p in SWEEP_BF16 if p[2] >= 512]
    bf16 += [p + (PEAK["bf16"], None, 1) for p in SQUARES_BF16 if p[2] >= 3072]
    fp8 = [p + (PEAK["fp8"], FP8_EFFICIENCY, 2) for p in SWEEP_FP8 if p[2] >= 768]
    return bf16, fp8


def sq_error(points, e, k0, cap):
    return sum((math.log(rate(m, n, k, e if fixed is None else fixed, scale * k0, peak, cap)) - math.log(r)) ** 2
               for m, n, k, r, peak, fixed, scale in points)


def grid_fit(points):
    """Least squares over (E, K0, C): a coarse grid, then a fine one around its best."""
    best = None
    for k0 in range(0, 401, 8):
        for c in range(50, 81):
            for e in range(50, 91):
                err = sq_error(points, e / 100, k0, c / 100)
                if best is None or err < best[0]:
                    best = (err, e / 100, k0, c / 100)
    _, e0, k00, c0 = best
    for k0 in range(max(0, k00 - 8), k00 + 9):
        for dc in range(-10, 11):
            for de in range(-10, 11):
                e, c = round(e0 + de / 1000, 3), round(c0 + dc / 1000, 3)
                err = sq_error(points, e, k0, c)
                if err < best[0]:
                    best = (err, e, k0, c)
    err, e, k0, c = best
    return e, k0, c, math.sqrt(err / len(points))


def fitted():
    """bf16 E, K0 and the cap (three sets), NVFP4 E (its squares), as the presets keep them."""
    bf16, fp8 = sets()
    e, k0, cap, rms = grid_fit(bf16 + fp8)
    fp4 = [p for p in SQUARES_FP4 if p[2] >= 4096]
    logs = [math.log(p[3] / rate(p[0], p[1], p[2], 1.0, 4 * k0, PEAK["fp4"])) for p in fp4]
    e4 = round(math.exp(sum(logs) / len(logs)), 3)
    if any(rate(m, n, k, e4, 4 * k0, 1.0) > cap for m, n, k, _ in fp4):
        sys.exit("the NVFP4 squares reach the cap: fit E4 under it")
    return bf16, fp8, fp4, e, k0, cap, rms, e4


def main():
    presets = None
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        presets = sys.argv[2]
    elif len(sys.argv) != 1:
        sys.exit("usage: fit_published_sweep.py [--check PRESETS_DIR]")
    bf16, fp8, fp4, e, k0, cap, rms, e4 = fitted()
    print(f"B200 bf16: matmul_efficiency = {e:.3f}, matmul_k_overhead = {k0}, matmul_power_cap = {cap:.3f} "
          f"(rms log error {rms:.3f} over {len(bf16) + len(fp8)} points, the fp8 sweep's included)")
    fitted_bf16 = [p[:4] for p in bf16]
    # Points outside the fitted ranges are listed without a model value: below
    # one wave of tiles the compute model splits K, which this form omits.
    for m, n, k, r in SWEEP_BF16 + SQUARES_BF16:
        if (m, n, k, r) not in fitted_bf16:
            print(f"  {m:5d} x {n:5d} x {k:5d}: measured {r:5.0f} TFLOP/s (not fitted)")
            continue
        model = rate(m, n, k, e, k0, PEAK["bf16"], cap)
        print(f"  {m:5d} x {n:5d} x {k:5d}: measured {r:5.0f}, model {model:5.0f} TFLOP/s ({100 * (model / r - 1):+4.0f} %)")
    print(f"B200 NVFP4: fp4_matmul_efficiency = {e4:.3f} (K0 = {4 * k0} fp4 elements; under the cap)")
    for m, n, k, r in SQUARES_FP4:
        if (m, n, k, r) not in fp4:
            print(f"  {m:5d}^3: measured {r:5.0f} TFLOP/s (not fitted)")
            continue
        model = rate(m, n, k, e4, 4 * k0, PEAK["fp4"], cap)
        print(f"  {m:5d}^3: measured {r:5.0f}, model {model:5.0f} TFLOP/s ({100 * (model / r - 1):+4.0f} %)")
    print(f"B200 fp8 (fp8_matmul_efficiency {FP8_EFFICIENCY} kept, K0 = {2 * k0} fp8 elements, the same cap; "
          "K >= 768 fitted):")
    for m, n, k, r in SWEEP_FP8:
        model = rate(m, n, k, FP8_EFFICIENCY, 2 * k0, PEAK["fp8"], cap)
        print(f"  K = {k:5d}: measured {r:5.0f}, model {model:5.0f} TFLOP/s ({100 * (model / r - 1):+4.0f} %)")
    print(f"  K = {8192:5d}: model {rate(8192, 8192, 8192, FP8_EFFICIENCY, 2 * k0, PEAK['fp8'], cap):5.0f} TFLOP/s "
          "(no cuBLAS measurement at this K)")
    for m, n, k, r, what in OTHER_FP8:
        model = rate(m, n, k, FP8_EFFICIENCY, 2 * k0, PEAK["fp8"], cap)
        print(f"  {m} x {n} x {k}, {what} (not cuBLAS, not fitted): measured {r:5.0f}, model {model:5.0f} TFLOP/s "
              f"({100 * (model / r - 1):+4.0f} %)")
    ratio = GB200_BURST / B200_BURST
    gb = round(e * PEAK["bf16"] * ratio / PEAK_GB200["bf16"], 3)
    gb4 = round(e4 * PEAK["fp4"] * ratio / PEAK_GB200["fp4"], 3)
    gbcap = round(cap * PEAK["bf16"] * ratio / PEAK_GB200["bf16"], 3)
    print(f"GB200: matmul_efficiency = {gb:.3f}, fp4_matmul_efficiency = {gb4:.3f}, matmul_k_overhead = {k0}, "
          f"matmul_power_cap = {gbcap:.3f} (B200's rates x {GB200_BURST:.0f} / {B200_BURST:.0f})")
    here = presets or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "presets", "chips")
    b200 = json.load(open(os.path.join(here, "b200.json")))
    attention = {("gb200", "attention_efficiency"): round(b200["attention_efficiency"] * ratio * PEAK["bf16"]
                                                          / PEAK_GB200["bf16"], 3)}
    for kernel, rates in b200["attention_kernels"].items():
        for side in ("forward", "backward"):
            attention[("gb200", f"attention_kernels.{kernel}.{side}")] = round(
                rates[side] * ratio * PEAK["bf16"] / PEAK_GB200["bf16"], 3)
    print("GB200 attention (B200's measured rates x %.0f / %.0f over GB200's peak): %s" % (
        GB200_BURST, B200_BURST, ", ".join(f"{f} {v}" for (_, f), v in attention.items())))
    if presets is None:
        return
    want = {("b200", "matmul_efficiency"): e, ("b200", "matmul_k_overhead"): k0,
            ("b200", "fp4_matmul_efficiency"): e4, ("gb200", "matmul_efficiency"): gb,
            ("gb200", "matmul_k_overhead"): k0, ("gb200", "fp4_matmul_efficiency"): gb4,
            ("b200", "matmul_power_cap"): cap, ("gb200", "matmul_power_cap"): gbcap}
    want.update(attention)
    bad = []
    for (chip, field), value in want.items():
        preset = json.load(open(os.path.join(presets, chip + ".json")))
        for key in field.split("."):
            preset = preset.get(key) if isinstance(preset, dict) else None
        if preset != value:
            bad.append(f"{chip}.{field}: preset {preset}, fit {value}")
    for line in bad:
        print("mismatch:", line)
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
