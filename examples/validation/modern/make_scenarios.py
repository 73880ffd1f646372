#!/usr/bin/env python3
"""Writes one shardsim scenario per expressible row of the modern validation set.

Input: shared/reference/modern_runs.json (367 measured training runs; --runs overrides the path) and
split.json beside this script (the committed development / held-out split). Output, beside this script:
scenarios/<row id>-<model>-<chip>x<count>-<precision>.json for every row that can be expressed, and
manifest.json listing every row (sorted by id) with its scenario or the reason it is skipped. The script is
deterministic: the same inputs give the same bytes (keys keep the insertion order written here).

Where the knob values come from
-------------------------------
Only the research notes (notes/megatron.md, notes/pytorch.md, notes/jax.md and their .json twins) supply knob
values: a value is the recipe's (launch script, YAML, benchmark text) or, where the recipe is silent, the
framework default the notes give for that version. Every value is written next to its citation in the
per-family tables of families/ (owner/repo@commit:path:line, as the notes cite it) with its kind:
  recipe      set by the recipe / script / table of that run,
  default     not set by the recipe; the framework's default at that version (cited),
  not stated  left open by the source and by the notes; the value written is the rule stated beside it.
No value was chosen because it would match a published number; no prediction of these rows was looked at.
Each scenario's published.assumptions lists every non-recipe value it uses and the conflicts the notes flag.

Rules applied to every row
--------------------------
* Parallel sizes: tp, pp, cp, ep, vp, batch and sequence length come from the row unless the notes say the run
  differed (then the notes win and the row's value is recorded in assumptions); dp = devices/(tp*pp*cp).
* Schedule: vp > 1 -> "interleaved" with virtual_stages = vp; otherwise "1f1b" (DeepSpeed's and Megatron's
  non-interleaved schedule is 1F1B). layers_per_stage is written only where the split is uneven or set by
  the recipe (embedding/loss accounting, torchtitan's and AutoModel's auto-split, DeepSpeed's partition).
* Data parallelism: Apex DistributedFusedAdam, Megatron-Core DistributedOptimizer and DeepSpeed's BF16
  optimizer shard the optimizer state -> zero 1. FSDP (torchtitan FSDP2, AutoModel FSDP2, MaxText/Paxml
  'fsdp' sharding) -> zero 3, with fsdp_shard_size when only part of dp shards (MaxText/Paxml FSDP inside a
  node or a DCN group, DP across). Gradient buckets: Megatron-Core bucket_size is in parameters and is
  multiplied by the bytes of the gradient dtype (2 for bf16 reduction, 4 for fp32); Apex bucket_cap_mb is
  multiplied by 1024*1024. NeMo-1.0 with overlap_param_gather_with_optimizer_step disables bucketing (one
  bucket per model chunk): written as grad_bucket_bytes = 2**40, larger than any chunk.
* TP overlap: tp_comm_overlap follows the recipe; tp_comm_overlap_sms is the num_sm of the two
  reduce-scatter-side layers (proj_fprop, fc2_fprop) of the run's userbuffer table. shardsim has one value and
  the tables give two, so the script writes their arithmetic mean rounded half up (a choice the sources leave
  open); a ring-exchange layer counts with its num_sm (1); without a table TE's initialize_ub default (16).
  torchtitan's async TP (inductor micro-pipelined TP) is written as tp_comm_overlap = true, sms unset.
* Context parallelism: Megatron/NeMo -> cp_comm "p2p" (the only/ default ring); torchtitan -> "all_gather"
  (default rotate method at 9dec370).
* Precision: FP8 rows of Megatron/NeMo and Paxml (Transformer Engine) and MaxText (flax Fp8DotGeneralOp) use
  delayed scaling -> fp8_recipe "delayed"; torchao float8 -> "tensorwise" / "rowwise"; MX -> "mxfp8".
  fp8_param_gather follows fp8_params / fp8_param_gather / enable_fsdp_float8_all_gather.
* MoE: capacity_factor 1.0 for dropless or balanced-gate runs and for token dropping at capacity 1.0;
  MaxText dropping at 1.25 -> 1.25. expert_tp: Megatron's expert_tensor_parallel_size (unset -> tp).
  moe_grouped_gemm follows the recipe; MaxText's dense_matmul path (one einsum over all experts) -> true.
* Attention: fused (flash / cuDNN / TE) everywhere except the stacks of 2022-2023 without a flash kernel
  (BLOOM's Megatron-DeepSpeed, MaxText's 2023 dot-product attention) -> "unfused".
* fused_qkv / fused_gate_up: framework defaults, except where the notes say the model fuses differently
  (MaxText gpt3-175b fused_qkv: True; Paxml's Transformer Engine layers compute one combined QKV GEMM).
* Recompute: Megatron 'selective' -> "selective"; full / block -> "full" (+ recompute_layers); MaxText
  'minimal_flash' -> "save_dots"; 'save_qkv_proj' -> "save_qkv_proj"; MaxText 'custom' -> "custom" with the
  tensors set to 'device' in recompute_keep and to 'offload' in recompute_offload (decoder_layer_input is
  'device' by default); Paxml SAVE_QKV_OUT_PROJ -> custom keep [qkv_proj, out_proj]; SAVE_DOT_ONLY -> custom
  keep [qkv_proj, out_proj, mlpwi, mlpwo]; torchtitan per-op SAC -> "op_sac"; 'selective layer' N -> "full"
  with recompute_every N.
* Models: inline for every row, vocabulary as the run's tokenizer/config had it before framework padding
  (shardsim pads to 128*tp itself). Proxy models use the proxy's layer count. DeepSeek-V3 and Kimi K2 run
  multi-head latent attention (model.mla, MLA_V3); attention sinks, soft-capping, parallel attention/MLP
  blocks, relative position biases, iota embeddings, vocab tiling and fusion choices beyond torch.compile
  on/off are not expressible and are named in the model source or the assumptions.
* Chips and fabrics: see HARDWARE and TPU_SLICES; every NIC figure is per GPU, one way (400 Gb/s = 50 GB/s);
  8 GPUs per node, or all of them for the 2- and 4-GPU rows; GB200 rows: NVLink domains of 4 x NeMo's Slurm
  --segment (64 GPUs for the DGXC runs), the tt_nvfp4 rows one 4-GPU domain on a gb200 whose memory is the
  capacity their own percentages imply (unnamed Blackwell SKU: GB200 by that capacity). torchtitan's H100 rows (Grand Teton, 96 GB /
  94-95 GB HBM2e) use h100-sxm-96g; the torchao float8 H100 (variant not stated) uses h100-sxm. The Grand Teton
  clusters ran at a 500 W power limit and carry compute_clock_scale, a parameter of that hardware fitted by
  fit_power_cap.py on the development rows without CP (published.fitted; POWER_CAPPED in families/common.py).
* Mesh order: shardsim's default (tp innermost, then cp, pp, dp) except torchtitan rows with PP, whose device
  mesh [pp, dp_shard, cp, tp] puts pp outermost: ["tp", "cp", "dp", "pp"].
* Skipped (manifest "skipped"): rows that span several TPU v4 slices (no DCN bandwidth per chip published for
  v4), and any row whose architecture is unknown or whose configuration fails a shardsim check it cannot
  express. Where a recipe's value is not expressible but a published table gives an expressible one, the
  table's is used and the assumptions say so (Grok-1 on GB200: launch.sh ETP 8, README ETP 4).

Families (one builder each; the tables hold the knobs and their citations; the modules of families/: 1-2
nemo_tables.py, 3-4 dgxc_nemo.py, 5-6 mcore_moe_bloom.py, 7 jax_stacks.py, 8 pytorch_stacks.py, and what they
share in common.py)
--------------------------------------------------------------------------
 1 NeMo 24.07 performance summary, r0001-r0012       NEMO2407_*           (launcher 24.07 defaults)
 2 NeMo long-sequence tables, r0013-r0029            LONGSEQ_*
 3 DGXC NeMo-1.0 YAML path (v24.11.1, v25.02)        NEMO1_LLAMA, build_dgxc_nemo1_* (GPT-3, Nemotron-4, Grok-1)
 4 DGXC NeMo 2.0 path (v25.04, v25.05.01, dfc8039)   NEMO2_LLAMA, build_dgxc_nemo2_grok
 5 Megatron-LM MoE README Mixtral, r0545-r0546       MLM_README
 6 BLOOM-176B, r0575                                 build_bloom
 7 JAX: DGXC MaxText / Paxml, A3, TPU v4, TPU v6e    MAXTEXT_DGXC, build_dgxc_paxml, V4_2023, V6E
 8 PyTorch: torchtitan, torchao, AutoModel           TT_ROWS, TT_CODE, TT_FAMILY_NOTES, AM_ROWS

Choices the sources leave open, and the rule taken
--------------------------------------------------
* tp_comm_overlap_sms: mean of proj_fprop / fc2_fprop num_sm (above). Async TP: shardsim's default.
* NeMo 24.07 table: every knob but TP/PP/CP/VP/MBS/GBS is the NeMo-Framework-Launcher 24.07 default config of
  the model (the notes' 'default'), although the table run overrode at least fp8.
* Long-sequence tables (nothing but TP/PP/CP/DP/GBS stated): microbatch 1; vp 1; recompute none; sequence
  parallel when TP>1 (the NeMo recipe convention the notes name); tp_comm_overlap off (MCore default); DP:
  H100 (NeMo 24.03, NeMo-1.0 era) -> the launcher's llama2_7b defaults (Apex distributed optimizer, overlap on,
  125 MiB buckets, fp32 reduction); B200 (NeMo 25.04, NeMo 2.0) -> the NeMo 2.0 recipe defaults (MCore
  distributed optimizer, comm-overlap callback, 128Mi-parameter buckets, fp32 reduction of bf16_mixed);
  fp8_param_gather off. FLOP formula for the TFLOP/s -> step time conversion: NeMo's llama2 (H100; the table
  names none, NeMo 1.x had none: the notes' only candidate) and llama3 (B200; the 25.04 default) formulas.
* Nemotron-3 8B/22B vocabulary (tokenizer not stated): 256000, the only value consistent with the table's own
  accounting (notes/megatron.md 6.9).
* DGXC Grok-1 v24.11.1 overlap_param_gather: the YAML's overlap_param_sync: true is taken (whether the nemo:dev
  build read it is unknown).
* Megatron-LM MoE README (no run configuration beyond the mapping table): distributed optimizer, overlapped
  grad-reduce / param-gather and grouped GEMM as the README's own example script and recommendations.
* NICs not stated: DGX-H100 / AutoModel -> the DGX H100 reference 8x400 Gb/s; DGX-B200 -> 400 Gb/s per GPU;
  A100 (torchtitan, BLOOM on Jean Zay) -> 200 Gb/s per GPU; torchtitan Aug-2024 405B -> Grand Teton 400 Gb/s.
* TPU v4-384 as a 4x4x12 torus with wraparound on all axes (three cubes; the notes say 'presumably').
* MaxText 2023 (v4 22B/52B): the parallel attention+MLP block runs sequentially and the T5 relative position
  bias is written as "alibi" (a bias on the scores, no rotary); dropout and biases: none recorded, none set.
  MaxText / Paxml dropout where the notes record none: off.
* torchtitan CP rows: FSDP shards over dp_shard*cp in torchtitan, over dp only in shardsim (left as is, said).
  Dec-2024 4D rows: global batch not stated -> dp_shard x local batch 8.
* AutoModel: where the YAML changed after the table, the code and YAML in force at the table date are used
  (VP 8/4 for DeepSeek-V3 256 GPUs / Kimi, full AC for GPT-OSS-20B); r0549 takes its YAML's VP 4; GPT-OSS EP
  from the YAML (the table shows '-'); Adam moments in the bf16 parameter dtype; Qwen3-30B-A3B QK-norm as the
  Qwen3 family; GPT-OSS experts' clamped quick-GELU-gated activation as "geglu".
* MaxText Mixtral-8x22B (FSDP 64 x EP 4 on a hybrid-ring mesh): dp 256, ep 4, zero 3; dense weights sharded
  over all 256 chips; the ring placement is not expressible.

Published metrics
-----------------
step_time_s where the source measured a step time (DGXC, AutoModel, TPU recipes, BLOOM);
tokens_per_s_per_device where it measured tokens/s per GPU and no step time (torchtitan, torchao, NeMo 24.07
table); peak_memory_GiB where it measured peak memory (torchtitan reserved GiB; the torchao 'GB' columns are
GiB). Rows that publish only TFLOP/s (nemo_longseq, maxtext_a3, maxtext_v4, mlm_moe_readme) get step_time_s
derived from the published TFLOP/s with the publisher's own FLOP formula (families/common.py); their assumptions
say so. The 'derived' section of modern_runs.json is never used.

Usage: python3 make_scenarios.py [--runs PATH/modern_runs.json]
"""
import argparse
import json
import pathlib
import re
import sys

