#!/usr/bin/env python3
"""Which tensor x pipeline split for Llama 3 70B on 1,024 H100s?

Sweeps tp x pp (dp fills the cluster) with shardsim's Python API and saves two
plots: an MFU heat map over tp and pp (crossed out where the plan does not fit
in memory) and step time against peak memory per device.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/sweep_tp_pp.py --out /tmp/plots

Needs python3-matplotlib; pandas is used when present (python3-pandas).
"""

import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only: runs without a display
import matplotlib.pyplot as plt  # noqa: E402

import shardsim  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SCENARIO = os.path.join(HERE, "..", "llama3-70b-h100x1024.json")
GIB = 1024**3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default=DEFAULT_SCENARIO)
    ap.add_argument("--tp", default="1,2,4,8", help="tensor-parallel sizes (default 1,2,4,8)")
    ap.add_argument("--pp", default="1,2,4,8", help="pipeline-parallel sizes (default 1,2,4,8)")
    ap.add_argument("--out", default=".", help="folder for the PNG files")
    ap.add_argument("--jobs", type=int, default=0, help="threads (0: every core)")
    args = ap.parse_args(argv)
    tps = [int(x) for x in args.tp.split(",")]
    pps = [int(x) for x in args.pp.split(",")]

    rows = shardsim.sweep(args.scenario, {"plan.tp": tps, "plan.pp": pps}, jobs=args.jobs)
    try:
        import pandas as pd

        print(pd.DataFrame(rows)[["plan.tp", "plan.pp", "step_time_s", "mfu", "peak_bytes_per_device", "fits"]])
    except ImportError:
        for r in rows:
            print(r["plan.tp"], r["plan.pp"], r["step_time_s"], r["mfu"], r["fits"], r["error"])

    os.makedirs(args.out, exist_ok=True)
    by_point = {(r["plan.tp"], r["plan.pp"]): r for r in rows}

    # MFU heat map: rows pp, columns tp; plans that do not fit are crossed out.
    grid = [[(by_point[(tp, pp)]["mfu"] or 0.0) * 100 for tp in tps] for pp in pps]
    fig, ax = plt.subplots(figsize=(5, 4))
    im = ax.imshow(grid, origin="lower", cmap="viridis")
    ax.set_xticks(range(len(tps)), [str(t) for t in tps])
    ax.set_yticks(range(len(pps)), [str(p) for p in pps])
    ax.set_xlabel("tensor parallel (tp)")
    ax.set_ylabel("pipeline parallel (pp)")
    for i, pp in enumerate(pps):
        for j, tp in enumerate(tps):
            r = by_point[(tp, pp)]
            label = "error" if r["error"] else f"{grid[i][j]:.1f}" + ("" if r["fits"] else "\nOOM")
            ax.text(j, i, label, ha="center", va="center", color="white", fontsize=8)
    fig.colorbar(im, ax=ax, label="MFU (%)")
    ax.set_title("MFU by tp x pp")
    fig.tight_layout()
    heat = os.path.join(args.out, "mfu_heatmap.png")
    fig.savefig(heat, dpi=120)
    plt.close(fig)

    # Step time against peak memory per device, with the device's capacity.
    ok = [r for r in rows if r["error"] is None]
    fig, ax = plt.subplots(figsize=(5, 4))
    for r in ok:
        ax.scatter(r["peak_bytes_per_device"] / GIB, r["step_time_s"], color="tab:blue" if r["fits"] else "tab:red")
        ax.annotate(f"tp{r['plan.tp']} pp{r['plan.pp']}", (r["peak_bytes_per_device"] / GIB, r["step_time_s"]),
                    fontsize=7, xytext=(3, 3), textcoords="offset points")
    capacity = shardsim.simulate(args.scenario)["memory"]["capacity_bytes"]
    ax.axvline(capacity / GIB, color="grey", linestyle="--", label="usable memory per device")
    ax.legend()
    ax.set_xlabel("peak memory per device (GiB)")
    ax.set_ylabel("step time (s)")
    ax.set_title("Step time vs memory (red: does not fit)")
    fig.tight_layout()
    scatter = os.path.join(args.out, "step_time_vs_memory.png")
    fig.savefig(scatter, dpi=120)
    plt.close(fig)
    print("wrote", heat, "and", scatter)
    return 0


if __name__ == "__main__":
    sys.exit(main())
