#!/usr/bin/env python3
"""Fits the fixed times of the serving engines' custom all-reduce (topology.h CustomAllReduce) to vLLM's
published benchmark of its kernels on H100 (vllm-project/vllm PRs #24532 and #24111,
benchmark_device_communicators.py, bf16, hidden 8192): ca_1stage (one-shot) and ca_2stage (two-shot).

The model (docs/inference.md): one-shot t = L1 + (n-1)*S/W, two-shot t = L2 + 2(n-1)/n*S/W, W = 450 GB/s
(an H100's NVLink, shared/reference/hardware.md). With W fixed, the least-squares L is the mean of
t - (bytes term) over the points. These are parameters of a software stack fitted on published
measurements of that stack's kernels, not on any row of the validation sets.

Usage: fit_custom_allreduce.py          prints the fit and each point's residual
       fit_custom_allreduce.py --check  also fails if the fit is not the fabric defaults (7 and 14 us) to 0.5 us
"""
import sys

W = 450e9
# (ranks, bytes, one-shot us, two-shot us): 32 and 64 tokens x 8192 x 2 bytes.
POINTS = [
    (4, 32 * 8192 * 2, 10.0, 17.0),  # PR #24532, H100 TP4, 0.5 MB: 0.010 / 0.017 ms
    (4, 64 * 8192 * 2, 14.0, 18.0),  # H100 TP4, 1 MB: 0.014 / 0.018 ms
    (6, 32 * 8192 * 2, 13.0, 15.0),  # PR #24111, H100 TP6, 0.5 MB: 0.013 / 0.015 ms
]
DEFAULTS = {"one-shot": 7.0, "two-shot": 14.0}


def main():
    fits = {}
    for name, col, term in (("one-shot", 2, lambda n, s: (n - 1) * s / W),
                            ("two-shot", 3, lambda n, s: 2 * (n - 1) / n * s / W)):
        rest = [p[col] - 1e6 * term(p[0], p[1]) for p in POINTS]
        L = sum(rest) / len(rest)
        fits[name] = L
        print("%s: L = %.2f us" % (name, L))
        for p, r in zip(POINTS, rest):
            print("  %d ranks, %7d B: measured %5.1f us, model %5.1f us" % (p[0], p[1], p[col], L + p[col] - r))
    if "--check" in sys.argv:
        bad = [k for k, v in fits.items() if abs(v - DEFAULTS[k]) > 0.5]
        if bad:
            print("fit differs from the defaults:", bad)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