sys.dont_write_bytecode = True  # importing families/ leaves no __pycache__ in the source tree

from families.common import CHIP_SLUG, DEFAULT_RUNS, FRAMEWORK, HERE, SKIPPED_CHIP, SPLIT, slice_chips, slug
from families.nemo_tables import build_longseq, build_nemo2407
from families.dgxc_nemo import (
    DGXC_COMMIT, build_dgxc_nemo1_gpt3, build_dgxc_nemo1_grok, build_dgxc_nemo1_llama, build_dgxc_nemo1_nemotron,
    build_dgxc_nemo2_grok, build_dgxc_nemo2_llama, build_dgxc_nemo2_nemotron, dg)
from families.mcore_moe_bloom import build_bloom, build_mlm_mixtral
from families.jax_stacks import build_dgxc_maxtext, build_dgxc_paxml, build_maxtext_a3, build_maxtext_v4, build_v6e
from families.pytorch_stacks import build_automodel, build_torchtitan


def skip_reason(row):
    chip = row["hardware"]["chip"]
    if chip == "TPU v4" and row["hardware"]["count"] > slice_chips(row):
        return "TPU v4 multislice: no DCN bandwidth per chip is published for v4 (notes/jax.md section 2)"
    return None


def builder(row):
    src, model = row["source"], row["model"]
    if src == "nemo_perf_2407":
        return build_nemo2407
    if src == "nemo_longseq":
        return build_longseq
    if src == "dgxc":
        if row["framework"] == "MaxText (JAX)":
            return build_dgxc_maxtext
        if row["framework"] == "Paxml (JAX)":
            return build_dgxc_paxml
        commit = DGXC_COMMIT[row["release"]]
        if model == "grok1_314b":
            return build_dgxc_nemo1_grok if commit in ("35a9aec", "8f5cbb3") else build_dgxc_nemo2_grok
        if model == "gpt3_175b":
            return build_dgxc_nemo1_gpt3
        if model.startswith("nemotron4"):
            return build_dgxc_nemo2_nemotron if commit == "68eaf7e" else build_dgxc_nemo1_nemotron
        return build_dgxc_nemo1_llama if commit in ("35a9aec", "8f5cbb3") else build_dgxc_nemo2_llama
    return {"mlm_moe_readme": build_mlm_mixtral, "bloom_chronicles": build_bloom, "maxtext_a3": build_maxtext_a3,
            "maxtext_v4": build_maxtext_v4, "tpu_recipes_v6e": build_v6e, "tt_bench_202412": build_torchtitan,
            "tt_h200_trainy": build_torchtitan, "tt_perf_2024": build_torchtitan, "torchao_float8": build_torchtitan,
            "torchao_mx": build_torchtitan, "tt_nvfp4": build_torchtitan, "automodel_perf": build_automodel}[src]


