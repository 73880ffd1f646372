#!/usr/bin/env python3
"""A torchtitan Llama 3 8B step on one GPU, measured against the simulator (docs/model.md,
"A torchtitan step on one GPU").

    python3 bench/check_torchtitan_step.py SHARDSIM [--max-error 0.05] [--max-memory-error 0.1]
                                           [MEASURED.json ...]

MEASURED files are bench/torchtitan_step_probe.py's output (default: the committed
bench/torchtitan_step-*.json). For each measured configuration the simulator runs the same work:
examples/validation/modern/scenarios/r0529-llama3-8b-h100x8-bf16.json (torchtitan's defaults, local
batch 1 of 8192 tokens, per-op selective checkpointing) on one device of the measured chip, with
the run's compile and checkpointing. The probe runs forward and backward alone (no optimizer:
FSDP shards it), so the prediction is the step time less the critical path's optimizer time; with
one device there is no communication. Prints one line per configuration (measured, predicted,
error) and the time by kind of kernel on each side: GEMMs, attention (FlashAttention-2 forward and
backward kernels), the rest (norms, elementwise, loss, copies). With --max-error, exits 1 when a
configuration's |error| exceeds it (CTest `validation.torchtitan_single_gpu`). Memory: the run's
peak allocated bytes less its bf16 weights, against the predicted activations, logits and working
set: the probe holds no fp32 master weights or optimizer state, and where the simulator puts the
peak (the loss's backward) no layer's gradient exists yet; the probe does not record where its own
peak fell. --max-memory-error bounds that error.

This checks the per-device program and the chip presets together on hardware of this project's
own measurement (a 700 W H100 80GB HBM3 and an H200, torch 2.11 / CUDA 13.0): not the libraries
of the published runs, and not what FSDP across eight GPUs adds.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIO = os.path.join(ROOT, "examples/validation/modern/scenarios/r0529-llama3-8b-h100x8-bf16.json")
CHIPS = {"NVIDIA H100 80GB HBM3": "h100-sxm", "NVIDIA H200": "h200-sxm"}
# Llama 3 8B as the probe builds it (torchtitan models/llama "8B"), one sequence of 8192 tokens.
DIM, KV_DIM, FFN, VOCAB, LAYERS = 4096, 1024, 14336, 128256, 32


def flops(ac, tokens):
    """Hardware FLOPs of the step's GEMMs and of its attention (FlashAttention's convention: causal
    forward 2·T²·d per layer, backward 2.5x), counted from the model's shapes: each linear layer
    2·T·in·out forward and twice that backward; under per-op SAC the block's second, fourth and
    sixth mm (wk, wo, w3) run again in the backward; the head's three GEMMs."""
    layer = DIM * DIM + 2 * DIM * KV_DIM + DIM * DIM + 3 * DIM * FFN
    recomputed = DIM * KV_DIM + DIM * DIM + DIM * FFN if ac == "op_sac" else 0
    gemm = LAYERS * 2 * tokens * (3 * layer + recomputed) + 3 * 2 * tokens * DIM * VOCAB
    attention = LAYERS * 2 * tokens * tokens * DIM * 3.5
    return gemm, attention


def predict(shardsim, chip, compiled, ac):
    sets = {"cluster.chip": chip, "cluster.devices": "1", "cluster.fabric.gpus_per_node": "1",
            "plan.dp": "1", "plan.global_batch": "1", "plan.compile": "true" if compiled else "false",
            "plan.recompute": ac}
    cmd = [shardsim, "simulate", SCENARIO, "--json", "--no-timing"]
    for k, v in sets.items():
        cmd += ["--set", f"{k}={v}"]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    cats = {c["category"]: c["s"] for c in out["critical_path"]["by_category_s"]}
    step = out["step_time_s"] - cats.get("compute: optimizer", 0.0)
    gemm = cats.get("compute: matmul", 0.0)
    attention = cats.get("compute: attention", 0.0)
    mem = out["memory"]["components"]
    transient = sum(mem[k] for k in ("activations_bytes", "logits_bytes", "working_set_bytes")) / 2**30
    return step, {"gemm": gemm, "attention": attention, "rest": step - gemm - attention}, transient, \
        mem["weights_bytes"] / 2**30


def measured_parts(run):
    c = run["profiled_kernel_s_by_category"]
    gemm = c.get("gemm", 0.0)
    attention = c.get("attention forward", 0.0) + c.get("attention backward", 0.0)
    return {"gemm": gemm, "attention": attention, "rest": run["profiled_kernel_s_total"] - gemm - attention}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shardsim")
    ap.add_argument("measured", nargs="*")
    ap.add_argument("--max-error", type=float)
    ap.add_argument("--max-memory-error", type=float)
    a = ap.parse_args()
    files = a.measured or sorted(glob.glob(os.path.join(ROOT, "bench/torchtitan_step-*.json")))
    worst = worst_mem = 0.0
    checked = 0
    print(f"{'device':24} {'config':16} {'measured_s':>10} {'predicted_s':>11} {'error':>7}   "
          "gemm / attention / rest: measured -> predicted (s)")
    for f in files:
        d = json.load(open(f))
        chip = CHIPS[d["device"]]
        for r in d["runs"]:
            if "error" in r:
                continue
            config = ("compile" if r["compile"] else "eager") + ":" + r["ac"]
            pred, parts, transient, weights = predict(a.shardsim, chip, r["compile"], r["ac"])
            meas = r["median_step_s"]
            err = (pred - meas) / meas
            worst = max(worst, abs(err))
            m = measured_parts(r)
            detail = " / ".join(f"{m[k]:.3f} -> {parts[k]:.3f}" for k in ("gemm", "attention", "rest"))
            print(f"{d['device']:24} {config:16} {meas:10.4f} {pred:11.4f} {100 * err:+6.1f}%   {detail}")
            gemm_f, attn_f = flops(r["ac"], r["seq"] * r["batch"])
            print(f"{'':24} {'':16} kernels {r['profiled_kernel_s_total']:.4f} s of the profiled step; "
                  f"rates inside the step, measured -> predicted (TFLOP/s): GEMMs "
                  f"{gemm_f / m['gemm'] / 1e12:.0f} -> {gemm_f / parts['gemm'] / 1e12:.0f}, attention forward + backward "
                  f"{attn_f / m['attention'] / 1e12:.0f} -> {attn_f / parts['attention'] / 1e12:.0f}")
            checked += 1
            # Memory: the run's peak less its bf16 weights against the predicted activations, logits
            # and working set (the simulator's peak is in the loss's backward, before any layer's
            # gradient exists).
            meas_t = r["peak_allocated_GiB"] - weights
            merr = (transient - meas_t) / meas_t
            worst_mem = max(worst_mem, abs(merr))
            print(f"{'':24} {'':16} {meas_t:8.2f} GiB {transient:7.2f} GiB {100 * merr:+6.1f}%   "
                  "peak less weights, measured -> activations + logits + working set, predicted")
    if checked == 0:
        print("FAIL: no measured configuration to check", file=sys.stderr)
        return 1
    if a.max_error is not None and worst > a.max_error:
        print(f"FAIL: largest |error| {100 * worst:.1f}% exceeds {100 * a.max_error:.1f}%", file=sys.stderr)
        return 1
    if a.max_memory_error is not None and worst_mem > a.max_memory_error:
        print(f"FAIL: largest memory |error| {100 * worst_mem:.1f}% exceeds {100 * a.max_memory_error:.1f}%",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
