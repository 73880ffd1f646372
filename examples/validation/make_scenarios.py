#!/usr/bin/env python3
"""Writes one scenario per row of shared/reference/published_runs.md.

Every row uses the same chip and fabric defaults (the a100-sxm-80g preset and
the dgx-a100-superpod fabric); only what the papers state about each run
changes: model shape, parallelism, batch, recomputation, and the software of
the time (Megatron-LM 2021/2022: no fused attention, gradient all-reduce
after the backward pass rather than overlapped with it, blocking pipeline
send/receive (batch_isend_irecv, wait, torch.cuda.synchronize()) with the
scatter/gather of boundary activations over tensor-parallel ranks
(Narayanan et al. 2021, section 4.1); DeepSpeed's ZeRO-3 of
2021: parameters gathered and gradients reduced in its default buckets).

Megatron Table 1's microbatch sizes, interleaving and data-parallel
implementation are not in the paper's table but in the scripts published
with it (Megatron-LM, examples/sc21/run_table_1.sh and CONFIG.sh): fp16 with
loss scaling; --DDP-impl torch (PyTorch DDP: 25 MiB buckets all-reduced in
fp16 during the last microbatch's backward) for the rows without a pipeline,
--DDP-impl local (one all-reduce of the fp16 gradients after the backward)
for the others; --num-layers-per-virtual-pipeline-stage gives the
interleaving. Table 2's PTD-P rows take the interleaving of the same
model's interleaved runs (examples/sc21/run_figure_12.sh: 2 layers per
virtual stage with tp 8, pp 12).

The four Table 1 rows without a pipeline carry "fitted": true: the
megatron-2021 stack's memory_kernel_efficiency is fitted on them
(fit_megatron2021.py). Every row of these tables is in-sample: the project
was developed against them.

Choices left open are made by one rule for all rows and written into each
scenario's "assumptions":
  - Korthikanti Table 5: v = 3 for 175B and 530B (the reference's reading),
    v = 1 for 1T; these reproduce the paper's per-GPU activation figures.
Run it again after editing; it overwrites the *.json files here.
"""
import json
import pathlib

HERE = pathlib.Path(__file__).parent
MEGATRON = "Narayanan et al., SC'21 (arXiv 2104.04473)"
KORTHI = "Korthikanti et al. (arXiv 2205.05198), Table 5"
# The stack: "framework": "megatron-2021" selects Megatron-LM of 2021-2022
# (shardsim workloads/src/framework.cc): unfused attention, pipeline
# communication that blocks the compute stream and scatters boundary
# activations over the tensor-parallel ranks (p2p_communication.py,
# scatter_gather_tensors_in_pipeline), the tensor-parallel all-reduce of a
# column-parallel layer's input gradient after its weight gradient, no
# gradient-accumulation fusion (a hook added each fresh weight gradient
# into the buffer), and its fitted memory-kernel efficiency. The async
# all-reduce and the accumulation fusion came together late in 2021
# (LinearWithGradAccumulationAndAsyncAllreduce): Korthikanti et al.'s runs
# have both, so their scenarios turn them back on.
MEGATRON_2021 = {"framework": "megatron-2021"}
KORTHIKANTI_2022 = {"framework": "megatron-2021", "tp_grad_overlap": True, "grad_accumulation_fusion": True}


def gpt(name, layers, hidden, heads):
    return {"name": name, "layers": layers, "hidden": hidden, "ffn_hidden": 4 * hidden, "heads": heads,
            "vocab": 51200, "mlp": "gelu", "norm": "layernorm", "position": "learned", "tied_embeddings": True,
            "dropout": True}


def cluster(gpus):
    return {"chip": "a100-sxm-80g", "devices": gpus,
            "fabric": {"kind": "nvswitch_fat_tree", "gpus_per_node": 8, "nic_GBps_per_gpu": 25,
                       "rail_optimized": True, "nics_per_leaf": 20, "tiers": 2}}


def write(name, scenario):
    (HERE / f"{name}.json").write_text(json.dumps(scenario, indent=2) + "\n")