def precision_slug(row, plan):
    if plan.get("matmul_dtype") == "fp4":
        return "nvfp4"
    if plan.get("matmul_dtype") != "fp8":
        return "bf16"
    recipe = plan.get("fp8_recipe", "delayed")
    if recipe == "delayed":
        return "fp8"
    if recipe == "mxfp8":
        return "mxfp8-rceil" if "rceil" in row["precision"] else "mxfp8"
    return f"fp8-{recipe}"


# The fused attention kernel of each Megatron-Core family, from the environment
# its recipe sets (notes/megatron.md, "attention_backend" of each family):
# NVTE_FUSED_ATTN=0 leaves the flash-attn package (FlashAttention-2), and with
# cuDNN's FusedAttention allowed Transformer Engine prefers it on sm90
# (TransformerEngine@v1.11:transformer_engine/pytorch/attention.py:818).
FLASH2_FAMILIES = {
    ("nemo_perf_2407", None): "NeMo-Framework-Launcher@24.07 env NVTE_FUSED_ATTN=0 (launcher conditional_cfgs)",
    ("dgxc v24.11.1", "gpt3_175b"): "NVIDIA/dgxc-benchmarking@35a9aec:nemo_megatron/launch.sh:55 (NVTE_FUSED_ATTN=0)",
    ("dgxc v24.11.1", "grok1_314b"): "NVIDIA/dgxc-benchmarking@35a9aec grok1 recipe: NVTE_FUSED_ATTN=0, "
                                     "use_flash_attention=true",
    ("dgxc v25.02", "grok1_314b"): "NVIDIA/dgxc-benchmarking@8f5cbb3 grok1 recipe: NVTE_FUSED_ATTN=0, "
                                   "use_flash_attention=true",
    ("dgxc v24.11.1", "nemotron4_340b"): "NVIDIA/dgxc-benchmarking@35a9aec nemotron recipe (NVTE_FUSED_ATTN=0)",
    ("nemo_longseq", "NeMo 24.03.01"): "the table names the container (NeMo 24.03.01), not how it was launched: its "
                                       "launcher's default environment, NVIDIA/NeMo-Framework-Launcher@24.03.01 "
                                       "(5c7e280a4b):launcher_scripts/conf/config.yaml:68, NVTE_FUSED_ATTN: 0",
}

