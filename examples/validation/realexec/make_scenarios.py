#!/usr/bin/env python3
"""Writes the validation rows of the CUDA backend's measured runs.

    make_scenarios.py RESULTS_DIR

RESULTS_DIR is what scripts/gpu_check.sh wrote on a GPU machine: the
calibration profile (h200-cuda.profile.json) and measured/NAME.run.json for
every variant of variants.json. This copies the profile and the measured runs
beside this script and writes scenarios/NAME.json: base.json with the
variant's overrides, the profile as cluster.calibration, and the measured
median step time as the published figure.

These rows check the simulator's engine (the lowered program's ops, their
order and dependencies, the cost of each from the measured kernel rates), not
the chip presets: the kernels are the backend's own (cuBLAS, chunked
attention rather than a fused kernel, fp32 elementwise kernels), measured on
the same machine in the same session. Their split is "development": the
first six were compared with a profile before this split was written (see
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


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_scenarios.py RESULTS_DIR")
    results = sys.argv[1]
    variants = json.load(open(os.path.join(HERE, "variants.json")))["variants"]
    profile = "h200-cuda.profile.json"
    shutil.copyfile(os.path.join(results, profile), os.path.join(HERE, profile))
    os.makedirs(os.path.join(HERE, "measured"), exist_ok=True)
    os.makedirs(os.path.join(HERE, "scenarios"), exist_ok=True)
    for name, overrides in variants.items():
        run_file = os.path.join(results, "measured", name + ".run.json")
        run = json.load(open(run_file))
        shutil.copyfile(run_file, os.path.join(HERE, "measured", name + ".run.json"))
        sc = json.load(open(os.path.join(HERE, "base.json")))
        for path, value in overrides.items():
            set_path(sc, path, value)
        sc["description"] = (f"{name}: the CUDA backend on one {run['device']}, base.json with "
                             + (json.dumps(overrides) if overrides else "no override"))
        sc["cluster"]["calibration"] = "../" + profile
        steps = ", ".join(f"{t:.4f}" for t in run["step_times_s"])
        sc["published"] = {
            "row": "cuda-h200-" + name,
            "split": "development",
            "source_id": "shardsim_cuda_h200",
            "source": (f"this project's CUDA backend (shardsim run --backend cuda --steps {run['steps']} --warmup "
                       f"{run['warmup_steps']}) on one {run['device']}, measured/{name}.run.json; "
                       "the profile measured in the same session (scripts/gpu_check.sh)"),
            "assumptions": f"median of the measured steps ({steps} s); no value left open",
            "step_time_s": round(run["step_time_s"], 6),
        }
        with open(os.path.join(HERE, "scenarios", name + ".json"), "w") as f:
            json.dump(sc, f, indent=2)
            f.write("\n")
    print(f"{len(variants)} scenarios in {os.path.join(HERE, 'scenarios')}")


if __name__ == "__main__":
    main()
