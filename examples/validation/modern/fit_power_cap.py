#!/usr/bin/env python3
"""Fits compute_clock_scale of the 500 W Grand Teton H100 profile on the rows marked "fitted".

The torchtitan benchmarks of Dec 2024 ran on Meta's Grand Teton H100s (96 GB HBM2e) at their default 500 W
power limit (pytorch/torchtitan@b5bcd76c66:benchmarks/llama3_h100_202412_torchtitan.md:15). The h100-sxm-96g
preset's GEMM and attention rates are the h100-sxm preset's, measured on a part held at 700 W. A power cap
lowers the SM clock and leaves the HBM clock alone, so shardsim divides the FLOP term of matmuls and attention
by the cluster's compute_clock_scale and leaves memory-bound kernels as they are (docs/model.md, section 3,
"Power-capped GPUs"). No measurement of an H100's tensor-core clock at 500 W is published, so the scale is a
named parameter of this hardware profile, fitted here and reported as fitted: it is not a chip rate, and the
h100-sxm-96g preset does not carry it.

The fitted rows are the development rows of that hardware without context parallelism when the fit was
made (families/common.py, POWER_CAP_FIT_ROWS: r0486-r0489 and r0493-r0495, Llama 3 8B on 8 and 128 GPUs);
they carry "fitted": true in their "published" object. The other development rows of that hardware (the CP
rows r0490-r0492, and r0500-r0503, moved to development later) are printed, not fitted: the CP rows' error
grows with the CP degree, a cost the scale must not absorb. Held-out rows are not read here; `shardsim
validate` evaluates them.

    fit_power_cap.py [path/to/shardsim]                fit: the grid 0.50 .. 1.00 in steps of 0.01
    fit_power_cap.py --check [path/to/shardsim]        exit 1 unless every power-capped scenario carries the
                                                       same scale and it is the best of its grid neighbours

Prints the mean |error| of the fitted rows' throughput for each candidate and the best; the grid and the choice
are deterministic (ties go to the larger scale, the smaller correction).
"""
import json
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SCENARIOS = HERE / "scenarios"


def load(path):
    return json.loads(path.read_text())


def capped():
    """{file name: scenario} of the scenarios whose cluster carries compute_clock_scale (the power-capped
    hardware), each read once."""
    scenarios = {p.name: load(p) for p in sorted(SCENARIOS.glob("*.json"))}
    return {name: s for name, s in scenarios.items() if "compute_clock_scale" in s["cluster"]}


def fitted_rows(scenarios):
    return {n: s for n, s in scenarios.items() if s["published"].get("fitted", False)}


def development_cp_rows(scenarios):
    return {n: s for n, s in scenarios.items()
            if s["published"]["split"] == "development" and not s["published"].get("fitted", False)}


def errors(shardsim, scenarios, scale):
    """Throughput errors of `shardsim validate --json` on the scenarios with compute_clock_scale = scale."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, s in scenarios.items():
            s = dict(s, cluster=dict(s["cluster"], compute_clock_scale=scale))
            (pathlib.Path(tmp) / name).write_text(json.dumps(s))
        out = subprocess.run([shardsim, "validate", tmp, "--json"], check=True, capture_output=True, text=True).stdout
    return [r for r in json.loads(out)["rows"] if not r["metric"].endswith("_GiB")]


def mean_abs(rs):
    return sum(abs(r["error"]) for r in rs) / len(rs)


def check(shardsim):
    scenarios = capped()
    scales = {s["cluster"]["compute_clock_scale"] for s in scenarios.values()}
    if len(scales) != 1:
        print(f"power-capped scenarios carry different scales: {sorted(scales)}")
        return 1
    scale = scales.pop()
    rows = fitted_rows(scenarios)
    here = mean_abs(errors(shardsim, rows, scale))
    for other in (round(scale - 0.01, 2), round(scale + 0.01, 2)):
        err = mean_abs(errors(shardsim, rows, other))
        print(f"compute_clock_scale {other:.2f}: {100 * err:.3f}% (committed {scale:.2f}: {100 * here:.3f}%)")
        if err < here - 1e-12 or (err <= here + 1e-12 and other > scale):
            print(f"the committed scale {scale:.2f} is not the fit: rerun fit_power_cap.py and make_scenarios.py")
            return 1
    print(f"compute_clock_scale {scale:.2f} is the fit on {len(rows)} rows ({100 * here:.2f}% mean |error|)")
    return 0


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    shardsim = args[0] if args else str(ROOT / "build" / "cli" / "shardsim")
    if "--check" in sys.argv[1:]:
        return check(shardsim)
    scenarios = capped()
    rows = fitted_rows(scenarios)
    print("fitted rows: " + ", ".join(s["published"]["row"] for s in rows.values()))
    best = None
    for step in range(100, 49, -1):
        scale = step / 100
        err = mean_abs(errors(shardsim, rows, scale))
        print(f"compute_clock_scale {scale:.2f}: fitted rows mean |error| {100 * err:.2f}%")
        if best is None or err < best[1] - 1e-12:
            best = (scale, err)
    print(f"best: {best[0]:.2f} (fitted rows {100 * best[1]:.2f}%)")
    for r in errors(shardsim, development_cp_rows(scenarios), best[0]):
        print(f"  development, not fitted: {r['row']} {100 * r['error']:+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