# NVLink SHARP. Every launcher environment of the NeMo and DGX Cloud Megatron-Core rows sets NCCL_NVLS_ENABLE=0
# (NeMo's own comment: "Disable NVLink SHARP to save memory"), so NCCL runs its collectives inside an NVLink domain
# as rings and trees, not NVLS: fabric.nvls = false. The MCore MoE README's and AutoModel's runs set nothing
# (NCCL's default, NVLS on where the switches have it).
NEMO2_EXECUTOR = "NVIDIA/NeMo@{}:scripts/performance/utils.py:75 (slurm_executor env NCCL_NVLS_ENABLE 0)"
NVLS_OFF_NEMO = {
    ("nemo_perf_2407", "NeMo 24.07"): "NVIDIA/NeMo-Framework-Launcher@24.07 (8325688d83):launcher_scripts/conf/"
                                      "config.yaml:69 (env_vars NCCL_NVLS_ENABLE: 0)",
    ("nemo_longseq", "NeMo 24.03.01"): "the container's launcher default (how the table was launched is not stated): "
                                       "NVIDIA/NeMo-Framework-Launcher@24.03.01 (5c7e280a4b):launcher_scripts/conf/"
                                       "config.yaml:65 (env_vars NCCL_NVLS_ENABLE: 0)",
    ("nemo_longseq", "NeMo 25.04.rc2"): "NeMo 2's performance scripts' default (how the table was launched is not "
                                        "stated): " + NEMO2_EXECUTOR.format("7a8f1cc7bc"),
}
NVLS_OFF_DGXC = {  # (release, recipe folder) -> the line that exports NCCL_NVLS_ENABLE=0
    ("dgxc v24.11.1", "nemo_megatron"): dg("35a9aec", "nemo_megatron/launch.sh", 52),
    ("dgxc v24.11.1", "grok1"): dg("35a9aec", "grok1/configure.sh", 26),
    ("dgxc v24.11.1", "llama3.1"): dg("35a9aec", "llama3.1/configure.sh", 43),
    ("dgxc v24.11.1", "nemotron"): dg("35a9aec", "nemotron/configure.sh", 28),
    ("dgxc v25.02", "nemo_megatron"): dg("8f5cbb3", "nemo_megatron/configure.sh", 28),
    ("dgxc v25.02", "grok1"): dg("8f5cbb3", "grok1/configure.sh", 26),
    ("dgxc v25.02", "llama3.1"): dg("8f5cbb3", "llama3.1/configure.sh", 43),
    ("dgxc v25.02", "nemotron"): dg("8f5cbb3", "nemotron/configure.sh", 28),
    ("dgxc v25.04", "llama3.1"): dg("741c886", "llama3.1/llama31_utils.py", 65),
    ("dgxc v25.05", "*"): NEMO2_EXECUTOR.format("7a8f1cc7bc") + ", which dgxc-benchmarking@68eaf7e's launch.sh runs",
    ("dgxc v25.05.01", "*"): NEMO2_EXECUTOR.format("6f2c6fdaff") + ", which dgxc-benchmarking@60d6fd3's launch.sh runs "
                             "(NEMO_COMMIT of its setup.sh)",
    ("dgxc v25.05.02 (commit dfc8039, revised Grok1 H100)", "*"):
        NEMO2_EXECUTOR.format("6f2c6fdaff") + ", which dgxc-benchmarking@dfc8039's launch.sh runs (NEMO_COMMIT of its "
        "setup.sh)",
}
DGXC_RECIPE = {"gpt3_175b": "nemo_megatron", "grok1_314b": "grok1", "llama3_8b": "llama3.1", "llama3_70b": "llama3.1",
               "llama31_405b": "llama3.1", "nemotron4_15b": "nemotron", "nemotron4_340b": "nemotron"}


