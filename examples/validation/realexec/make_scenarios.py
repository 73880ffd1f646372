#!/usr/bin/env python3
"""Writes the validation rows of the CUDA backend's measured runs.

    make_scenarios.py RESULTS_DIR CHIP SPLIT

RESULTS_DIR is what `scripts/gpu_check.sh BUNDLE RESULTS_DIR CHIP` wrote on a
GPU machine: the calibration profile (CHIP-cuda.profile.json) and
measured/NAME.run.json for every variant of variants.json. This copies the
profile and the measured runs into CHIP/ beside this script and writes
CHIP/scenarios/NAME.json: base.json with the variant's overrides, the profile
as cluster.calibration, and the measured median step time as the published
figure. SPLIT (development or held_out) is decided before the run.

These rows check the simulator's engine (the lowered program's ops, their
order and dependencies, the cost of each from the measured kernel rates), not
the chip presets: the kernels are the backend's own (cuBLAS, chunked
attention rather than a fused kernel, fp32 elementwise kernels), measured on
the same machine in the same session. The H200 rows are "development":
their first six were compared with a profile before a split was written; the
H100 rows were declared held out before they were measured (see
docs/validation.md).
"""
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def set_path(doc, dotted, value):
    keys = dotted.split(".")
    for k in keys[:-1]:
        doc = doc[k]
    doc[keys[-1]] = value


# The chip preset each GPU's rows name (memory and what the profile does not carry).
PRESETS = {"h100": "h100-sxm", "h200": "h200-sxm"}


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in ("development", "held_out"):
        sys.exit("usage: make_scenarios.py RESULTS_DIR CHIP development|held_out")
    results, chip, split = sys.argv[1:]
    if chip not in PRESETS:
        sys.exit(f"make_scenarios.py: unknown chip {chip!r} (known: {', '.join(PRESETS)})")
    variants = json.load(open(os.path.join(HERE, "variants.json")))["variants"]
    out = os.path.join(HERE, chip)
    profile = chip + "-cuda.profile.json"
    os.makedirs(os.path.join(out, "measured"), exist_ok=True)
    os.makedirs(os.path.join(out, "scenarios"), exist_ok=True)
    shutil.copyfile(os.path.join(results, profile), os.path.join(out, profile))
    for name, overrides in variants.items():
        run_file = os.path.join(results, "measured", name + ".run.json")
        run = json.load(open(run_file))
        shutil.copyfile(run_file, os.path.join(out, "measured", name + ".run.json"))
        sc = json.load(open(os.path.join(HERE, "base.json")))
        sc["cluster"]["chip"] = PRESETS[chip]
        for path, value in overrides.items():
            set_path(sc, path, value)
        sc["description"] = (f"{name}: the CUDA backend on one {run['device']}, base.json with "
                             + (json.dumps(overrides) if overrides else "no override"))
        sc["cluster"]["calibration"] = "../" + profile
        steps = ", ".join(f"{t:.4f}" for t in run["step_times_s"])
        sc["published"] = {
            "row": f"cuda-{chip}-{name}",
            "split": split,
            "source_id": "shardsim_cuda_" + chip,
            "source": (f"this project's CUDA backend (shardsim run --backend cuda --steps {run['steps']} --warmup "
                       f"{run['warmup_steps']}) on one {run['device']}, measured/{name}.run.json; "
                       "the profile measured in the same session (scripts/gpu_check.sh)"),
            "assumptions": f"median of the measured steps ({steps} s); no value left open",
            "step_time_s": round(run["step_time_s"], 6),
        }
        with open(os.path.join(out, "scenarios", name + ".json"), "w") as f:
            json.dump(sc, f, indent=2)
            f.write("\n")
    print(f"{len(variants)} scenarios in {os.path.join(out, 'scenarios')}")


if __name__ == "__main__":
    main()
