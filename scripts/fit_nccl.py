#!/usr/bin/env python3
"""Fits the three realization figures of shardsim's NCCL model.

NCCL's own tuning model (sim/nccl_model.h) picks the algorithm and protocol;
three figures say how its choice really runs: the bandwidth LL and LL128
achieve as a fraction of what NCCL's table assumes, and the pipeline fill in
chunks of one channel. This script fits them, by least squares on the relative
bus-bandwidth error, to the 'dev' curves of
examples/validation/nccl/allreduce_8gpu.json (nccl-tests all-reduce on one
8-GPU node), through the shardsim binary itself (`shardsim collective
--sweep` with --set fabric.nccl_*), and prints every curve's error.

  scripts/fit_nccl.py [--shardsim build/cli/shardsim]            fit and print
  scripts/fit_nccl.py --check                                    print the errors of the current defaults
  scripts/fit_nccl.py --check --record                           and store them as recorded_error_pct

The fitted values are the defaults of NcclSpec (topology/topology.h); after
changing them, run --check --record so that the unit test NcclCurves
holds later changes to the recorded errors.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "examples", "validation", "nccl", "allreduce_8gpu.json")


def predict(shardsim, curve, params):
    """busbw_GBps by size for one curve under the given --set overrides."""
    cluster = os.path.join(os.path.dirname(DATA), curve["cluster"])
    sizes = [p["size_bytes"] for p in curve["points"]]
    cmd = [shardsim, "collective", cluster, "--op", "all-reduce", "--sweep", f"{min(sizes)}:{max(sizes)}", "--json"]
    for key, value in params.items():
        cmd += ["--set", f"fabric.{key}={value}"]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    by_size = {row["bytes"]: row for row in out["rows"]}
    return {s: by_size[s] for s in sizes}


def errors(shardsim, curve, params):
    rows = predict(shardsim, curve, params)
    return [(p, rows[p["size_bytes"]]) for p in curve["points"]]


def cost(shardsim, curves, params):
    total = 0.0
    for c in curves:
        for p, row in errors(shardsim, c, params):
            total += (row["busbw_GBps"] / p["busbw_GBps"] - 1) ** 2
    return total


def fit(shardsim, curves):
    grid = [round(0.30 + 0.02 * i, 2) for i in range(36)]
    best = None
    for fill in [0.25 * i for i in range(17)]:
        params = {"nccl_fill_chunks": fill, "nccl_ll_efficiency": 0.7, "nccl_ll128_efficiency": 0.7}
        # LL and LL128 time disjoint sizes, so one pass per figure converges.
        for key in ("nccl_ll_efficiency", "nccl_ll128_efficiency"):
            scores = []
            for v in grid:
                trial = dict(params, **{key: v})
                scores.append((cost(shardsim, curves, trial), v))
            params[key] = min(scores)[1]
        c = cost(shardsim, curves, params)
        if best is None or c < best[0]:
            best = (c, dict(params))
        if sys.stderr.isatty():
            print(f"\rfill {fill:.2f}: best so far {best[1]}", end="", file=sys.stderr)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    return best[1]


def report(shardsim, data, params, record):
    print(f"{'curve':6} {'split':6} {'size_B':>12} {'measured':>9} {'predicted':>9} {'error%':>7}  algorithm")
    worst = 0.0
    for c in data["curves"]:
        for p, row in errors(shardsim, c, params):
            e = 100 * (row["busbw_GBps"] / p["busbw_GBps"] - 1)
            worst = max(worst, abs(e))
            print(f"{c['name']:6} {c['split']:6} {p['size_bytes']:>12} {p['busbw_GBps']:>9.1f} "
                  f"{row['busbw_GBps']:>9.1f} {e:>+7.1f}  {row['algorithm']}")
            if record:
                p["recorded_error_pct"] = round(e, 1)
    print(f"max |error| {worst:.1f}%")
    if record:
        write(data)


def write(data):
    """The data file with one point per line, as it is committed."""
    lines = ["{"]
    keys = [k for k in data if k != "curves"]
    for k in keys:
        lines.append(f"  {json.dumps(k)}: {json.dumps(data[k])},")
    lines.append('  "curves": [')
    for i, c in enumerate(data["curves"]):
        lines.append("    {")
        for k in ("name", "cluster", "split"):
            lines.append(f"      {json.dumps(k)}: {json.dumps(c[k])},")
        lines.append('      "points": [')
        pts = [f"        {json.dumps(p)}" for p in c["points"]]
        lines.append(",\n".join(pts))
        lines.append("      ]")
        lines.append("    }" + ("," if i + 1 < len(data["curves"]) else ""))
    lines.append("  ]")
    lines.append("}")
    with open(DATA, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardsim", default=os.path.join(ROOT, "build", "cli", "shardsim"))
    ap.add_argument("--check", action="store_true", help="report the current defaults' errors, fit nothing")
    ap.add_argument("--record", action="store_true", help="with --check: store the errors in the data file")
    args = ap.parse_args()
    with open(DATA) as f:
        data = json.load(f)
    if args.check:
        report(args.shardsim, data, {}, args.record)
        return
    dev = [c for c in data["curves"] if c["split"] == "dev"]
    params = fit(args.shardsim, dev)
    print("fitted on " + ", ".join(c["name"] for c in dev) + ": " +
          ", ".join(f"{k} = {v:g}" for k, v in params.items()))
    report(args.shardsim, data, params, False)


if __name__ == "__main__":
    main()