def megatron_nccl_env(row, sc):
    """fabric.nvls = false where the run's launcher environment disables NVLink SHARP, with the line that does."""
    if sc["plan"].get("framework") != "megatron-core":
        return
    if row["source"] == "dgxc":
        cite = (NVLS_OFF_DGXC.get((row["release"], DGXC_RECIPE.get(row["model"])))
                or NVLS_OFF_DGXC.get((row["release"], "*")))
    else:
        cite = NVLS_OFF_NEMO.get((row["source"], row["release"]))
    if cite is None:
        return
    sc["cluster"]["fabric"]["nvls"] = False
    sc["published"]["assumptions"] += " NVLink SHARP off (fabric nvls false): " + cite + "."


def megatron_attention_kernel(row, sc):
    """Sets plan.attention_kernel of a Megatron-Core row and says where it comes from."""
    if sc["plan"].get("framework") != "megatron-core":
        return
    key = ((row["source"], None) if row["source"] == "nemo_perf_2407" else
           (row["source"], row["release"]) if row["source"] == "nemo_longseq" else (row["release"], row["model"]))
    if key in FLASH2_FAMILIES:
        sc["plan"]["attention_kernel"] = "flash2"
        note = "attention kernel FlashAttention-2 (" + FLASH2_FAMILIES[key] + ")"
    else:
        sc["plan"]["attention_kernel"] = "cudnn"
        note = ("attention kernel cuDNN fused attention (NVTE_FUSED_ATTN=1 in the recipe's environment, or "
                "Transformer Engine's preference on sm90 where the source is silent; notes/megatron.md)")
    sc["published"]["assumptions"] += " " + note + "."