# Megatron-LM Table 1: weak scaling, full recomputation; microbatch, layers
# per virtual stage (0: not interleaved) and DDP implementation from
# examples/sc21/run_table_1.sh.
TABLE1 = [  # params, heads, hidden, layers, tp, pp, gpus, batch, tflops, mb, layers per virtual stage, ddp
    ("1.7", 24, 2304, 24, 1, 1, 32, 512, 137, 16, 0, "torch"),
    ("3.6", 32, 3072, 30, 2, 1, 64, 512, 138, 16, 0, "torch"),
    ("7.5", 32, 4096, 36, 4, 1, 128, 512, 142, 16, 0, "torch"),
    ("18.4", 48, 6144, 40, 8, 1, 256, 1024, 135, 8, 0, "torch"),
    ("39.1", 64, 8192, 48, 8, 2, 512, 1536, 138, 4, 0, "local"),
    ("76.1", 80, 10240, 60, 8, 4, 1024, 1792, 140, 2, 5, "local"),
    ("145.6", 96, 12288, 80, 8, 8, 1536, 2304, 148, 2, 5, "local"),
    ("310.1", 128, 16384, 96, 8, 16, 1920, 2160, 155, 1, 3, "local"),
    ("529.6", 128, 20480, 105, 8, 35, 2520, 2520, 163, 1, 1, "local"),
    ("1008.0", 160, 25600, 128, 8, 64, 3072, 3072, 163, 1, 0, "local"),
]
# PyTorch DDP's default bucket (bucket_cap_mb = 25), all-reduced as it fills;
# Megatron's local DDP: the whole gradient buffer after the backward.
DDP = {"torch": {"grad_bucket_bytes": 25 * 2**20},
       "local": {"grad_bucket_bytes": 10**15, "overlap_grad_reduce": False}}
for params, heads, hidden, layers, tp, pp, gpus, batch, tflops, mb, per_virtual, ddp in TABLE1:
    v = layers // pp // per_virtual if per_virtual else 1
    plan = {"dp": gpus // (tp * pp), "tp": tp, "pp": pp, "microbatch_size": mb, "global_batch": batch,
            "seq_len": 2048, "recompute": "full", **DDP[ddp], "grad_reduce_dtype": "fp16", **MEGATRON_2021}
    if pp > 1 and v > 1:
        plan.update({"schedule": "interleaved", "virtual_stages": v})
    write(f"megatron-t1-gpt-{params}b", {
        "description": f"{MEGATRON}, Table 1: GPT {params}B on {gpus} A100s.",
        "model": gpt(f"gpt-{params}b", layers, hidden, heads), "cluster": cluster(gpus), "plan": plan,
        "published": {"megatron_tflops_per_gpu": tflops, "source": f"{MEGATRON}, Table 1",
                      "assumptions": f"from examples/sc21/run_table_1.sh: microbatch {mb}; virtual_stages {v}; "
                                     f"DDP {ddp} ({'overlapped 25 MiB buckets' if ddp == 'torch' else 'all-reduce after the backward'}), fp16 gradients",
                      "fitted": pp == 1}})

# Megatron-LM Table 2: GPT-3 175B, PTD-P and ZeRO-3.
for gpus, tflops in [(384, 153), (768, 149), (1536, 141)]:
    write(f"megatron-t2-ptdp-{gpus}", {
        "description": f"{MEGATRON}, Table 2: GPT-3 175B with PTD-P (tp 8, pp 12) on {gpus} A100s.",
        "model": gpt("gpt3-175b", 96, 12288, 96), "cluster": cluster(gpus),
        "plan": {"dp": gpus // 96, "tp": 8, "pp": 12, "microbatch_size": 1, "global_batch": 1536, "seq_len": 2048,
                 "recompute": "full", **DDP["local"], "grad_reduce_dtype": "fp16", "schedule": "interleaved",
                 "virtual_stages": 4, **MEGATRON_2021},
        "published": {"megatron_tflops_per_gpu": tflops, "source": f"{MEGATRON}, Table 2",
                      "assumptions": "virtual_stages 4 (2 layers per virtual stage, as in examples/sc21/"
                                     "run_figure_12.sh for this model); DDP local: fp16 gradients all-reduced "
                                     "after the backward"}})
