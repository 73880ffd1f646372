#!/usr/bin/env python3
"""The benchmark regression gate: runs the bench programs of a Release build,
divides each figure by the reference loop's time measured in the same run
(bench/reference_bench.cc), and compares the ratios with the recorded ones in
bench/gate.json. A ratio above recorded x tolerance fails (exit 1): the change
made that figure that much slower relative to the machine. Ratios below
recorded / tolerance are reported as room to re-record.

    scripts/bench_gate.py [--build DIR] [--record]

Each figure is the best of --repeats runs (default 2), so a burst of load on a
shared machine has to hit every run to count. The tolerance (bench/gate.json)
is wide on purpose: ratios move by about +-20% between runs and machines;
the gate is for large regressions, docs/performance.md for figures.
"""

import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
RECORD = os.path.join(ROOT, "bench", "gate.json")

# (name, program, arguments, pattern whose group 1 is seconds).
FIGURES = [
    ("step llama3-8b-tpu-v5e-256 engine_s", "step_bench", ["examples/llama3-8b-tpu-v5e-256.json"],
     r"engine ([0-9.]+) s"),
    ("step llama3-70b-h100x1024 engine_s", "step_bench", ["examples/llama3-70b-h100x1024.json"],
     r"engine ([0-9.]+) s"),
    # One device per orbit of the step's symmetry (16 of 16,384 run).
    ("step llama3-405b-h100x16384 symmetric engine_s", "step_bench",
     ["--symmetry", "examples/llama3-405b-h100x16384.json"], r"engine ([0-9.]+) s"),
    ("search llama3-405b-h100x16384 pruning_pass_s", "search_bench", ["--pruning-only"],
     r"candidates\) in ([0-9.]+) s"),
]


def run(build, program, args, pattern):
    exe = os.path.join(build, "bench", program)
    if not os.access(exe, os.X_OK):
        sys.exit(f"bench_gate: {exe} is not built (a Release build with SHARDSIM_BUILD_BENCH=ON)")
    out = subprocess.run([exe, *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    m = re.search(pattern, out)
    if not m:
        sys.exit(f"bench_gate: {program} printed no figure matching {pattern!r}:\n{out}")
    return float(m.group(1))


def measure(build, repeats):
    ref = min(run(build, "reference_bench", [], r"reference loop: ([0-9.]+) s") for _ in range(repeats))
    ratios = {}
    for name, program, args, pattern in FIGURES:
        seconds = min(run(build, program, args, pattern) for _ in range(repeats))
        ratios[name] = seconds / ref
        print(f"  {name:48s} {seconds:9.4f} s  = {ratios[name]:8.3f} x reference")
    return ref, ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the Release build directory")
    ap.add_argument("--record", action="store_true", help="write the measured ratios to bench/gate.json")
    ap.add_argument("--repeats", type=int, default=2, help="runs per figure; the best counts")
    opt = ap.parse_args()
    with open(RECORD) as f:
        record = json.load(f)
    tolerance = float(record["tolerance_factor"])
    ref, ratios = measure(opt.build, max(1, opt.repeats))
    print(f"  reference loop {ref:.4f} s")
    if opt.record:
        record["ratios"] = {k: round(v, 4) for k, v in ratios.items()}
        tmp = RECORD + ".tmp"
        with open(tmp, "w") as f:
            json.dump(record, f, indent=2)
            f.write("\n")
        os.replace(tmp, RECORD)
        print(f"bench_gate: recorded {len(ratios)} ratios in {os.path.relpath(RECORD, ROOT)}")
        return 0
    failed = False
    for name, ratio in ratios.items():
        want = record["ratios"].get(name)
        if want is None:
            print(f"bench_gate: {name} has no recorded ratio (scripts/bench_gate.py --record)")
            failed = True
        elif ratio > want * tolerance:
            print(f"bench_gate: SLOWER: {name}: {ratio:.3f} x reference, recorded {want:.3f} (limit x{tolerance})")
            failed = True
        elif ratio < want / tolerance:
            print(f"bench_gate: faster: {name}: {ratio:.3f} x reference, recorded {want:.3f}: re-record")
    for name in record["ratios"]:
        if name not in ratios:
            print(f"bench_gate: {name} is recorded but no longer measured: re-record")
            failed = True
    print("bench_gate: " + ("FAILED" if failed else f"held (every figure within x{tolerance} of its record)"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