# The loss kernel of each Megatron-Core family (notes/megatron.md,
# cross_entropy_loss_fusion and cross_entropy_fusion_impl of each family):
# Transformer Engine's kernel where the recipe asks for it ("te"); otherwise
# Megatron's VocabParallelCrossEntropy, whose fused "native" form (NeMo 2.0's
# default, a torch.compile'd version of the same ops) keeps the same fp32
# softmax. Keys: the first and last row of each family.
LOSS_TE = [
    (("r0456", "r0485"), "NVIDIA/NeMo@7a8f1cc7bc (and b4148d2169, 6f2c6fdaff):scripts/performance/utils.py "
                         "(cross_entropy_fusion_impl 'te')"),
]


def megatron_loss_kernel(row, sc):
    """Sets plan.loss_kernel of a Megatron-Core row and says where it comes from."""
    if sc["plan"].get("framework") != "megatron-core":
        return
    kernel, cite = "megatron", ("Megatron-Core's VocabParallelCrossEntropy, fused or not: the recipe does not ask "
                                "for cross_entropy_fusion_impl 'te'")
    for (first, last), c in LOSS_TE:
        if first <= row["id"] <= last:
            kernel, cite = "te", c
    sc["plan"]["loss_kernel"] = kernel
    sc["published"]["assumptions"] += f" loss kernel {kernel} ({cite})."


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", default=DEFAULT_RUNS, help="path of shared/reference/modern_runs.json")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if a scenario or the manifest differs from what would be "
                         "written (e.g. a preset changed), 77 if the runs file is absent")
    args = ap.parse_args()
    runs = pathlib.Path(args.runs)
    if args.check and not runs.exists():
        print(f"{runs} not found: nothing to check")
        sys.exit(77)
    rows = json.loads(runs.read_text())["rows"]
    split = json.loads((HERE / "split.json").read_text())
    for side in ("development", "held_out"):
        for rid in split[side]:
            SPLIT[rid] = side
    out_dir = HERE / "scenarios"
    files = {}  # path -> text
    manifest = []
    for row in sorted(rows, key=lambda r: r["id"]):
        entry = {"id": row["id"], "split": SPLIT[row["id"]], "framework": FRAMEWORK[row["framework"]]}
        reason = skip_reason(row)
        if reason:
            entry["chip"] = SKIPPED_CHIP[row["hardware"]["chip"]]
            entry["skipped"] = reason
        else:
            sc = builder(row)(row)
            megatron_attention_kernel(row, sc)
            megatron_loss_kernel(row, sc)
            megatron_nccl_env(row, sc)
            entry["chip"] = sc["cluster"]["chip"]
            name = (f"{row['id']}-{slug(row['model'])}-{CHIP_SLUG[row['hardware']['chip']]}x"
                    f"{row['hardware']['count']}-{precision_slug(row, sc['plan'])}.json")
            assert re.fullmatch(r"[a-z0-9.-]+\.json", name), name
            files[out_dir / name] = json.dumps(sc, indent=2) + "\n"
            entry["scenario"] = f"scenarios/{name}"
        manifest.append(entry)
    doc = {"generated_by": "make_scenarios.py", "rows": manifest}
    files[HERE / "manifest.json"] = json.dumps(doc, indent=1) + "\n"
    written = sum(1 for e in manifest if "scenario" in e)
    if args.check:
        stale = sorted(str(path.relative_to(HERE)) for path, text in files.items()
                       if not path.exists() or path.read_text() != text)
        stale += sorted(str(path.relative_to(HERE)) for path in out_dir.glob("*.json") if path not in files)
        for path in stale:
            print(f"stale: {path} (run python3 {pathlib.Path(__file__).name} to regenerate)")
        print(f"{written} scenarios checked, {len(stale)} stale")
        sys.exit(1 if stale else 0)
    out_dir.mkdir(exist_ok=True)
    for old in out_dir.glob("*.json"):
        old.unlink()
    for path, text in files.items():
        path.write_text(text)
    print(f"{written} scenarios written, {len(manifest) - written} rows skipped")


if __name__ == "__main__":
    main()