for gpus, mb, tflops in [(384, 4, 144), (768, 2, 88), (1536, 1, 44)]:
    write(f"megatron-t2-zero3-{gpus}", {
        "description": f"{MEGATRON}, Table 2: GPT-3 175B with ZeRO-3 and no model parallelism on {gpus} A100s.",
        "model": gpt("gpt3-175b", 96, 12288, 96), "cluster": cluster(gpus),
        "plan": {"framework": "deepspeed", "dp": gpus, "zero": 3, "microbatch_size": mb, "global_batch": 1536,
                 "seq_len": 2048, "recompute": "full", "fsdp_bucket_params": 50_000_000,
                 "grad_bucket_bytes": 1_000_000_000, "grad_reduce_dtype": "fp16"},
        "published": {"megatron_tflops_per_gpu": tflops, "source": f"{MEGATRON}, Table 2",
                      "assumptions": "full recomputation, as in the rest of the paper; DeepSpeed ZeRO-3 "
                                     "defaults of the time: prefetch buckets of 5e7 parameters, reduce "
                                     "buckets of 5e8 parameters (1 GB of fp16 gradients); the run trained "
                                     "in fp16, and ZeRO-3 reduce-scatters gradients in the parameters' "
                                     "dtype unless communication_data_type says otherwise (an earlier "
                                     "round reduced them in fp32, a choice kept because it matched)"}})

# Korthikanti et al. Table 5: iteration time and activation memory.
TABLE5 = [  # name, heads, hidden, layers, tp, pp, gpus, batch, mb, full_s, sel_s, act_none, act_sel, params_opt, v
    ("22b", 64, 6144, 48, 8, 1, 8, 4, 4, 1.42, 1.10, 59.25, 9.56, 45.56, 1),
    ("175b", 96, 12288, 96, 8, 8, 64, 64, 1, 18.13, 13.75, 66.84, 12.35, 45.56, 3),
    ("530b", 128, 20480, 105, 8, 35, 280, 280, 1, 49.05, 37.83, 114.02, 23.08, 31.64, 3),
    ("1t", 160, 25600, 128, 8, 64, 512, 512, 1, 94.42, 71.49, 131.25, 26.56, 32.96, 1),
]
for name, heads, hidden, layers, tp, pp, gpus, batch, mb, full_s, sel_s, act_none, act_sel, params_opt, v in TABLE5:
    base = {"dp": 1, "tp": tp, "pp": pp, "microbatch_size": mb, "global_batch": batch, "seq_len": 2048,
            **KORTHIKANTI_2022}
    if pp > 1 and v > 1:
        base.update({"schedule": "interleaved", "virtual_stages": v})
    model = gpt(f"gpt-{name}", layers, hidden, heads)
    assumptions = f"virtual_stages {v}"
    write(f"korthikanti-{name}-full", {
        "description": f"{KORTHI}: GPT {name} with full recomputation.",
        "model": model, "cluster": cluster(gpus), "plan": dict(base, recompute="full"),
        "published": {"step_time_s": full_s, "weights_and_optimizer_GiB": params_opt, "source": KORTHI,
                      "assumptions": assumptions}})
    write(f"korthikanti-{name}-sp-selective", {
        "description": f"{KORTHI}: GPT {name} with sequence parallelism and selective recomputation.",
        "model": model, "cluster": cluster(gpus),
        "plan": dict(base, recompute="selective", sequence_parallel=True),
        "published": {"step_time_s": sel_s, "activations_GiB": act_sel, "source": KORTHI,
                      "assumptions": assumptions}})
    write(f"korthikanti-{name}-no-recompute", {
        "description": f"{KORTHI}: GPT {name} without recomputation (activation memory only; the paper gives "
                       "no time for it).",
        "model": model, "cluster": cluster(gpus), "plan": dict(base, recompute="none"),
        "published": {"activations_GiB": act_none, "source": KORTHI, "assumptions": assumptions}})
