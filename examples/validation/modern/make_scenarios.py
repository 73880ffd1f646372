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
per-family tables below (owner/repo@commit:path:line, as the notes cite it) with its kind:
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
  fit_power_cap.py on the development rows without CP (published.fitted; POWER_CAPPED below).
* Mesh order: shardsim's default (tp innermost, then cp, pp, dp) except torchtitan rows with PP, whose device
  mesh [pp, dp_shard, cp, tp] puts pp outermost: ["tp", "cp", "dp", "pp"].
* Skipped (manifest "skipped"): rows that span several TPU v4 slices (no DCN bandwidth per chip published for
  v4), and any row whose architecture is unknown or whose configuration fails a shardsim check it cannot
  express. Where a recipe's value is not expressible but a published table gives an expressible one, the
  table's is used and the assumptions say so (Grok-1 on GB200: launch.sh ETP 8, README ETP 4).

Families (one builder each; the tables hold the knobs and their citations)
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
derived from the published TFLOP/s with the publisher's own FLOP formula (functions below); their assumptions
say so. The 'derived' section of modern_runs.json is never used.

Usage: python3 make_scenarios.py [--runs PATH/modern_runs.json]
"""
import argparse
import json
import math
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_RUNS = "/work/shared/reference/modern_runs.json"

MULTISLICE_SKIP = "multi-slice TPU (DCN between slices) not modelled yet"
NO_BUCKETING = 2 ** 40  # NeMo-1.0 overlap_param_gather_with_optimizer_step: one bucket per model chunk
MIB = 1024 * 1024


def K(value, cite, kind="recipe", note=""):
    """One knob of a family table: its value, its citation and its kind (recipe / default / not stated)."""
    return {"value": value, "cite": cite, "kind": kind, "note": note}


# ---------------------------------------------------------------------------------------------------------
# Publishers' FLOP formulas (used only to turn a published TFLOP/s into a step time for the rows that
# publish nothing else). Each returns FLOPs of one step (all devices) or TFLOP per device.
# ---------------------------------------------------------------------------------------------------------

def nemo_llama_flops(B, s, L, h, F, a, g, V):
    """NeMo flops_formulas llama2/llama3 (NVIDIA/NeMo@7a8f1cc7bc:nemo/utils/flops_formulas.py:88):
    B*s*L*h^2*(12 + 12*g/a + 18*F/h + 12*s/h + 6*V/(L*h)); non-causal attention, no recompute;
    V = 32000 (llama2) / 128256 (llama3). FLOPs of one step of global batch B."""
    return B * s * L * h * h * (12 + 12 * g / a + 18 * F / h + 12 * s / h + 6 * V / (L * h))


def megatron_lm_flops(B, s, L, h, F, a, g, kv_channels, V_padded, topk, swiglu, F_shared=0):
    """Megatron-LM num_floating_point_operations (NVIDIA/Megatron-LM@0b981f9c53:megatron/training/training.py:74,
    @c230e0d7c2:training.py:98): 12*B*s*L*h^2*[(1 + g/a + s/h)*(kv_channels*a/h) + (F/h)*topk*(1.5 if swiglu)
    + (F_shared/h)*(1.5 if swiglu) + V_padded/(2*L*h)]; non-causal, no recompute. The shared-expert term exists
    only at c230e0d7c2 (0 for Mixtral either way). Notes' check: Mixtral 8x7B GBS 256 -> 8.696e16."""
    gate = 1.5 if swiglu else 1.0
    return 12 * B * s * L * h * h * ((1 + g / a + s / h) * (kv_channels * a / h) + (F / h) * topk * gate
                                      + (F_shared / h) * gate + V_padded / (2 * L * h))


def maxtext_2023_tflop_per_device(N, L, B):
    """MaxText 2023 (AI-Hypercomputer/maxtext@e286533d8:MaxText/train.py:286; @281e04bf3:train.py:319):
    6*N_params*L*B / 1e12 per device and step (N with the tied embedding once; no attention, no remat)."""
    return 6 * N * L * B / 1e12


def maxtext_apr2024_tflop_per_device(N, L, B, H, n_layers, d):
    """MaxText Apr-2024 (AI-Hypercomputer/maxtext@d2aa7f25:MaxText/maxtext_utils.py:94-117):
    6*N*L*B + 12*H*n_layers*d*L^2*B/2 (causal attention, PaLM App. B), / 1e12 per device and step."""
    return (6 * N * L * B + 12 * H * n_layers * d * L * L * B / 2) / 1e12


# ---------------------------------------------------------------------------------------------------------
# Hardware: chip preset and fabric per platform, with the NIC's source.
# ---------------------------------------------------------------------------------------------------------

def gpu_fabric(nic_gbps, gpus_per_node=8):
    return {"kind": "nvswitch_fat_tree", "gpus_per_node": gpus_per_node, "nic_GBps_per_gpu": nic_gbps}


HARDWARE = {
    # name: chip preset, NIC GB/s per GPU (one way), statement of where the NIC comes from
    "dgx_h100": ("h100-sxm", 50, "DGX H100: InfiniBand 8x400 Gb/s per 8-GPU node = 50 GB/s per GPU "
                 "(NVIDIA/dgxc-benchmarking@68eaf7e:README.md:170; @35a9aec:README.md:36)"),
    "dgx_h100_nemo_table": ("h100-sxm", 50, "NIC not stated by the table (NVIDIA/NeMo@9c5c5e9709:docs/source/"
                            "performance/performance_summary.md:10, 'DGX-H100'); assumed the DGX H100 reference "
                            "8x400 Gb/s = 50 GB/s per GPU (NVIDIA/dgxc-benchmarking@68eaf7e:README.md:170)"),
    "dgx_b200_nemo_table": ("b200", 50, "NIC not stated ('DGX-B200', NVIDIA/NeMo@19fadb67b0:docs/source/"
                            "performance/performance_long_sequence.md:11); assumed 400 Gb/s per GPU (b200 preset)"),
    "mlm_h100": ("h100-sxm", 50, "8x H100 80GB per server, InfiniBand 8x400 Gbit/s "
                 "(NVIDIA/Megatron-LM@c230e0d7c2:megatron/core/transformer/moe/README.md:368)"),
    "jean_zay": ("a100-sxm-80g", 25, "Jean Zay gpu_p5, 8 A100 80GB per node; network not stated "
                 "(bigscience-workshop/bigscience@badbb5b:train/tr11-176B-ml/tr11-176B-ml.slurm:3); assumed "
                 "200 Gb/s HDR per GPU (25 GB/s, the a100-sxm-80g preset's NIC)"),
    "dgxc_h100_jax": ("h100-sxm", 50, "DGX H100 (EOS): InfiniBand compute 8x400 Gbit/s per node = 50 GB/s per "
                      "GPU (NVIDIA/dgxc-benchmarking@35a9aec:README.md:19-37)"),
    "a3_high": ("h100-sxm", 15.625, "A3 High: 1,000 Gbps per VM of 8 H100 = 125 Gb/s = 15.625 GB/s per GPU "
                "(cloud.google.com/compute/docs/gpus/gpu-network-bandwidth, as in notes/jax.md section 2); "
                "whether GPUDirect-TCPX was used is not stated"),
    "grand_teton": ("h100-sxm-96g", 50, "Grand Teton 8x H100 96GB HBM2e per host, 400 Gb/s RDMA per GPU "
                    "(pytorch/torchtitan@b5bcd76c66:benchmarks/llama3_h100_202412_torchtitan.md:11-15)"),
    "grand_teton_2024": ("h100-sxm-96g", 50, "'HBM2e based lower TDP SXM H100 (95GB)' "
                         "(pytorch/torchtitan@3faaa1a0d:docs/performance.md:1,57); NIC not stated, assumed the "
                         "Grand Teton 400 Gb/s per GPU of the Dec-2024 benchmark "
                         "(pytorch/torchtitan@b5bcd76c66:benchmarks/llama3_h100_202412_torchtitan.md:11-15)"),
    "trainy_h200": ("h200-sxm", 50, "8x H200 per host, 400 Gb/s CX-7 per GPU "
                    "(pytorch/torchtitan@b5bcd76c66:benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md:10-13)"),
    "a100_tt": ("a100-sxm-80g", 25, "64 A100 80GB, interconnect not stated "
                "(pytorch/torchtitan@3faaa1a0d:docs/performance.md:1,23); assumed 200 Gb/s per GPU "
                "(a100-sxm-80g preset)"),
    "torchao_h100": ("h100-sxm", 50, "single node of 8 H100, variant not stated "
                     "(pytorch/ao@8c81863ba:torchao/float8/README.md:211): the 80 GB SXM preset is used; the NIC "
                     "is unused on one node (preset value)"),
    "torchao_b200": ("b200", 50, "single node of 8 'power limited' B200, limit not stated "
                     "(pytorch/ao@9e3758d15:torchao/prototype/mx_formats/README.md:17); the power cap is not "
                     "modelled; the NIC is unused on one node (preset value)"),
    "dgx_gb200": ("gb200", 50, "DGX GB200 reference architecture, GB200 NVL72 racks "
                  "(NVIDIA/dgxc-benchmarking@68eaf7e:README.md:189-199); the NIC is not stated there: one 400 Gb/s "
                  "ConnectX-7 per GPU (50 GB/s, the gb200 preset) is assumed. NVLink domain per job: NeMo's Slurm "
                  "executor asks for --segment = the largest divisor of the node count up to 18 (4 GPUs per node) when "
                  "a job spans more than one rack (NVIDIA/NeMo@7a8f1cc7bc:scripts/performance/utils.py:114-120): 16 "
                  "trays = 64 GPUs per NVLink domain for 128, 256 and 512 GPUs"),
    "tt_nvfp4_blackwell": ("gb200", 50, "the GPU is not named ('NVIDIA Blackwell SM100 or later', "
                           "pytorch/torchtitan@b5bcd76c66:torchtitan/components/quantization/nvfp4.md:17); the "
                           "published memory percentages imply 184.28 GiB of device memory (Qwen3 rows: 78.63 GiB = "
                           "42.67%, 112.63 = 61.12%, 112.88 = 61.25%), more than B200's 180 GB and far less than "
                           "B300's 288 GB: GB200 (1,200 W) is taken, its rates from the gb200 preset, with hbm_bytes "
                           "set to the implied 184.28 GiB that the framework saw; 4 GPUs on one NVLink domain (one "
                           "compute tray); the NIC is unused"),
    "automodel_h100": ("h100-sxm", 50, "DGX-H100 (NVIDIA-NeMo/Automodel@01926a5c:docs/performance-summary.md:9); "
                       "NIC not stated, assumed the DGX H100 reference 8x400 Gb/s = 50 GB/s per GPU"),
}

TPU_SLICES = {
    # chips in one slice: (chip preset, dims, wraparound, statement)
    ("TPU v4", 64): ("tpu-v4", [4, 4, 4], [True, True, True],
                     "v4-128 = 64 chips = one 4x4x4 cube; wraparound on full cubes (shared/reference/hardware.md, "
                     "TPU table: 'full cubes (multiples of 4x4x4)')"),
    ("TPU v4", 192): ("tpu-v4", [4, 4, 12], [True, True, True],
                      "v4-384 = 192 chips = 4x4x12 (notes/jax.md section 2: 3 cubes, 'presumably'); axes are "
                      "multiples of 4 so wraparound is assumed on all three (shared/reference/hardware.md)"),
    ("TPU v6e", 256): ("tpu-v6e", [16, 16], [True, True],
                       "v6e-256 = 16x16 (docs.cloud.google.com/tpu/docs/v6e); wraparound on axes of size 16 "
                       "(shared/reference/hardware.md)"),
}


# Power-capped GPUs. Meta's Grand Teton H100s ran the Dec-2024 torchtitan benchmarks at their default 500 W power
# limit, not the 700 W the h100-sxm preset's GEMM and attention rates were measured at ("We used the default 500W
# power limit", pytorch/torchtitan@b5bcd76c66:benchmarks/llama3_h100_202412_torchtitan.md:15); the 2024 docs ran
# "lower TDP" parts of the same SKU (HARDWARE['grand_teton_2024']), taken as the same 500 W (assumed). A cap lowers
# the SM clock, not the HBM clock; the tensor-core clock at 500 W is published nowhere, so these clusters carry
# compute_clock_scale (docs/model.md, section 3, "Power-capped GPUs"): a named parameter of this hardware profile,
# fitted by fit_power_cap.py on POWER_CAP_FIT_ROWS (marked published.fitted) and reported as fitted.
POWER_CAPPED = ("grand_teton", "grand_teton_2024")
GRAND_TETON_500W_CLOCK_SCALE = 0.79  # fit_power_cap.py (its --check guards it)
POWER_CAP_NOTE = ("500 W power limit: compute_clock_scale {:.2f} (matmul and attention at that fraction of the "
                  "h100-sxm-96g rates measured at 700 W; fitted by fit_power_cap.py on the development rows of this "
                  "hardware without context parallelism, docs/validation.md)")


# The rows compute_clock_scale is fitted on: the development rows of the 500 W hardware without context
# parallelism when the fit was made (the CP rows' error grows with the CP degree, a cost of their own the scale
# must not absorb). r0500, moved to development afterwards (split.py), is not one of them.
POWER_CAP_FIT_ROWS = ("r0486", "r0487", "r0488", "r0489", "r0493", "r0494", "r0495")


def power_cap_fitted(row_id):
    return row_id in POWER_CAP_FIT_ROWS


def gpu_cluster(hw, devices):
    """8 GPUs per node; a run on fewer GPUs than a node (the 2- and 4-GPU long-sequence rows) uses part of one."""
    chip, nic, _ = HARDWARE[hw]
    cluster = {"chip": chip, "devices": devices, "fabric": gpu_fabric(nic, min(8, devices))}
    if hw in POWER_CAPPED:
        cluster["compute_clock_scale"] = GRAND_TETON_500W_CLOCK_SCALE
    return cluster


def gb200_cluster(devices):
    """GB200 NVL72: 4 GPUs per compute tray; a job of more than 18 trays gets NVLink domains of the largest divisor
    of its tray count up to 18 (NeMo's --segment, HARDWARE['dgx_gb200']), a smaller one a single domain."""
    trays = devices // 4
    segment = trays if trays <= 18 else next(c for c in range(18, 0, -1) if trays % c == 0)
    return {"chip": "gb200", "devices": devices, "fabric": gpu_fabric(50, 4 * segment)}


GIB = 1024 ** 3
TT_NVFP4_HBM_BYTES = int(round(184.28 * GIB))  # HARDWARE['tt_nvfp4_blackwell']


def gb200_chip_with_memory(hbm_bytes, note):
    """The gb200 preset inline, its hbm_bytes replaced by a capacity the run itself measured."""
    chip = json.loads((HERE.parents[2] / "presets" / "chips" / "gb200.json").read_text())
    chip["hbm_bytes"] = hbm_bytes
    chip["source"] = f"presets/chips/gb200.json with hbm_bytes {hbm_bytes} ({note})"
    return chip


# Chips per slice of the multislice rows (notes/jax.md sections 4.9-4.11, 4.18): v6e-256 slices; the v4 22B
# table on v4-128 slices (64 chips), the 52B on v4-384 (192).
SLICE_CHIPS = {("TPU v6e", "*"): 256, ("TPU v4", "maxtext_22b"): 64, ("TPU v4", "maxtext_52b"): 192}


def slice_chips(row):
    chip = row["hardware"]["chip"]
    return SLICE_CHIPS.get((chip, row["model"]), SLICE_CHIPS.get((chip, "*")))


def tpu_cluster(chip_name, devices, per_slice=None):
    """One slice, or devices / per_slice slices joined by the data-center network (the chip preset's DCN
    bandwidth per chip: shared/reference/hardware.md)."""
    per_slice = per_slice or devices
    chip, dims, wrap, _ = TPU_SLICES[(chip_name, per_slice)]
    fabric = {"kind": "torus", "dims": dims, "wraparound": wrap}
    if devices > per_slice:
        fabric["dcn_slices"] = devices // per_slice
    return {"chip": chip, "devices": devices, "fabric": fabric}


# ---------------------------------------------------------------------------------------------------------
# Models. Each function returns the inline model object; 'source' names where the shape comes from.
# ---------------------------------------------------------------------------------------------------------

def dense(name, layers, hidden, ffn, heads, kv, vocab, source, mlp="swiglu", norm="rmsnorm", position="rope",
          tied=False, dropout=False, bias=False, head_dim=None, **extra):
    m = {"name": name, "layers": layers, "hidden": hidden, "ffn_hidden": ffn, "heads": heads, "kv_heads": kv}
    if head_dim is not None:
        m["head_dim"] = head_dim
    m.update({"vocab": vocab, "mlp": mlp, "norm": norm, "position": position, "tied_embeddings": tied,
              "dropout": dropout, "bias": bias})
    m.update(extra)
    m["source"] = source
    return m


def moe(experts, top_k, expert_ffn, capacity=1.0, shared=0, first_dense=0):
    return {"experts": experts, "top_k": top_k, "shared_experts": shared, "expert_ffn_hidden": expert_ffn,
            "capacity_factor": capacity, "first_dense_layers": first_dense}


NEMO_GPT_DEFAULTS = ("NeMo GPT defaults: learned positions, GeLU, LayerNorm, biases, tied embeddings, hidden/attention "
                     "dropout 0.1 (NVIDIA/NeMo@r2.0.0rc1:nemo/collections/nlp/models/language_modeling/"
                     "megatron_gpt_model.py:440; megatron_base_model.py:483)")
NEMOTRON_ARCH = ("squared-ReLU MLP (not gated), LayerNorm1p (LayerNorm with zero-centred gamma), RoPE on half the "
                 "head dim (rotary_percentage 0.5), no biases, untied, no dropout")


def gpt3_nemo(name, layers, hidden, ffn, heads, cite, dropout=True):
    return dense(name, layers, hidden, ffn, heads, heads, 50257,
                 f"{cite}; {NEMO_GPT_DEFAULTS}; vocab GPT-2 BPE 50257 before NeMo's 128*TP padding",
                 mlp="gelu", norm="layernorm", position="learned", tied=True, dropout=dropout, bias=True)


def llama_nemo(name, layers, hidden, ffn, heads, kv, vocab, cite):
    return dense(name, layers, hidden, ffn, heads, kv, vocab,
                 f"{cite}: RoPE, SwiGLU, RMSNorm, no biases, untied embeddings, dropout 0")


def nemotron(name, layers, hidden, ffn, heads, kv, cite, vocab_note):
    return dense(name, layers, hidden, ffn, heads, kv, 256000, f"{cite}: {NEMOTRON_ARCH}; {vocab_note}",
                 mlp="relu2", norm="layernorm")


def grok1(layers, mlp, cite, note=""):
    src = (f"{cite}: 64 layers (proxies: fewer, per the recipe), hidden 6144, 48 heads, 8 query groups, 8 experts "
           f"top-2 of FFN 32768, RMSNorm, RoPE, untied, no dropout, vocab Llama-3 128256 before padding; "
           f"attention-logit soft-capping of Grok-1 is in neither recipe (notes/megatron.md section 6.4){note}")
    m = dense("grok1-314b" if layers == 64 else f"grok1-314b-proxy-{layers}l", layers, 6144, 32768, 48, 8, 128256,
              src, mlp=mlp)
    m["moe"] = moe(8, 2, 32768, 1.0)
    return m


def mixtral_8x7b(cite, capacity, note):
    m = dense("mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000, f"{cite}: 8 experts top-2 of FFN 14336, RMSNorm, "
              f"SwiGLU, RoPE, untied, vocab 32000; {note}")
    m["moe"] = moe(8, 2, 14336, capacity)
    return m


# Multi-head latent attention as DeepSeek-V3 and Kimi K2 run it: "the number of attention heads n_h to 128
# and the per-head dimension d_h to 128. The KV compression dimension d_c is set to 512, and the query
# compression dimension d_c' is set to 1536. For the decoupled queries and key, we set the per-head dimension
# d_h^R to 64" (DeepSeek-V3 report, arXiv 2412.19437, section 4.2); values 128 wide per head.
MLA_V3 = {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "v_head_dim": 128}


def deepseek_v3(cite):
    m = dense("deepseek-v3", 61, 7168, 18432, 128, 128, 129280,
              f"{cite}; DeepSeek-V3 report (arXiv 2412.19437, section 4.2): 61 layers, the first 3 dense (FFN "
              "18432), 1 shared + 256 routed experts of FFN 2048, top-8, vocab 129280; multi-head latent attention "
              "with 128 heads (q latent 1536, kv latent 512, key heads 128 + 64 rotary, value heads 128). No MTP "
              "module is built by AutoModel", head_dim=128, mla=dict(MLA_V3))
    m["moe"] = moe(256, 8, 2048, 1.0, shared=1, first_dense=3)
    return m


def kimi_k2(cite):
    m = dense("kimi-k2", 61, 7168, 18432, 64, 64, 163840,
              f"{cite}: 61 layers (first 1 dense, FFN 18432), hidden 7168, 64 heads, MLA (q_lora 1536, kv_lora 512, "
              "qk 128+64, v 128), 384 routed experts top-8 + 1 shared of FFN 2048, vocab 163840, untied",
              head_dim=128, mla=dict(MLA_V3))
    m["moe"] = moe(384, 8, 2048, 1.0, shared=1, first_dense=1)
    return m


def qwen3_30b_a3b(cite):
    m = dense("qwen3-30b-a3b", 48, 2048, 768, 32, 4, 151936,
              f"{cite}: 48 layers, hidden 2048, 32 heads of dim 128, 4 KV heads, 128 experts top-8 of FFN 768, "
              "vocab 151936 (modern_runs.json models entry, HF config); QK-norm as every Qwen3 "
              "(pytorch/torchtitan@bcc09297a:torchtitan/models/qwen3/__init__.py:116); untied (HF config, not "
              "recorded in the notes); no dense layer, so ffn_hidden is unused", head_dim=128, qk_norm=True)
    m["moe"] = moe(128, 8, 768, 1.0)
    return m


def gpt_oss(size, cite):
    layers, experts = {"20b": (24, 32), "120b": (36, 128)}[size]
    m = dense(f"gpt-oss-{size}", layers, 2880, 2880, 64, 8, 201088,
              f"{cite}: {layers} layers, hidden 2880, 64 heads of dim 64 (Q width 4096), 8 KV heads, {experts} "
              "experts top-4 of FFN 2880 with biases and a clamped quick-GELU-gated (GEGLU-style) activation, "
              "attention biases, layers alternate sliding window 128 (even, from layer 0) and full; vocab 201088, "
              "untied. Attention sinks (one logit per head) are ignored. No dense layer, so ffn_hidden is unused",
              mlp="geglu", bias=True, head_dim=64, attention_window=128, global_every=2)
    m["moe"] = moe(experts, 4, 2880, 1.0)
    return m


# ---------------------------------------------------------------------------------------------------------
# Helpers shared by the families
# ---------------------------------------------------------------------------------------------------------

def slug(s):
    return re.sub(r"[^a-z0-9.]+", "-", s.lower()).strip("-")


def mean_sms(a, b):
    """tp_comm_overlap_sms: mean of proj_fprop and fc2_fprop num_sm, rounded half up (see module docstring)."""
    return int(math.floor((a + b) / 2 + 0.5))


def torchtitan_split(layers, stages):
    """torchtitan 9dec370 auto split (pipelining_utils.py:18-57): stage 0 gets base = L // S, the next L % S
    stages base + 1, the remainder on the last stage."""
    base, rem = divmod(layers, stages)
    out = [base] + [base + 1] * rem
    out += [base] * (stages - 2 - rem)
    out.append(layers - sum(out))
    assert len(out) == stages and min(out) >= 0, (layers, stages)
    return out


def automodel_split(layers, stages):
    """AutoModel pipelining functional.py:66-149: L // S layers per stage, the first L % S stages one more."""
    base, rem = divmod(layers, stages)
    return [base + 1] * rem + [base] * (stages - rem)


def embed_loss_split(layers, chunks):
    """NeMo 2.0 account_for_embedding/loss_in_pipeline_split: embedding and loss each count as one layer, so
    (layers + 2) / chunks per chunk, the first chunk one fewer (embedding) and the last one fewer (loss)."""
    per = (layers + 2) // chunks
    assert per * chunks == layers + 2, (layers, chunks)
    return [per - 1] + [per] * (chunks - 2) + [per - 1]


def assumptions_text(knobs, extra):
    parts = []
    for field, k in knobs.items():
        if k["kind"] in ("default", "not stated"):
            v = json.dumps(k["value"]) if not isinstance(k["value"], str) else k["value"]
            s = f"{field} = {v} ({k['kind']}"
            if k["cite"]:
                s += f": {k['cite']}"
            if k["note"]:
                s += f"; {k['note']}"
            parts.append(s + ")")
    text = ""
    if parts:
        text = "Values not stated by the source and how they were filled: " + "; ".join(parts) + "."
    for e in extra:
        if e:
            text += (" " if text else "") + e.rstrip(".") + "."
    return text


H100_HBM_BYTES = 85520809984  # presets/chips/h100-sxm.json hbm_bytes (81559 MiB)


def jax_pool(fraction, cite):
    """JAX preallocates XLA_PYTHON_CLIENT_MEM_FRACTION of the GPU's memory as its pool: the rest (CUDA context,
    NCCL, cuDNN workspaces) is outside what the step can use, so shardsim reserves it."""
    return K(int(round((1 - fraction) * H100_HBM_BYTES)),
             f"{cite} (XLA_PYTHON_CLIENT_MEM_FRACTION={fraction}: the pool is {fraction} of the GPU's memory, "
             "https://docs.jax.dev/en/latest/gpu_memory_allocation.html)")


def apply_knobs(plan, knobs):
    for field, k in knobs.items():
        if field.startswith("_"):
            continue
        plan[field] = k["value"]
    return plan


def base_plan(framework, devices, tp=1, pp=1, cp=1, ep=1, mbs=1, gbs=1, seq=2048, vp=1, sp=False,
              layers_per_stage=None, mesh_order=None):
    """The parallel layout of a row; dp = devices / (tp*pp*cp). Knob tables are applied on top."""
    dp, rest = divmod(devices, tp * pp * cp)
    assert rest == 0, (devices, tp, pp, cp)
    plan = {"framework": framework, "dp": dp, "tp": tp, "pp": pp, "cp": cp, "ep": ep,
            "microbatch_size": mbs, "global_batch": gbs, "seq_len": seq, "sequence_parallel": sp,
            "schedule": "interleaved" if vp > 1 else "1f1b"}
    if vp > 1:
        plan["virtual_stages"] = vp
    if layers_per_stage is not None:
        plan["layers_per_stage"] = layers_per_stage
    if mesh_order is not None:
        plan["mesh_order"] = mesh_order
    return plan


def scenario(row, description, model, cluster, plan, metrics, source, assumptions):
    """Assembles one scenario; metrics is a list of (name, value) in output order."""
    published = {"row": row["id"], "split": SPLIT[row["id"]], "source_id": row["source"], "source": source,
                 "assumptions": assumptions}
    for name, value in metrics:
        published[name] = value
    return {"description": description, "model": model, "cluster": cluster, "plan": plan, "published": published}


def step_metric(row):
    return [("step_time_s", row["measured"]["step_time_s"])]


def dgxc_source(row):
    return f"NVIDIA DGX Cloud Benchmarking recipes, {row['locator']}"


def megatron_dp_knobs(zero_cite, overlap_grad, overlap_param, bucket_bytes, bucket_cite, grad_dtype, grad_cite,
                      kind="recipe", bucket_kind=None, bucket_note=""):
    """The data-parallel knobs of a Megatron/NeMo family (zero 1 optimizer)."""
    return {
        "zero": K(1, zero_cite, kind),
        "overlap_grad_reduce": K(overlap_grad[0], overlap_grad[1], kind),
        "overlap_param_gather": K(overlap_param[0], overlap_param[1], kind),
        "grad_bucket_bytes": K(bucket_bytes, bucket_cite, bucket_kind or kind, bucket_note),
        "grad_reduce_dtype": K(grad_dtype, grad_cite, kind),
    }


NEMO_APEX_STORE = {  # MegatronBaseModel.setup_optimization, with_distributed_adam: what Apex keeps of the master
    "v1.23.0": "744..752", "v2.0.0rc1": "798..806", "v2.0.0": "802..812", "v2.1.0": "806..816"}


def apex_master_copy(nemo, fp8_params, optim_dtype="fp32"):
    """What NeMo 1.x's Apex DistributedFusedAdam keeps of the master weights (plan.master_copy): with fp8_params a
    full copy (store_params); an optimizer dtype equal to the model's (bf16) keeps none (store_params False); an fp32
    optimizer over a bf16 model keeps 16-bit remainders (store_param_remainders)."""
    cite = (f"NVIDIA/NeMo@{nemo}:nemo/collections/nlp/models/language_modeling/megatron_base_model.py:"
            f"{NEMO_APEX_STORE[nemo]}")
    if fp8_params:
        return K("full", cite + " (fp8_params: store_params True)", "default")
    if optim_dtype == "bf16":
        return K("none", cite + " (optimizer dtype = model dtype bf16: store_params False, the bf16 parameters are "
                 "the master weights)", "default")
    return K("remainder", cite + " (fp32 optimizer over a bf16 model: store_params False, store_param_remainders "
             "True: 16-bit remainders)", "default")


def mcore_default_bucket_bytes(dp, grad_bytes):
    """Megatron-Core bucket_size None -> max(40,000,000, 1,000,000*dp) parameters
    (NVIDIA/Megatron-LM@core_v0.9.0:megatron/core/distributed/distributed_data_parallel.py:56)."""
    return max(40_000_000, 1_000_000 * dp) * grad_bytes


# =========================================================================================================
# 1. NeMo 24.07 performance summary (r0001-r0012): FP8, DGX-H100, tokens/s per GPU.
#    The table states TP/PP/CP/VP/MBS/GBS only; every other knob is the NeMo-Framework-Launcher 24.07 default
#    training config of the model (notes/megatron.md section 6.7: kind 'default', the table may have overridden).
# =========================================================================================================

def launcher(yaml, line):
    return f"NVIDIA/NeMo-Framework-Launcher@24.07:launcher_scripts/conf/training/{yaml}:{line}"


NEMO2407_TABLE = "NVIDIA/NeMo@9c5c5e9709:docs/source/performance/performance_summary.md"
NEMO2407_COMMON = {
    "zero": K(1, "launcher optim.name distributed_fused_adam (Apex DistributedFusedAdam, ZeRO-1-like)", "default"),
    "grad_reduce_dtype": K("fp32", "Apex DistributedFusedAdam grad_sync_dtype None -> optimizer dtype fp32 "
                           "(notes/megatron.md section 3)", "default"),
    "matmul_dtype": K("fp8", f"{NEMO2407_TABLE}:12 (FP8 table)"),
    "fp8_recipe": K("delayed", "NVIDIA/Megatron-LM@core_v0.8.0:megatron/core/transformer/transformer_block.py:382 "
                    "(delayed scaling is the only recipe in MCore 0.8 / TE 1.8)", "default"),
    "fp8_param_gather": K(False, "NVIDIA/NeMo@r2.0.0rc1:nemo/collections/nlp/models/language_modeling/"
                          "megatron_gpt_model.py:342", "default", "fp8_params absent from the launcher YAML"),
    "master_copy": apex_master_copy("v2.0.0rc1", False),
}
# The launcher's own H100 FP8 run scripts of the same release (examples/training/<family>/h100/<model>_fp8*.sh,
# NeMo-Framework-Launcher@24.07) override the YAML with +training.model.optim.grad_sync_dtype=bf16 for the GPT-3
# and Llama models; the Nemotron scripts do not (their rows keep the YAML's reduction dtype).
NEMO2407_FP8_SCRIPTS = {"r0001": ("gpt/h100/5b_fp8_8node.sh", 23), "r0002": ("gpt/h100/20b_fp8_8node.sh", 23),
                        "r0003": ("gpt/h100/175b_fp8_16node.sh", 24), "r0004": ("gpt/h100/175b_fp8_16node.sh", 24),
                        "r0005": ("llama/h100/llama2_7b_fp8.sh", 22), "r0006": ("llama/h100/llama2_13b_fp8.sh", 22),
                        "r0007": ("llama/h100/llama2_70b_fp8.sh", 21), "r0011": ("llama/h100/llama3_8b_fp8.sh", 22),
                        "r0012": ("llama/h100/llama3_70b_fp8.sh", 21)}
# row: (model builder, launcher yaml, {field: (value, line)}, launcher-vs-table note)
NEMO2407_ROWS = {
    "r0001": (lambda: gpt3_nemo("gpt3-5b", 24, 4096, 16384, 32, launcher("gpt3/5b.yaml", 69)), "gpt3/5b.yaml",
              {"sequence_parallel": (False, 106), "recompute": ("none", 93), "overlap_grad_reduce": (True, 172),
               "overlap_param_gather": (True, 173), "grad_bucket_bytes": (400 * MIB, 171)}, ""),
    "r0002": (lambda: gpt3_nemo("gpt3-20b", 44, 6144, 24576, 48, launcher("gpt3/20b.yaml", 69)), "gpt3/20b.yaml",
              {"sequence_parallel": (True, 106), "recompute": ("none", 93), "overlap_grad_reduce": (True, 173),
               "overlap_param_gather": (True, 174), "grad_bucket_bytes": (220 * MIB, 172),
               "tp_comm_overlap": (True, 149), "tp_comm_overlap_sms": (mean_sms(16, 24), 3)},
              "launcher GBS 2048 vs table 256 (table used); userbuffer table ub_cfg_h100_h6144_tp2_mbs2_seqlen2048: "
              "proj_fprop pipeline num_sm 16, fc2_fprop pipeline num_sm 24"),
    "r0003": (lambda: gpt3_nemo("gpt3-175b", 96, 12288, 49152, 96, launcher("gpt3/175b.yaml", 69)),
              "gpt3/175b.yaml",
              {"sequence_parallel": (True, 106), "recompute": ("none", 99), "overlap_grad_reduce": (True, 173),
               "overlap_param_gather": (True, 174), "grad_bucket_bytes": (220 * MIB, 172),
               "tp_comm_overlap": (False, 149)},
              "launcher VP 12 vs table 6 (table used: 2 layers per virtual stage); the launcher's 175b config has "
              "ub_tp_comm_overlap False although it names a userbuffer table"),
    "r0005": (lambda: llama_nemo("llama2-7b", 32, 4096, 11008, 32, 32, 32000, launcher("llama/llama2_7b.yaml", 65)),
              "llama/llama2_7b.yaml",
              {"sequence_parallel": (False, 126), "recompute": ("none", 121), "overlap_grad_reduce": (True, 157),
               "overlap_param_gather": (True, 158), "grad_bucket_bytes": (125 * MIB, 156)},
              "launcher GBS 2048 vs table 128 (table used)"),
    "r0006": (lambda: llama_nemo("llama2-13b", 40, 5120, 13824, 40, 40, 32000,
                                 launcher("llama/llama2_13b.yaml", 65)), "llama/llama2_13b.yaml",
              {"sequence_parallel": (False, 126), "recompute": ("none", 121), "overlap_grad_reduce": (True, 157),
               "overlap_param_gather": (True, 158), "grad_bucket_bytes": (125 * MIB, 156)},
              "launcher GBS 2048 vs table 128 (table used); launcher fp8_hybrid False, amax history 1 / "
              "most_recent: the FP8 format of the table run is not stated"),
    "r0007": (lambda: llama_nemo("llama2-70b", 80, 8192, 28672, 64, 8, 32000, launcher("llama/llama2_70b.yaml", 64)),
              "llama/llama2_70b.yaml",
              {"sequence_parallel": (True, 126), "recompute": ("none", 121), "overlap_grad_reduce": (True, 158),
               "overlap_param_gather": (True, 159), "grad_bucket_bytes": (125 * MIB, 157),
               "tp_comm_overlap": (True, 136), "tp_comm_overlap_sms": (mean_sms(24, 16), 3)},
              "launcher GBS 2048 vs table 128 (table used); userbuffer table ub_cfg_h100_h8192_tp4_mbs1_seqlen4096: "
              "proj_fprop 24 SMs, fc2_fprop 16; launcher fp8_hybrid False, amax history 1: FP8 format not stated"),
    "r0008": (lambda: nemotron("nemotron3-8b", 32, 4096, 16384, 32, 32, launcher("nemotron/nemotron_8b.yaml", 67),
                               "vocab not stated (tokenizer path null in the launcher YAML); 256000 is the only "
                               "vocabulary consistent with the table's own TFLOP/s accounting (notes/megatron.md "
                               "section 6.9)"), "nemotron/nemotron_8b.yaml",
              {"sequence_parallel": (True, 130), "recompute": ("none", 125), "overlap_grad_reduce": (True, 173),
               "overlap_param_gather": (True, 174), "grad_bucket_bytes": (100 * MIB, 172),
               "tp_comm_overlap": (True, 158), "tp_comm_overlap_sms": (16, None)},
              "launcher MBS 2 vs table 4 and GBS 32 vs 256 (table used); no userbuffer table -> Transformer Engine "
              "initialize_ub defaults (pipeline RS layers num_sm 16, NVIDIA/TransformerEngine@v1.11:transformer_engine/"
              "pytorch/module/base.py:242)"),
    "r0009": (lambda: nemotron("nemotron3-22b", 40, 6144, 24576, 48, 48,
                               launcher("nemotron/nemotron_22b.yaml", 67),
                               "vocab not stated (tokenizer path null); 256000 inferred from the table's TFLOP/s "
                               "accounting (notes/megatron.md section 6.9)"), "nemotron/nemotron_22b.yaml",
              {"sequence_parallel": (True, 130), "recompute": ("none", 125), "overlap_grad_reduce": (True, 176),
               "overlap_param_gather": (True, 177), "grad_bucket_bytes": (100 * MIB, 175),
               "tp_comm_overlap": (True, 158), "tp_comm_overlap_sms": (16, None)},
              "launcher MBS 1 vs table 2 and GBS 32 vs 256 (table used); no userbuffer table -> TE initialize_ub "
              "defaults (num_sm 16)"),
    "r0010": (lambda: nemotron("nemotron4-340b", 96, 18432, 73728, 96, 8, launcher("nemotron/nemotron_340b.yaml", 65),
                               "vocab 256000 (the table's TFLOP/s accounting; tokenizer path not set in the launcher "
                               "YAML)"), "nemotron/nemotron_340b.yaml",
              {"sequence_parallel": (True, 127), "recompute": ("selective", 122), "overlap_grad_reduce": (True, 163),
               "overlap_param_gather": (True, 164), "grad_bucket_bytes": (50 * MIB, 160),
               "grad_reduce_dtype": ("bf16", 161), "master_weights_dtype": ("bf16", 162),
               "optimizer_state_dtype": ("bf16", 162), "tp_comm_overlap": (False, 156)},
              "launcher PP 12 / VP 8 / GBS 2304 vs table PP 8 / VP 12 / GBS 32 (table used); launcher optim dtype "
              "bf16 = bf16 master weights and Adam states in Apex's distributed optimizer"),
    "r0011": (lambda: llama_nemo("llama3-8b", 32, 4096, 14336, 32, 8, 128256, launcher("llama/llama3_8b.yaml", 66)),
              "llama/llama3_8b.yaml",
              {"sequence_parallel": (False, 125), "recompute": ("none", 120), "overlap_grad_reduce": (True, 154),
               "overlap_param_gather": (True, 155), "grad_bucket_bytes": (125 * MIB, 153)},
              "launcher GBS 2048 vs table 128 (table used); context parallelism by MCore 0.8's only (P2P ring) "
              "implementation"),
    "r0012": (lambda: llama_nemo("llama3-70b", 80, 8192, 28672, 64, 8, 128256, launcher("llama/llama3_70b.yaml", 66)),
              "llama/llama3_70b.yaml",
              {"sequence_parallel": (True, 125), "recompute": ("none", 120), "overlap_grad_reduce": (True, 156),
               "overlap_param_gather": (True, 157), "grad_bucket_bytes": (125 * MIB, 155),
               "tp_comm_overlap": (True, 136), "tp_comm_overlap_sms": (mean_sms(24, 16), 3)},
              "launcher VP 10 vs table 5 and GBS 2048 vs 128 (table used: 4 layers per virtual stage); userbuffer "
              "table ub_cfg_h100_h8192_tp4_mbs1_seqlen8192: proj_fprop 24 SMs, fc2_fprop 16"),
}
NEMO2407_ROWS["r0004"] = NEMO2407_ROWS["r0003"]


def build_nemo2407(row):
    builder, yaml, fields, note = NEMO2407_ROWS[row["id"]]
    model = builder()
    p, b = row["parallelism"], row["batch"]
    n = row["hardware"]["count"]
    plan = base_plan("megatron-core", n, p["tp"], p["pp"], p["cp"], 1, b["mbs"], b["gbs"], row["seq_len"], p["vp"])
    knobs = dict(NEMO2407_COMMON)
    if "tp_comm_overlap" not in fields:
        knobs["tp_comm_overlap"] = K(False, "TP=1: no tensor parallelism (notes/megatron.md)")
    for field, (value, line) in fields.items():
        cite = launcher(yaml, line) if line is not None else TE_DEFAULT_SMS
        if field == "tp_comm_overlap_sms" and line is not None:
            cite = launcher(yaml, line) + " (tp_overlap userbuffer table)"
        knobs[field] = K(value, cite, "default")
    if row["id"] in NEMO2407_FP8_SCRIPTS:
        script, line = NEMO2407_FP8_SCRIPTS[row["id"]]
        knobs["grad_reduce_dtype"] = K("bf16", f"NVIDIA/NeMo-Framework-Launcher@24.07:examples/training/{script}:"
                                       f"{line} (+training.model.optim.grad_sync_dtype=bf16)", "default",
                                       "the launcher's FP8 run script of this model on H100 overrides the YAML")
    if knobs.get("master_weights_dtype", {}).get("value") == "bf16":
        knobs["master_copy"] = apex_master_copy("v2.0.0rc1", False, "bf16")
    if p["cp"] > 1:
        knobs["cp_comm"] = K("p2p", "NVIDIA/Megatron-LM@core_v0.8.0:megatron/core/transformer/custom_layers/"
                             "transformer_engine.py:460 (MCore 0.8 has only the P2P ring)", "default")
    apply_knobs(plan, knobs)
    extra = ["NeMo 24.07 container (NeMo 2.0.0rc1, MCore 0.8, TE 1.8). The table names no recipe: apart from "
             "TP/PP/CP/VP/MBS/GBS every knob is the NeMo-Framework-Launcher 24.07 default config of this model, "
             "which ships fp8: False, so the FP8 run overrode it in ways not stated (notes/megatron.md section 6.7)",
             note, HARDWARE["dgx_h100_nemo_table"][2],
             "Metric: the table's tokens/s/GPU (throughput of the whole step)"]
    desc = (f"{row['id']}: {model['name']} FP8, NeMo 24.07 performance summary, {n}x H100 "
            f"(TP{p['tp']} PP{p['pp']} CP{p['cp']} VP{p['vp']}, MBS {b['mbs']}, GBS {b['gbs']})")
    return scenario(row, desc, model, gpu_cluster("dgx_h100_nemo_table", n), plan,
                    [("tokens_per_s_per_device", row["measured"]["tokens_per_s_per_gpu"])],
                    f"NeMo Framework Performance Summary (24.07), {NEMO2407_TABLE}, {row['locator']}",
                    assumptions_text(knobs, extra))


# =========================================================================================================
# 2. NeMo long-sequence tables (r0013-r0029): FP8 with context parallelism; TFLOP/s only.
# =========================================================================================================

LONGSEQ_DOC = "NVIDIA/NeMo@19fadb67b0:docs/source/performance/performance_long_sequence.md"
LONGSEQ_COMMON = {
    "microbatch_size": K(1, LONGSEQ_DOC + ":135", "not stated", "the table gives GBS only; rule: one sequence per "
                         "microbatch"),
    "recompute": K("none", LONGSEQ_DOC + ":133", "not stated", "the footnote mentions full recompute only for the "
                   "infeasible non-CP 1M case; MCore default recompute_granularity None"),
    "sequence_parallel": K("true when TP>1", "notes/megatron.md family nemo_longseq", "not stated",
                           "NeMo recipes enable SP whenever TP>1 (an assumption, not a statement)"),
    "cp_comm": K("p2p", "MCore <=0.9 has only the P2P ring; 0.12 maps None -> p2p (NVIDIA/Megatron-LM@core_v0.12.0:"
                 "megatron/core/extensions/transformer_engine.py:680)", "default"),
    "tp_comm_overlap": K(False, "Megatron-Core ModelParallelConfig tp_comm_overlap False (NVIDIA/Megatron-LM@"
                         "core_v0.8.0:megatron/core/model_parallel_config.py:146; core_v0.12.0 :160)", "not stated",
                         "the table does not say; framework default"),
    "matmul_dtype": K("fp8", LONGSEQ_DOC + ":135 (FP8 tables)"),
    "fp8_recipe": K("delayed", "NeMo's only/default FP8 recipe at both versions (notes/megatron.md nemo_longseq)",
                    "default"),
}
LONGSEQ_H100_DP = {  # NeMo 1.0 era: the launcher's llama2_7b defaults (notes family llama2_7b NeMo 24.07)
    "zero": K(1, launcher("llama/llama2_7b.yaml", 150), "not stated", "DP implementation not stated; the NeMo-"
              "Framework-Launcher llama2_7b default (Apex distributed_fused_adam) is used"),
    "overlap_grad_reduce": K(True, launcher("llama/llama2_7b.yaml", 157), "not stated", "launcher default"),
    "overlap_param_gather": K(True, launcher("llama/llama2_7b.yaml", 158), "not stated", "launcher default"),
    "grad_bucket_bytes": K(125 * MIB, launcher("llama/llama2_7b.yaml", 156), "not stated",
                           "launcher bucket_cap_mb 125"),
    "grad_reduce_dtype": K("bf16", "NVIDIA/NeMo-Framework-Launcher@24.03.01:examples/training/llama/h100/"
                           "llama2_7b_fp8.sh:22 (+training.model.optim.grad_sync_dtype=bf16)", "not stated",
                           "the launcher's Llama-2 7B FP8 run script on H100 of the table's release"),
    "fp8_param_gather": K(False, "NVIDIA/NeMo@r2.0.0rc1:nemo/collections/nlp/models/language_modeling/"
                          "megatron_gpt_model.py:342", "not stated", "fp8_params absent from the launcher config"),
    "master_copy": apex_master_copy("v1.23.0", False),
}
LONGSEQ_B200_DP = {  # NeMo 2.0 recipe path (25.04): the notes' NeMo 2.0 defaults
    "zero": K(1, "NVIDIA/NeMo@d2b21556f2:nemo/collections/llm/recipes/optim/adam.py:47 (MCore distributed "
              "optimizer of the NeMo 2.0 recipes)", "not stated", "DP implementation not stated; NeMo 2.0 recipe "
              "default"),
    "overlap_grad_reduce": K(True, "NVIDIA/NeMo@7a8f1cc7bc:nemo/lightning/pytorch/callbacks/megatron_comm_overlap.py:185",
                             "not stated", "MegatronCommOverlapCallback DP overlap when DP>1"),
    "overlap_param_gather": K(True, "NVIDIA/NeMo@7a8f1cc7bc:nemo/lightning/pytorch/callbacks/megatron_comm_overlap.py:185",
                              "not stated", "MegatronCommOverlapCallback"),
    "grad_bucket_bytes": K(134217728 * 4, "NVIDIA/NeMo@7a8f1cc7bc:nemo/lightning/pytorch/callbacks/"
                           "megatron_comm_overlap.py:185", "not stated",
                           "bucket_size 128*1024*1024 parameters x 4 bytes (fp32 reduction)"),
    "grad_reduce_dtype": K("fp32", "NVIDIA/NeMo@7a8f1cc7bc:nemo/collections/llm/recipes/precision/"
                           "mixed_precision.py:35 (bf16_mixed grad_reduce_in_fp32 True)", "not stated",
                           "mixed-precision plugin default"),
    "fp8_param_gather": K(False, "NVIDIA/NeMo@7a8f1cc7bc:nemo/lightning/pytorch/plugins/mixed_precision.py:108",
                          "not stated", "MegatronMixedPrecision default"),
}


def build_longseq(row):
    h100 = row["hardware"]["chip"] == "H100"
    p, b = row["parallelism"], row["batch"]
    n = row["hardware"]["count"]
    if h100:
        model = llama_nemo("llama2-7b", 32, 4096, 11008, 32, 32, 32000,
                           "Llama-2 7B as NeMo's Llama2Config7B / launcher llama2_7b.yaml (notes/megatron.md "
                           "family llama2_7b); vocab 32000 (Llama-2 SentencePiece)")
        dp_knobs, hw = LONGSEQ_H100_DP, "dgx_h100_nemo_table"
        flops = nemo_llama_flops(b["gbs"], row["seq_len"], 32, 4096, 11008, 32, 32, 32000)
        formula = ("NeMo llama2 flops formula B*s*L*h^2*(12 + 12*g/a + 18*F/h + 12*s/h + 6*V/(L*h)), V 32000, "
                   "non-causal (NVIDIA/NeMo@7a8f1cc7bc:nemo/utils/flops_formulas.py:88); the H100 table (NeMo "
                   "24.03.01) does not state its formula and NeMo 1.x had no FLOPs code: this is the notes' only "
                   "candidate (notes/megatron.md section 4, nemo_longseq)")
        release = "NeMo 24.03.01 (H100)"
    else:
        model = llama_nemo("llama3-8b", 32, 4096, 14336, 32, 8, 128256,
                           "Llama-3 8B as NeMo's Llama3Config8B (NVIDIA/NeMo@d2b21556f2:nemo/collections/llm/gpt/"
                           "model/llama.py:119); vocab 128256")
        dp_knobs, hw = LONGSEQ_B200_DP, "dgx_b200_nemo_table"
        flops = nemo_llama_flops(b["gbs"], row["seq_len"], 32, 4096, 14336, 32, 8, 128256)
        formula = ("NeMo 25.04 FLOPsMeasurementCallback llama3 formula B*s*L*h^2*(12 + 12*g/a + 18*F/h + 12*s/h + "
                   "6*V/(L*h)), V 128256, non-causal (NVIDIA/NeMo@25.04-alpha.rc2:nemo/utils/flops_formulas.py:78): "
                   "the framework default; the table does not state it")
        release = "NeMo 25.04.rc2 (B200)"
    step = flops / (row["measured"]["tflops_per_gpu"] * 1e12 * n)
    plan = base_plan("megatron-core", n, p["tp"], p["pp"], p["cp"], 1, 1, b["gbs"], row["seq_len"], 1,
                     sp=p["tp"] > 1)
    knobs = dict(LONGSEQ_COMMON)
    knobs.update(dp_knobs)
    if p["cp"] == 1:
        del knobs["cp_comm"]
    apply_knobs(plan, {k: v for k, v in knobs.items() if k not in ("sequence_parallel", "microbatch_size")})
    extra = [f"{release}; vp not stated: 1 (1F1B where PP>1)", HARDWARE[hw][2],
             f"step_time_s is derived from the published {row['measured']['tflops_per_gpu']} TFLOP/s/GPU with the "
             f"publisher's formula: {formula}: {flops:.4e} FLOPs per step / (TFLOP/s x {n} GPUs)"]
    desc = (f"{row['id']}: {model['name']} FP8 long-sequence, {release}, {n}x {row['hardware']['chip']}, "
            f"seq {row['seq_len']} (TP{p['tp']} PP{p['pp']} CP{p['cp']} DP{p['dp']}, GBS {b['gbs']})")
    cluster = gpu_cluster(hw, n)
    return scenario(row, desc, model, cluster, plan, [("step_time_s", round(step, 4))],
                    f"NeMo Long Sequence Performance, {LONGSEQ_DOC}, {row['locator']}",
                    assumptions_text(knobs, extra))


# =========================================================================================================
# 3. DGX Cloud recipes on the NeMo-1.0 YAML path (v24.11.1 = 35a9aec, v25.02 = 8f5cbb3): Llama 3.1,
#    GPT-3 175B, Nemotron-4, Grok-1. Measured step time.
# =========================================================================================================

DGXC_COMMIT = {"dgxc v24.11.1": "35a9aec", "dgxc v25.02": "8f5cbb3", "dgxc v25.04": "741c886", "dgxc v25.05": "68eaf7e",
               "dgxc v25.05.01": "60d6fd3", "dgxc v25.05.02 (commit dfc8039, revised Grok1 H100)": "dfc8039"}
DGXC_SOFTWARE = {"35a9aec": "nemo:24.09 (NeMo 2.0.0, MCore 0.9, TE 1.10)",
                 "8f5cbb3": "nemo:24.12 (NeMo 2.1.0, MCore 0.10, inferred from the container date)"}
DGXC_NEMO = {"35a9aec": "v2.0.0", "8f5cbb3": "v2.1.0"}  # the NeMo release of each container above
TE_DEFAULT_SMS = "NVIDIA/TransformerEngine@v1.11:transformer_engine/pytorch/module/base.py:242"
TE_DELAYED = "NVIDIA/TransformerEngine@v1.11:transformer_engine/common/recipe/__init__.py:54"


def dg(commit, path, line):
    return f"NVIDIA/dgxc-benchmarking@{commit}:{path}:{line}"


# Proxy scales by GPU count (notes/megatron.md families grok1_314b and llama31_405b):
# GPUs -> (layers, tp, pp, cp, ep, vp, seq, gbs)
GROK1_NEMO1_SCALES = {  # NVIDIA/dgxc-benchmarking@35a9aec:grok1/configure.sh:49..106 (@8f5cbb3: :55..112)
    8: (2, 4, 1, 1, 2, 1, 4096, 1024), 16: (4, 4, 1, 1, 4, 1, 4096, 1024), 32: (4, 4, 1, 1, 8, 1, 4096, 1024),
    64: (8, 4, 1, 2, 8, 1, 8192, 1024), 128: (16, 4, 2, 2, 8, 8, 8192, 1024), 256: (32, 4, 4, 2, 8, 8, 8192, 1024),
    512: (64, 4, 8, 2, 8, 8, 8192, 1024), 1024: (64, 4, 8, 2, 8, 8, 8192, 2048), 2048: (64, 4, 8, 2, 8, 8, 8192, 4096)}
L405_NEMO1_LAYERS = {32: 7, 96: 21, 192: 42}  # @35a9aec:llama3.1/configure.sh:89..102 (@8f5cbb3: :97..110); else 126
L405_NEMO2_LAYERS = {32: 8, 64: 30, 128: 62}  # @741c886:llama3.1/llama31_utils.py:489; else 126


def proxy_layers(row, table, full):
    """Layer count of a DGXC proxy run, from the recipe's table; checked against the row's model_variant."""
    layers = table.get(row["hardware"]["count"], full)
    m = re.match(r"proxy (\d+) layers", row.get("model_variant") or "")
    assert (int(m.group(1)) if m else full) == layers, row["id"]
    return layers


# model -> yaml, yaml lines, configure.sh lines per commit, userbuffer (proj_fprop, fc2_fprop) num_sm
NEMO1_LLAMA = {
    "llama3_8b": {"yaml": "llama3.1/llama3.1_8b.yaml", "sp": 117, "rc": 112, "optim": 141, "ogr": 148, "opg": 149,
                  "bucket": (75, 147), "grad": 157, "tpo": (False, 127), "ub": None, "arch": "58..88",
                  "fp8": {"35a9aec": (114, 116), "8f5cbb3": (122, 124)}},
    "llama3_70b": {"yaml": "llama3.1/llama3.1_70b.yaml", "sp": 117, "rc": 112, "optim": 145, "ogr": 152, "opg": 153,
                   "bucket": (75, 151), "grad": 161, "tpo": (True, 129), "ub": ((24, 16), 178), "arch": "58..87",
                   "fp8": {"35a9aec": (114, 116), "8f5cbb3": (122, 124)}},
    "llama31_405b": {"yaml": "llama3.1/llama3.1_405b.yaml", "sp": 123, "rc": 118, "optim": 148, "ogr": 155,
                     "opg": 156, "bucket": (125, 154), "grad": 164, "tpo": (True, 135), "ub": ((24, 8), 181),
                     "arch": "60..89", "fp8": {"35a9aec": (114, 116), "8f5cbb3": (122, 124)}},
}


def build_dgxc_nemo1_llama(row):
    commit = DGXC_COMMIT[row["release"]]
    t = NEMO1_LLAMA[row["model"]]
    y = t["yaml"]
    p, b = row["parallelism"], row["batch"]
    n = row["hardware"]["count"]
    fp8 = row["precision"] == "FP8"
    vp = p["vp"] or 1
    extra = [f"DGXC {row['release'][5:]}: container {DGXC_SOFTWARE[commit]}, NeMo-1.0 YAML path"]
    if row["model"] == "llama31_405b":
        layers = proxy_layers(row, L405_NEMO1_LAYERS, 126)
        vocab_cite = (dg(commit, y, 93) if commit == "35a9aec" else dg(commit, "llama3.1/configure.sh", 89))
        model = dense("llama3.1-405b" if layers == 126 else f"llama3.1-405b-proxy-{layers}l", layers, 16384, 53248,
                      128, 16, 50257,
                      f"{dg(commit, y, t['arch'])}: as the NeMo-1.0 recipe builds it, 16 query groups "
                      f"({dg(commit, y, 64)}) and a GPT-2 BPE tokenizer of 50257 tokens ({vocab_cite}), not "
                      "Llama-3.1's 8 KV heads and 128256 vocab; RoPE, SwiGLU, RMSNorm, no biases, untied, no dropout; "
                      "proxies use the proxy layer count of configure.sh")
        extra.append("notes/megatron.md section 6.3: the v24.11.1/v25.02 recipe is not the published Llama-3.1-405B "
                     "(16 query groups, GPT-2 vocabulary; row models entry says 8 KV heads and 128256); the recipe "
                     "is followed. Proxy scales from " + dg(commit, "llama3.1/configure.sh",
                                                              "89..102" if commit == "35a9aec" else "97..110"))
    elif row["model"] == "llama3_70b":
        model = llama_nemo("llama3.1-70b", 80, 8192, 28672, 64, 8, 128256,
                           f"{dg(commit, y, t['arch'])}; Llama-3 tokenizer 128256 "
                           f"({dg(commit, 'llama3.1/configure.sh', 70 if commit == '35a9aec' else 76)})")
    else:
        model = llama_nemo("llama3.1-8b", 32, 4096, 14336, 32, 8, 128256,
                           f"{dg(commit, y, t['arch'])}; Llama-3 tokenizer 128256 "
                           f"({dg(commit, 'llama3.1/configure.sh', 70 if commit == '35a9aec' else 76)})")
    plan = base_plan("megatron-core", n, p["tp"], p["pp"], p["cp"], 1, b["mbs"], b["gbs"], row["seq_len"], vp)
    knobs = {
        "sequence_parallel": K(p["tp"] > 1, dg(commit, y, t["sp"])),
        "recompute": K("none", dg(commit, y, t["rc"]) + " (recompute_granularity null)"),
    }
    knobs.update(megatron_dp_knobs(dg(commit, y, t["optim"]) + " (distributed_fused_adam: Apex, ZeRO-1-style)",
                                   (True, dg(commit, y, t["ogr"])), (True, dg(commit, y, t["opg"])),
                                   t["bucket"][0] * MIB, dg(commit, y, t["bucket"][1]) + f" (bucket_cap_mb {t['bucket'][0]})",
                                   "bf16", dg(commit, y, t["grad"]) + " (grad_sync_dtype bf16)"))
    knobs["tp_comm_overlap"] = K(t["tpo"][0], dg(commit, y, t["tpo"][1]))
    if t["ub"]:
        (proj, fc2), line = t["ub"]
        knobs["tp_comm_overlap_sms"] = K(mean_sms(proj, fc2), dg(commit, y, line) + f" (proj_fprop {proj}, "
                                         f"fc2_fprop {fc2} SMs, pipeline; mean)")
    if p["cp"] > 1:
        knobs["cp_comm"] = K("p2p", "not set; NeMo 1.0 passes no cp_comm_type, the TE/MCore default is the P2P ring "
                             "(NVIDIA/Megatron-LM@core_v0.12.0:megatron/core/extensions/transformer_engine.py:680)",
                             "default")
    if fp8:
        fl, pl = t["fp8"][commit]
        knobs["matmul_dtype"] = K("fp8", dg(commit, "llama3.1/configure.sh", fl) + " (fp8 hybrid)")
        knobs["fp8_recipe"] = K("delayed", TE_DELAYED + " (NeMo 1.0 with MCore builds only DelayedScaling)", "default")
        knobs["fp8_param_gather"] = K(True, dg(commit, "llama3.1/configure.sh", pl) + " (fp8_params)")
    knobs["master_copy"] = apex_master_copy(DGXC_NEMO[commit], fp8)
    apply_knobs(plan, knobs)
    extra.append(HARDWARE["dgx_h100"][2])
    desc = (f"{row['id']}: {model['name']} {row['precision']}, DGXC {row['release'][5:]}, {n}x H100 "
            f"(TP{p['tp']} PP{p['pp']} CP{p['cp']} VP{vp}, GBS {b['gbs']})")
    return scenario(row, desc, model, gpu_cluster("dgx_h100", n), plan, step_metric(row), dgxc_source(row),
                    assumptions_text(knobs, extra))


def build_dgxc_nemo1_gpt3(row):
    commit = DGXC_COMMIT[row["release"]]
    y = "nemo_megatron/gpt3_175b_hydra.yaml"
    p, b = row["parallelism"], row["batch"]
    n = row["hardware"]["count"]
    fp8 = row["precision"] == "FP8"
    extra = []
    if commit == "35a9aec":
        vp = 12
        extra.append("notes/megatron.md section 6.1: the README title says NeMo 24.11 but the recipe runs nemo:24.05 "
                     f"(NeMo 2.0.0rc0, MCore 0.7, TE 1.6; {dg(commit, 'nemo_megatron/launch.sh', 33)})")
    else:
        vp = 6
        extra.append(f"notes/megatron.md section 6.2: the row (and README title) say VP 12 but the shipped YAML has "
                     f"virtual_pipeline_model_parallel_size 6 ({dg(commit, y, 57)}): VP 6, 2 layers per virtual "
                     "stage, is used; container nemo:24.12")
    model = gpt3_nemo("gpt3-175b", 96, 12288, 49152, 96, dg(commit, y, 61) + f"; vocab {dg(commit, y, 96)}")
    plan = base_plan("megatron-core", n, 4, 8, 1, 1, b["mbs"], b["gbs"], row["seq_len"], vp)
    knobs = {"sequence_parallel": K(True, dg(commit, y, 90)),
             "recompute": K("none", dg(commit, y, 85) + " (recompute_granularity null)")}
    knobs.update(megatron_dp_knobs(dg(commit, y, 139) + " (distributed_fused_adam, Apex)", (True, dg(commit, y, 141)),
                                   (True, dg(commit, y, 142)), 220 * MIB, dg(commit, y, 140) + " (bucket_cap_mb 220)",
                                   "bf16", dg(commit, y, 155)))
    knobs["tp_comm_overlap"] = K(True, dg(commit, y, 119))
    knobs["tp_comm_overlap_sms"] = K(mean_sms(24, 20), dg(commit, y, 176) + " (proj_fprop 24, fc2_fprop 20 SMs; mean)")
    if fp8:
        knobs["matmul_dtype"] = K("fp8", dg(commit, "nemo_megatron/launch.sh", 67) if commit == "35a9aec"
                                  else dg(commit, "nemo_megatron/configure.sh", 116))
        knobs["fp8_recipe"] = K("delayed", TE_DELAYED, "default")
        knobs["fp8_param_gather"] = K(True, dg(commit, y, 221) + " (fp8_params)")
    knobs["master_copy"] = apex_master_copy(DGXC_NEMO[commit], fp8)
    apply_knobs(plan, knobs)
    extra += ["NVTE_UB_SPLIT_AG (0 BF16 / 1 FP8) is set by the launcher and not modelled", HARDWARE["dgx_h100"][2]]
    desc = f"{row['id']}: GPT-3 175B {row['precision']}, DGXC {row['release'][5:]}, {n}x H100 (TP4 PP8 VP{vp}, GBS {b['gbs']})"
    return scenario(row, desc, model, gpu_cluster("dgx_h100", n), plan, step_metric(row), dgxc_source(row),
                    assumptions_text(knobs, extra))


def build_dgxc_nemo1_nemotron(row):
    commit = DGXC_COMMIT[row["release"]]
    p, b = row["parallelism"], row["batch"]
    n = row["hardware"]["count"]
    fp8 = row["precision"] == "FP8"
    cfg = "nemotron/configure.sh"
    extra = [f"DGXC {row['release'][5:]}: container {DGXC_SOFTWARE[commit]}"]
    if row["model"] == "nemotron4_15b":
        y = "nemotron/nemotron4-15b-synth.yaml"
        model = nemotron("nemotron4-15b", 32, 6144, 24576, 48, 8, dg(commit, y, "76..105"),
                         f"SentencePiece nemotron_2_256k 256000 ({dg(commit, cfg, 88 if commit == '35a9aec' else 98)})")
        vp = 1
        if commit == "35a9aec":
            knobs = {"sequence_parallel": K(True, dg(commit, cfg, 98)),
                     "recompute": K("none", dg(commit, y, 134))}
            knobs.update(megatron_dp_knobs(dg(commit, y, 177) + " (distributed_fused_adam, Apex)",
                                           (True, dg(commit, y, 179)), (True, dg(commit, y, 180)), 100 * MIB,
                                           dg(commit, y, 178) + " (bucket_cap_mb 100)", "bf16", dg(commit, y, 193)))
            knobs["tp_comm_overlap"] = K(True, dg(commit, cfg, 97))
            fl, pl = 92, 104
        else:
            dp = n // 4
            knobs = {"sequence_parallel": K(True, dg(commit, cfg, 109)),
                     "recompute": K("none", dg(commit, y, 136))}
            knobs.update(megatron_dp_knobs(
                dg(commit, y, 179) + " (mcore_distributed_optim: MCore DDP + DistributedOptimizer)",
                (True, dg(commit, y, 181)), (True, dg(commit, y, 182)),
                mcore_default_bucket_bytes(dp, 4),
                "NVIDIA/NeMo@v2.1.0:nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py:594",
                "fp32", "NVIDIA/NeMo@v2.1.0:nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py:588",
                bucket_kind="default", bucket_note="bucket_size None -> max(40e6, 1e6*dp) parameters x 4 bytes"))
            knobs["grad_reduce_dtype"] = K("fp32", "NVIDIA/NeMo@v2.1.0:nemo/collections/nlp/models/language_modeling/"
                                           "megatron_gpt_model.py:588", "default",
                                           "grad_sync_dtype dropped from the v25.02 YAML -> fp32 reduction")
            knobs["tp_comm_overlap"] = K(True, dg(commit, cfg, 108))
            fl, pl = 103, 115
    else:  # nemotron4_340b, v24.11.1 only
        y = "nemotron/nemotron4-340b-synth.yaml"
        model = nemotron("nemotron4-340b", 96, 18432, 73728, 96, 8, dg(commit, y, "81..109"),
                         f"SentencePiece nemotron_2_256k 256000 ({dg(commit, cfg, 88)})")
        vp = 12
        knobs = {"sequence_parallel": K(True, dg(commit, cfg, 98)),
                 "recompute": K("selective", dg(commit, y, 138) + " (selective = core attention in MCore)")}
        knobs.update(megatron_dp_knobs(dg(commit, y, 183) + " (distributed_fused_adam, Apex)",
                                       (True, dg(commit, y, 187)), (True, dg(commit, y, 188)), 50 * MIB,
                                       dg(commit, y, 184) + " (bucket_cap_mb 50)", "bf16", dg(commit, y, 185)))
        knobs["master_weights_dtype"] = K("bf16", dg(commit, y, 186) + " (optim.dtype bf16: BF16 master weights and "
                                          "Adam states in Apex's distributed optimizer)")
        knobs["optimizer_state_dtype"] = K("bf16", dg(commit, y, 186))
        knobs["tp_comm_overlap"] = K(True, dg(commit, cfg, 97))
        extra.append("NVTE_UB_SPLIT_AG (0 BF16 / 1 FP8, " + dg(commit, cfg, 75) + ") is not modelled")
        fl, pl = 92, 104
    knobs["tp_comm_overlap_sms"] = K(16, TE_DEFAULT_SMS, "default", "no userbuffer table given: TE initialize_ub "
                                     "default num_sm 16 for the pipelined reduce-scatter layers")
    if fp8:
        knobs["matmul_dtype"] = K("fp8", dg(commit, cfg, fl))
        knobs["fp8_recipe"] = K("delayed", TE_DELAYED, "default")
        knobs["fp8_param_gather"] = K(True, dg(commit, cfg, pl) + " (fp8_params)")
    if "Apex" in knobs["zero"]["cite"]:
        knobs["master_copy"] = apex_master_copy(DGXC_NEMO[commit], fp8, knobs.get("master_weights_dtype",
                                                                                  {"value": "fp32"})["value"])
    plan = base_plan("megatron-core", n, p["tp"], p["pp"] or 1, 1, 1, b["mbs"], b["gbs"], row["seq_len"], vp)
    apply_knobs(plan, knobs)
    extra.append(HARDWARE["dgx_h100"][2])
    desc = (f"{row['id']}: {model['name']} {row['precision']}, DGXC {row['release'][5:]}, {n}x H100 "
            f"(TP{p['tp']} PP{p['pp']} VP{vp}, MBS {b['mbs']}, GBS {b['gbs']})")
    return scenario(row, desc, model, gpu_cluster("dgx_h100", n), plan, step_metric(row), dgxc_source(row),
                    assumptions_text(knobs, extra))


def build_dgxc_nemo1_grok(row):
    commit = DGXC_COMMIT[row["release"]]
    y, cfg = "grok1/grok1_314b.yaml", "grok1/configure.sh"
    p, b = row["parallelism"], row["batch"]
    n = row["hardware"]["count"]
    fp8 = row["precision"] == "FP8"
    layers, tp, pp, cp, ep, vp, seq, gbs = GROK1_NEMO1_SCALES[n]
    row_layers = proxy_layers(row, {gpus: scale[0] for gpus, scale in GROK1_NEMO1_SCALES.items()}, 64)
    assert (layers, tp, pp, cp, ep, vp, seq, gbs) == (row_layers, p["tp"], p["pp"], p["cp"], p["ep"], p["vp"] or 1,
                                                     row["seq_len"], b["gbs"]), row["id"]
    dp = n // (tp * pp * cp)
    lines = {"35a9aec": {"par": "49..106", "sp": 131, "mbs": 56, "tpo": 130, "opgos": (60, 126), "fp8": 127,
                         "fp8p": 137},
             "8f5cbb3": {"par": "55..112", "sp": 137, "mbs": 62, "tpo": 136, "opgos": (66, 132), "fp8": 133,
                         "fp8p": 143}}[commit]
    model = grok1(layers, "geglu", dg(commit, y, "66..100") + " (activation fast-geglu, " + dg(commit, y, 85) + ")",
                  "; vocab " + dg(commit, y, 103))
    model["moe"]["capacity_factor"] = 1.0
    knobs = {"sequence_parallel": K(True, dg(commit, cfg, lines["sp"])),
             "recompute": K("none", dg(commit, y, 126) + " (recompute_granularity null)"),
             "zero": K(1, dg(commit, y, 153) + " (mcore_distributed_optim: MCore DDP + DistributedOptimizer)"),
             "overlap_grad_reduce": K(True, dg(commit, y, 154))}
    if commit == "35a9aec":
        knobs["overlap_param_gather"] = K(True, dg(commit, y, 155), "not stated",
                                          "the YAML sets overlap_param_sync: true, which NeMo v2.1.0 maps to "
                                          "overlap_param_gather but v2.0.0 ignores (-> False); the nemo:dev build is "
                                          "unknown; the recipe's value is used")
    else:
        knobs["overlap_param_gather"] = K(True, dg(commit, y, 155) + " (NeMo v2.1.0 maps overlap_param_sync, "
                                          "NVIDIA/NeMo@v2.1.0:nemo/collections/nlp/models/language_modeling/"
                                          "megatron_gpt_model.py:596)")
    if pp > 1:
        knobs["grad_bucket_bytes"] = K(NO_BUCKETING, dg(commit, cfg, f"{lines['opgos'][0]},{lines['opgos'][1]}"),
                                       note="overlap_param_gather_with_optimizer_step with PP>1: NeMo disables "
                                            "bucketing, one bucket per model chunk")
    else:
        knobs["grad_bucket_bytes"] = K(mcore_default_bucket_bytes(dp, 2), "NVIDIA/Megatron-LM@core_v0.9.0:megatron/"
                                       "core/distributed/distributed_data_parallel.py:56", "default",
                                       "bucket_size None -> max(40e6, 1e6*dp) parameters x 2 bytes (bf16 reduction)")
    knobs["grad_reduce_dtype"] = K("bf16", dg(commit, y, 168) + " (grad_sync_dtype bf16)")
    knobs["tp_comm_overlap"] = K(True, dg(commit, cfg, lines["tpo"]))
    knobs["tp_comm_overlap_sms"] = K(16, TE_DEFAULT_SMS, "default", "ub_tp_comm_overlap_cfg null (" + dg(commit, y, 143)
                                     + "): TE initialize_ub default")
    if cp > 1:
        knobs["cp_comm"] = K("p2p", "NeMo 1.0 passes no cp_comm_type; TE default P2P ring", "default")
    knobs["moe_dispatcher"] = K("alltoall", dg(commit, y, 52))
    knobs["expert_tp"] = K(tp, "NVIDIA/Megatron-LM@core_v0.9.0:megatron/core/model_parallel_config.py:42", "default",
                           "expert tensor parallelism not set: experts use the dense TP")
    knobs["moe_grouped_gemm"] = K(False, dg(commit, y, 51))
    if fp8:
        knobs["matmul_dtype"] = K("fp8", dg(commit, cfg, lines["fp8"]) + " (fp8 hybrid)")
        knobs["fp8_recipe"] = K("delayed", TE_DELAYED, "default")
        knobs["fp8_param_gather"] = K(True, dg(commit, cfg, lines["fp8p"]) + " (fp8_params)")
    plan = base_plan("megatron-core", n, tp, pp, cp, ep, b["mbs"], gbs, seq, vp, sp=True)
    apply_knobs(plan, knobs)
    extra = [f"DGXC {row['release'][5:]}, Grok-1 recipe, parallel layout per GPU count from "
             f"{dg(commit, cfg, lines['par'])} (proxies below 512 GPUs shrink layers/PP/CP/EP)",
             "MoE: token-dropping with capacity factor 1.0 and padding to capacity (" + dg(commit, y, "53,54") +
             "), aux-loss routing; routing imbalance is not modelled",
             "README 'DP' column is DP/EP and its GA (128) does not match GBS/(MBS*DP); GBS and DP from the recipe "
             "are used (row caveat, notes/megatron.md section 6.4)", HARDWARE["dgx_h100"][2]]
    if commit == "35a9aec":
        extra.insert(0, "container nemo:dev (digest only; NeMo version not determined)")
    desc = (f"{row['id']}: {model['name']} {row['precision']}, DGXC {row['release'][5:]}, {n}x H100 "
            f"(TP{tp} PP{pp} CP{cp} EP{ep} VP{vp}, GBS {b['gbs']}, seq {row['seq_len']})")
    return scenario(row, desc, model, gpu_cluster("dgx_h100", n), plan, step_metric(row), dgxc_source(row),
                    assumptions_text(knobs, extra))


# =========================================================================================================
# 4. DGX Cloud recipes on the NeMo 2.0 path: v25.04 (741c886; NeMo d2b21556f2, nemo:25.02.01) Llama 3.1;
#    v25.05.01 (60d6fd3) and the revised dfc8039 (NeMo 6f2c6fdaff, nemo:25.04.0x) Llama 3.1 405B and Grok-1 on
#    H100. The MegatronCommOverlapCallback sets the DP overlap when DP>1 (notes/megatron.md section 3).
# =========================================================================================================

def nm(commit, path, line):
    return f"NVIDIA/NeMo@{commit}:{path}:{line}"


CALLBACK = "nemo/lightning/pytorch/callbacks/megatron_comm_overlap.py"


def nemo2_optim_step_note(dp, pp, vp):
    """The DGXC NeMo 2.0 scripts set overlap_param_gather_with_optimizer_step = dp>1 and pp>1 and vp>1."""
    if dp > 1 and pp > 1 and vp > 1:
        return ("overlap_param_gather_with_optimizer_step and align_param_gather are on (dp>1, pp>1, vp>1; "
                "scripts/performance/utils.py); whether this also disables bucketing on the NeMo 2.0 path is not "
                "stated in the notes: the callback's 128Mi-parameter buckets are used")
    return ""


def nemo2_dp_knobs(nemo, dp, grad_cite):
    """NeMo 2.0 benchmark recipes: MCore distributed optimizer; the comm-overlap callback turns DP overlap and a
    128Mi-parameter bucket on when DP>1; the precision plugin's grad_reduce_in_fp32 False -> bf16 reduction."""
    on = dp > 1
    note = "" if on else "DP=1: the callback sets no DP overlap or bucketing"
    return {"zero": K(1, nm(nemo, "nemo/collections/llm/recipes/optim/adam.py", 47) + " (MCore distributed optimizer)"),
            "overlap_grad_reduce": K(on, nm(nemo, CALLBACK, 187), note=note),
            "overlap_param_gather": K(on, nm(nemo, CALLBACK, 188), note=note),
            "grad_bucket_bytes": K(134217728 * 2, nm(nemo, CALLBACK, 186) + " (bucket_size 128*1024*1024 parameters "
                                   "x 2 bytes, bf16 reduction)"),
            "grad_reduce_dtype": K("bf16", grad_cite + " (precision plugin grad_reduce_in_fp32 False)")}


def nemo2_fp8_knobs(nemo, recipe_cite, mp_lines=(56, 70)):
    """The fp8 knobs of NeMo 2.0's bf16_with_fp8_mixed plugin (fp8 hybrid, fp8_param_gather on) and the recipe the
    run's script picks (recipe_cite)."""
    mp = "nemo/collections/llm/recipes/precision/mixed_precision.py"
    return {"matmul_dtype": K("fp8", nm(nemo, mp, mp_lines[0])),
            "fp8_recipe": K("delayed", recipe_cite),
            "fp8_param_gather": K(True, nm(nemo, mp, mp_lines[1]))}


# (model, precision, release) -> recipe facts: nemo checkout, recipe file, tp overlap line, (proj, fc2) SMs + table
NEMO2_LLAMA = {
    ("llama3_8b", "BF16", "741c886"): dict(recipe="llama3_8b.py", grad=240, tpo=(False, 231), ub=None),
    ("llama3_8b", "FP8", "741c886"): dict(recipe="llama3_8b.py", grad=240, tpo=(False, 231), ub=None),
    ("llama3_70b", "BF16", "741c886"): dict(recipe="llama3_70b.py", grad=246, tpo=(True, 232),
                                             ub=((24, 16), "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192", 79)),
    ("llama3_70b", "FP8", "741c886"): dict(recipe="llama3_70b.py", grad=246, tpo=(True, 232),
                                            ub=((24, 16), "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192", 92)),
    ("llama31_405b", "BF16", "741c886"): dict(recipe="llama31_405b.py", grad=253, tpo=(True, 239),
                                               ub=((24, 8), "userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192", 132)),
    ("llama31_405b", "FP8", "741c886"): dict(recipe="llama31_405b.py", grad=253, tpo=(True, 239),
                                              ub=((24, 8), "userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192", 145)),
    ("llama31_405b", "BF16", "60d6fd3"): dict(recipe="llama31_405b.py", grad=253, tpo=(True, 239),
                                               ub=((24, 8), "userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192", 137)),
    ("llama31_405b", "FP8", "60d6fd3"): dict(recipe="llama31_405b.py", grad=253, tpo=(True, 239),
                                              ub=((1, 1), "userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192 "
                                                  "(proj_fprop and fc2_fprop ring_exchange, num_sm 1)", 150)),
    # GB200 (v25.05, NeMo 7a8f1cc7bc): pretrain_llama31_405b.py:117-120 takes the b200 tables for gb200.
    ("llama31_405b", "BF16", "68eaf7e"): dict(recipe="llama31_405b.py", grad=253, tpo=(True, 239),
                                               ub=((32, 8), "userbuffers_bf16_b200_h16384_tp4_cp2_mbs1_seqlen8192", 163)),
    ("llama31_405b", "FP8", "68eaf7e"): dict(recipe="llama31_405b.py", grad=253, tpo=(True, 239),
                                              ub=((1, 1), "userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192 "
                                                  "(proj_fprop and fc2_fprop ring_exchange, num_sm 1)", 176)),
}


def build_dgxc_nemo2_llama(row):
    commit = DGXC_COMMIT[row["release"]]
    nemo = {"741c886": "d2b21556f2", "68eaf7e": "7a8f1cc7bc"}.get(commit, "6f2c6fdaff")
    gb200 = row["hardware"]["chip"] == "GB200"
    t = NEMO2_LLAMA[(row["model"], row["precision"], commit)]
    recipes = "nemo/collections/llm/recipes/"
    p, b = row["parallelism"], row["batch"]
    n = row["hardware"]["count"]
    fp8 = row["precision"] == "FP8"
    vp = p["vp"] or 1
    tp, pp, cp = p["tp"], p["pp"], p["cp"]
    dp = n // (tp * pp * cp)
    strategy_line = 384 if nemo == "d2b21556f2" else 423
    extra = []
    lps = None
    if commit == "741c886":
        extra.append("DGXC v25.04: recipe from NeMo d2b21556f2 + gsw_nemo.patch run inside nemo:25.02.01 (NeMo 2.2.x, "
                     "MCore 0.11.x) (notes/megatron.md section 6.11)")
        par_cite = dg(commit, "llama3.1/llama31_utils.py",
                      {"llama3_8b": 448, "llama3_70b": 449, "llama31_405b": 450}[row["model"]])
    elif gb200:
        extra.append("DGXC v25.05 on GB200: recipe from NeMo 7a8f1cc7bc (r2.3.0 llmb-nemo, "
                     + dg(commit, "llama3.1/setup.sh", 54) + ") run inside nemo:25.04.01 (NeMo 2.3.x, MCore 0.12); "
                     "the b200 userbuffer tables serve gb200 (" +
                     nm(nemo, "scripts/performance/llm/pretrain_llama31_405b.py", "113-120") + ")")
        par_cite = dg(commit, "llama3.1/launch.sh", "94..99")
    else:
        extra.append("DGXC v25.05.01: recipe from NeMo 6f2c6fdaff run inside nemo:25.04.01 (NeMo 2.3.x, MCore 0.12)")
        par_cite = dg(commit, "llama3.1/launch.sh", "105..110")
    if row["model"] == "llama31_405b":
        layers = proxy_layers(row, L405_NEMO2_LAYERS if commit == "741c886" else {}, 126)
        cfg_line = 119 if nemo == "d2b21556f2" else 267
        model = dense("llama3.1-405b" if layers == 126 else f"llama3.1-405b-proxy-{layers}l", layers, 16384, 53248,
                      128, 8, 128256,
                      f"Llama31Config405B ({nm(nemo, 'nemo/collections/llm/gpt/model/llama.py', cfg_line)}): "
                      "RoPE + Llama-3.1 scaling, SwiGLU, RMSNorm, no biases, untied, no dropout; HF Llama-3.1 "
                      "tokenizer 128256" + ("; proxies use the proxy layer count (" +
                                            dg(commit, "llama3.1/llama31_utils.py", 489) + ")"
                                            if commit == "741c886" else ""))
        if pp > 1:
            lps = embed_loss_split(layers, pp * vp)
            extra.append("pipeline split with account_for_embedding/loss_in_pipeline_split: embedding and loss each "
                         f"count as one layer, ({layers}+2)/(PP*VP) per virtual stage, the first and last chunk one "
                         f"layer fewer ({nm(nemo, recipes + 'llama31_405b.py', 72)})")
    elif row["model"] == "llama3_70b":
        model = llama_nemo("llama3.1-70b", 80, 8192, 28672, 64, 8, 128256,
                           f"Llama3Config70B ({nm(nemo, 'nemo/collections/llm/gpt/model/llama.py', 119)}); HF "
                           "Meta-Llama-3-70B tokenizer 128256")
    else:
        model = llama_nemo("llama3.1-8b", 32, 4096, 14336, 32, 8, 128256,
                           f"Llama3Config8B ({nm(nemo, 'nemo/collections/llm/gpt/model/llama.py', 119)}); HF "
                           "Meta-Llama-3-8B tokenizer 128256")
    plan = base_plan("megatron-core", n, tp, pp, cp, 1, b["mbs"], b["gbs"], row["seq_len"], vp,
                     layers_per_stage=lps)
    knobs = {"sequence_parallel": K(tp > 1, nm(nemo, "scripts/performance/utils.py", 224 if nemo == "d2b21556f2" else 356)),
             "recompute": K("none", "recipes and patch set no recompute; MCore recompute_granularity None "
                            "(NVIDIA/Megatron-LM@core_v0.11.0:megatron/core/transformer/transformer_config.py:191)",
                            "default")}
    knobs.update(nemo2_dp_knobs(nemo, dp, nm(nemo, recipes + t["recipe"], t["grad"]) + " ; " +
                                nm(nemo, "nemo/lightning/pytorch/strategies/megatron_strategy.py", strategy_line)))
    knobs["tp_comm_overlap"] = K(t["tpo"][0], nm(nemo, recipes + t["recipe"], t["tpo"][1]))
    if t["ub"]:
        (proj, fc2), name, line = t["ub"]
        knobs["tp_comm_overlap_sms"] = K(mean_sms(proj, fc2), nm(nemo, recipes + "tp_overlap_configs/userbuffers.py", line)
                                         + f" ({name}: proj_fprop {proj}, fc2_fprop {fc2} SMs; mean)")
    if cp > 1:
        knobs["cp_comm"] = K("p2p", "cp_comm_type None -> p2p (NVIDIA/Megatron-LM@core_v0.11.0:megatron/core/"
                             "extensions/transformer_engine.py:675)", "default")
    if fp8:
        mp_line = (46, 53) if nemo == "d2b21556f2" else (56, 70)
        knobs.update(nemo2_fp8_knobs(nemo, nm(nemo, recipes + "precision/mixed_precision.py", mp_line[0]) +
                                     " (tensor-wise delayed scaling, amax history 1024)", mp_line))
    apply_knobs(plan, knobs)
    extra.append(f"parallel layout from {par_cite}")
    extra.append(nemo2_optim_step_note(dp, pp, vp))
    if commit == "60d6fd3":
        extra.append("README config table lists GA 32 for 512 H100 but GBS 256/(MBS 1 x DP 4) = 64 "
                     f"({dg(commit, 'llama3.1/README.md', 25)}); the recipe's GBS is used")
        extra.append("step time is the mean of iterations 11-44 (DGXC v25.05+)")
    if gb200:
        extra.append("step time is the mean of iterations 11-44 (" + dg(commit, "llama3.1/README.md", 24) + ")")
    extra.append(HARDWARE["dgx_gb200" if gb200 else "dgx_h100"][2])
    desc = (f"{row['id']}: {model['name']} {row['precision']}, DGXC {row['release'][5:]}, {n}x "
            f"{'GB200' if gb200 else 'H100'} (TP{tp} PP{pp} CP{cp} VP{vp}, GBS {b['gbs']})")
    cluster = gb200_cluster(n) if gb200 else gpu_cluster("dgx_h100", n)
    return scenario(row, desc, model, cluster, plan, step_metric(row), dgxc_source(row),
                    assumptions_text(knobs, extra))


def build_dgxc_nemo2_grok(row):
    commit = DGXC_COMMIT[row["release"]]
    gb200 = row["hardware"]["chip"] == "GB200"
    nemo = "7a8f1cc7bc" if gb200 else "6f2c6fdaff"
    script = "scripts/performance/llm/pretrain_grok1_314b.py"
    p, b = row["parallelism"], row["batch"]
    n = row["hardware"]["count"]
    fp8 = row["precision"] == "FP8"
    if gb200:
        # grok1/launch.sh:77-90 for gb200: TP4 PP1 CP1 EP8 VP1 ET8, GBS 2*GPUs, CUDA graphs on. The README's table
        # (grok1/README.md:16-21) says ETP 4; shardsim's expert_tp must be 1 or tp, so ETP 8 (experts split 8 ways
        # over an EP x ETP group of 64) is not expressible: the README's ETP 4 = TP is used.
        tp, pp, cp, ep, vp, etp = 4, 1, 1, 8, 1, 4
        par_cite = dg(commit, "grok1/launch.sh", "77..90")
    else:
        tp, pp, cp, ep, vp, etp = 4, 8, 2, 8, 8, 1
        par_cite = dg(commit, "grok1/launch.sh", "107..118")
    dp = n // (tp * pp * cp)
    model = grok1(64, "swiglu", nm(nemo, script, 83) + " builds Grok-1 from MixtralConfig8x7B (" +
                  nm(nemo, "nemo/collections/llm/gpt/model/mixtral.py", 36) + "): SwiGLU experts, not the GeGLU of "
                  "the NeMo-1.0 recipe, pre-softmax router", "; vocab " + nm(nemo, script, 337))
    plan = base_plan("megatron-core", n, tp, pp, cp, ep, b["mbs"], b["gbs"], row["seq_len"], vp, sp=True)
    knobs = {"sequence_parallel": K(True, nm(nemo, "scripts/performance/utils.py", 356)),
             "recompute": K("none", nm(nemo, "scripts/performance/utils.py", 411) + " (no Grok row in the "
                            "recommended configs -> no recompute)", "default")}
    knobs.update(nemo2_dp_knobs(nemo, dp, nm(nemo, script, 221)))
    knobs["tp_comm_overlap"] = K(True, nm(nemo, script, 206))
    knobs["tp_comm_overlap_sms"] = K(1, nm(nemo, "nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py", 176)
                                     + " (userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192, used for every GPU and "
                                     "precision: proj_fprop and fc2_fprop ring_exchange, num_sm 1)")
    if cp > 1:
        knobs["cp_comm"] = K("p2p", "cp_comm_type None -> p2p (NVIDIA/Megatron-LM@core_v0.12.0:megatron/core/"
                             "extensions/transformer_engine.py:680)", "default")
    knobs["moe_dispatcher"] = K("alltoall", nm(nemo, "nemo/collections/llm/gpt/model/mixtral.py", 63))
    if gb200:
        knobs["expert_tp"] = K(etp, dg(commit, "grok1/README.md", "16..21") + " (ETP 4)", "not stated",
                               "launch.sh passes -et 8 (" + dg(commit, "grok1/launch.sh", 84) + "), which shardsim "
                               "cannot express (expert_tp must be 1 or tp); the README's ETP 4 = TP is used")
    else:
        knobs["expert_tp"] = K(1, dg(commit, "grok1/launch.sh", 112) + " (ETP 1)")
    knobs["moe_grouped_gemm"] = K(False, "NVIDIA/Megatron-LM@core_v0.12.0:megatron/core/transformer/"
                                  "transformer_config.py:397", "default", "not set by MixtralConfig or the script: "
                                  "SequentialMLP experts")
    if fp8:
        knobs.update(nemo2_fp8_knobs(nemo, nm(nemo, "scripts/performance/argument_parser.py", 131) + " (fp8_recipe "
                                     "default 'ds', delayed scaling)"))
    apply_knobs(plan, knobs)
    if gb200:
        extra = [f"DGXC {row['release'][5:]} on GB200: NeMo 7a8f1cc7bc recipe ({dg(commit, 'grok1/setup.sh', 55)}) in "
                 f"nemo:25.04.00; parallel layout from {par_cite} (TP4 PP1 CP1 EP8 VP1, GBS 2*GPUs); CUDA graphs on "
                 f"({dg(commit, 'grok1/launch.sh', 90)}): training CUDA graphs are not modelled (each kernel pays its "
                 "launch time)"]
    else:
        extra = [f"DGXC {row['release'][5:]}: NeMo 6f2c6fdaff recipe in nemo:25.04.00; parallel layout from "
                 f"{par_cite} (TP4 PP8 CP2 EP8 ETP1 VP8, GBS 2*GPUs)"]
    extra += ["MoE: token dropping at capacity factor 1.0 with padding (" +
              nm(nemo, "nemo/lightning/pytorch/callbacks/moe_token_drop.py", "38,39") + "); routing imbalance not "
              "modelled" + ("" if gb200 else "; 1 layer per virtual stage (64/(8*8)), no embedding/loss accounting "
                            "stated"),
              nemo2_optim_step_note(dp, pp, vp), "step time is the mean of iterations 11-44 (DGXC v25.05+)",
              HARDWARE["dgx_gb200" if gb200 else "dgx_h100"][2]]
    if commit == "dfc8039":
        extra.insert(1, "dfc8039 changes only the README numbers; launch/setup identical to 60d6fd3")
    layout = f"TP{tp} PP{pp} CP{cp} EP{ep} ETP{etp} VP{vp}"
    desc = (f"{row['id']}: Grok-1 314B {row['precision']}, DGXC {row['release'][5:].split(' ')[0]}, {n}x "
            f"{'GB200' if gb200 else 'H100'} ({layout}, GBS {b['gbs']})")
    cluster = gb200_cluster(n) if gb200 else gpu_cluster("dgx_h100", n)
    return scenario(row, desc, model, cluster, plan, step_metric(row), dgxc_source(row),
                    assumptions_text(knobs, extra))


# (precision) -> userbuffer table of the b200/gb200 Nemotron-4 340B recipe (NeMo b4148d2169 userbuffers.py)
NEMOTRON_GB200_UB = {"BF16": ((1, 24), "userbuffers_bf16_b200_h18432_tp8_mbs1_seqlen4096", 312),
                     "FP8": ((1, 1), "userbuffers_fp8_b200_h18432_tp8_mbs1_seqlen4096", 325)}


def build_dgxc_nemo2_nemotron(row):
    """DGXC v25.05 Nemotron-4 340B on GB200: NeMo 2.0 performance script (NeMo b4148d2169) in nemo:25.04.00."""
    commit = DGXC_COMMIT[row["release"]]
    nemo = "b4148d2169"
    script = "scripts/performance/llm/pretrain_nemotron4_340b.py"
    recipe = "nemo/collections/llm/recipes/nemotron4_340b.py"
    p, b = row["parallelism"], row["batch"]
    n = row["hardware"]["count"]
    fp8 = row["precision"] == "FP8"
    tp, pp, cp, vp = p["tp"], p["pp"], 1, p["vp"]
    assert (tp, pp, vp, b["mbs"]) == (8, 4, 12, 1), row["id"]
    strong = b["gbs"] == 512
    assert b["gbs"] == (512 if strong else n // 4), row["id"]
    dp = n // (tp * pp * cp)
    model = nemotron("nemotron4-340b", 96, 18432, 73728, 96, 8,
                     f"Nemotron4Config340B ({nm(nemo, 'nemo/collections/llm/gpt/model/nemotron.py', '136..148')})",
                     f"NullTokenizer of 256000 ({nm(nemo, script, '93..95')})")
    plan = base_plan("megatron-core", n, tp, pp, cp, 1, b["mbs"], b["gbs"], row["seq_len"], vp, sp=True)
    knobs = {"sequence_parallel": K(True, nm(nemo, "scripts/performance/utils.py", 356)),
             "recompute": K("none", nm(nemo, "scripts/performance/recommended_model_configs/model_configs_gb200.csv",
                                       "20,21") + " (recompute_layers 0)")}
    knobs.update(nemo2_dp_knobs(nemo, dp, nm(nemo, recipe, 226)))
    knobs["tp_comm_overlap"] = K(True, nm(nemo, recipe, 213))
    (proj, fc2), name, line = NEMOTRON_GB200_UB[row["precision"]]
    knobs["tp_comm_overlap_sms"] = K(mean_sms(proj, fc2), nm(nemo, "nemo/collections/llm/recipes/tp_overlap_configs/"
                                     "userbuffers.py", line) + f" ({name}, taken for gb200 by {script}:102-106: "
                                     f"proj_fprop {proj}, fc2_fprop {fc2} SMs; mean)")
    if fp8:
        knobs.update(nemo2_fp8_knobs(nemo, nm(nemo, "scripts/performance/utils.py", 428) + " (fp8_recipe None -> "
                                     "'ds', delayed scaling)"))
    apply_knobs(plan, knobs)
    extra = [f"DGXC {row['release'][5:]} on GB200: NeMo {nemo} recipe ({dg(commit, 'nemotron/setup.sh', 54)}) in "
             f"nemo:25.04.00; layout TP8 PP4 VP12 MBS1 from {dg(commit, 'nemotron/launch.sh', '109..121')}, GBS "
             + ("512 (STRONG_SCALING=true, " + dg(commit, "nemotron/launch.sh", 114) + ")" if strong else
                "GPUs/4 (" + dg(commit, "nemotron/launch.sh", 117) + ")"),
             "CUDA graphs on (" + dg(commit, "nemotron/launch.sh", 162) + "): training CUDA graphs are not modelled",
             "96 layers over PP4 x VP12: 2 per virtual stage, no embedding/loss accounting in the recipe",
             "defer_embedding_wgrad_compute (" + nm(nemo, recipe, 214) + ") is not modelled",
             nemo2_optim_step_note(dp, pp, vp), "step time is the mean of iterations 11-44 (DGXC v25.05+)",
             HARDWARE["dgx_gb200"][2]]
    desc = (f"{row['id']}: Nemotron-4 340B {row['precision']}, DGXC {row['release'][5:]}, {n}x GB200 "
            f"(TP{tp} PP{pp} VP{vp}, MBS {b['mbs']}, GBS {b['gbs']})")
    return scenario(row, desc, model, gb200_cluster(n), plan, step_metric(row), dgxc_source(row),
                    assumptions_text(knobs, extra))


# =========================================================================================================
# 5. Megatron-LM MoE README (r0545 MCore v0.8 @0b981f9c53, r0546 MCore v0.9 @c230e0d7c2): Mixtral 8x7B, 64 H100,
#    TFLOP/s only. The 'Reference Best Parallel Mapping' (TP1 EP8 PP4 VP8, MBS 1, GBS 256, seq 4096, dropless
#    all-to-all) is taken as the headline run's (an inference the notes flag).
# =========================================================================================================

MLM_README = {"r0545": ("0b981f9c53", 302, 307, 51, 289, 74, "MCore v0.8, README: PyTorch 24.04 / TE 1.9 (the "
                        "source entry's PyTorch 24.09 / TE 1.11 appears only at c230e0d7c2; notes/megatron.md "
                        "section 6.8)"),
              "r0546": ("c230e0d7c2", 363, 368, 56, 344, 98, "MCore v0.9, PyTorch 24.09 / TE 1.11")}


def build_mlm_mixtral(row):
    commit, map_line, hw_line, gg_line, ov_line, flops_line, sw = MLM_README[row["id"]]
    rd = f"NVIDIA/Megatron-LM@{commit}:megatron/core/transformer/moe/README.md"
    args = f"NVIDIA/Megatron-LM@{commit}:megatron/training/arguments.py"
    n, gbs, seq = 64, 256, 4096
    model = mixtral_8x7b(f"{rd}:{168 if commit == '0b981f9c53' else 222}", 1.0,
                         "dropless all-to-all with aux-loss routing: capacity_factor 1.0 (imbalance not modelled)")
    plan = base_plan("megatron-core", n, 1, 4, 1, 8, 1, gbs, seq, 8)
    dp = n // 4
    knobs = {
        "recompute": K("none", f"{args}:{1022 if commit == '0b981f9c53' else 1097}", "not stated",
                       "Megatron-LM default recompute_granularity None"),
        "zero": K(1, f"{rd}:{78 if commit == '0b981f9c53' else 86}", "not stated",
                  "the README's example script and practice use --use-distributed-optimizer"),
        "overlap_grad_reduce": K(True, f"{rd}:{ov_line}", "not stated", "recommended / example script"),
        "overlap_param_gather": K(True, f"{rd}:{ov_line}", "not stated", "recommended / example script"),
        "grad_reduce_dtype": K("fp32", f"{args}:{313 if commit == '0b981f9c53' else 340}", "default",
                               "--bf16 forces fp32 gradient accumulation and reduction"),
        "grad_bucket_bytes": K(mcore_default_bucket_bytes(dp, 4), f"{args}:{1453 if commit == '0b981f9c53' else 1574}",
                               "default", "bucket_size None -> max(40e6, 1e6*dp) parameters x 4 bytes"),
        "tp_comm_overlap": K(False, "TP=1"),
        "moe_dispatcher": K("alltoall", f"{rd}:{map_line}"),
        "expert_tp": K(1, "TP=1", "default"),
        "moe_grouped_gemm": K(True, f"{rd}:{gg_line}", "not stated",
                              "the README's example script passes --moe-grouped-gemm (one local expert per rank)"),
    }
    apply_knobs(plan, knobs)
    flops = megatron_lm_flops(gbs, seq, 32, 4096, 14336, 32, 8, 128, 32000, 2, True)
    tflops = row["measured"]["tflops_per_gpu"]
    step = flops / (tflops * 1e12 * n)
    extra = [sw, f"parallel mapping: {rd}:{map_line} (the table is titled as MCore v0.8's reference mapping; that "
             "the headline TFLOP/s used it is an inference)", HARDWARE["mlm_h100"][2].replace(
                 "c230e0d7c2:megatron/core/transformer/moe/README.md:368", f"{commit}:megatron/core/transformer/moe/"
                 f"README.md:{hw_line}"),
             f"step_time_s is derived from the published {tflops} TFLOP/s/GPU with Megatron-LM's "
             f"num_floating_point_operations (NVIDIA/Megatron-LM@{commit}:megatron/training/training.py:{flops_line}: "
             "non-causal, top-k routed experts, padded vocab 32000, no recompute): "
             f"{flops:.4e} FLOPs per iteration / (TFLOP/s x 64)"]
    desc = f"{row['id']}: Mixtral 8x7B BF16, Megatron-Core MoE README ({sw.split(',')[0]}), 64x H100 (TP1 EP8 PP4 VP8)"
    return scenario(row, desc, model, gpu_cluster("mlm_h100", n), plan, [("step_time_s", round(step, 4))],
                    f"Megatron-LM MoE README @{commit}, {row['locator']}", assumptions_text(knobs, extra))


# =========================================================================================================
# 6. BLOOM-176B (r0575): Megatron-DeepSpeed, 384 A100, log line at iteration 12695.
# =========================================================================================================

def build_bloom(row):
    sl = "bigscience-workshop/bigscience@badbb5b:train/tr11-176B-ml/tr11-176B-ml.slurm"
    mds = "bigscience-workshop/Megatron-DeepSpeed@affff3d2"
    model = dense("bloom-176b", 70, 14336, 57344, 112, 112, 250880,
                  f"{sl}:71 (70 layers, hidden 14336, 112 heads, FFN 4h Megatron default), ALiBi ({sl}:119), "
                  f"embedding LayerNorm ({sl}:116, not modelled), tied embeddings ({mds}:megatron/model/gpt_model.py:225), "
                  f"vocab padded to 250880 by --pad-vocab-size-to ({sl}:123), GeLU, LayerNorm, biases; dropout not set "
                  f"in the script -> Megatron-DeepSpeed default 0.1/0.1 ({mds}:megatron/arguments.py:456,458)",
                  mlp="gelu", norm="layernorm", position="alibi", tied=True, dropout=True, bias=True)
    plan = base_plan("deepspeed", 384, 4, 12, 1, 1, 2, 2048, 2048, 1, sp=False,
                     layers_per_stage=[5] + [6] * 10 + [5])
    knobs = {
        "recompute": K("full", f"{sl}:120 (--checkpoint-activations, checkpoint_num_layers 1)"),
        "zero": K(1, f"{sl}:142 (ZeRO stage 0, but the BF16 optimizer shards fp32 master weights and optimizer "
                  "state across DP: ZeRO-1 equivalent per the script comment)"),
        "attention": K("unfused", f"{sl}:121 (fused masked-softmax kernel, no flash attention in Megatron-DeepSpeed "
                       "of 2022: scores and softmax through HBM)"),
    }
    apply_knobs(plan, knobs)
    extra = ["pipeline partition type:transformer|embedding: 70 blocks + 2 embedding units over 12 stages -> stage 0 "
             f"embedding + 5 blocks, stage 11 5 blocks + tied head, others 6 ({sl}:103; "
             f"{mds}:megatron/model/gpt_model.py:312); DeepSpeed's non-interleaved pipeline schedule as 1F1B",
             f"CUDA_LAUNCH_BLOCKING=1 is exported by the script ({sl}:198) and serialises kernel launches: not "
             "modelled (notes/megatron.md section 6.12)", HARDWARE["jean_zay"][2],
             "the code checkout used on Jean Zay is not pinned (notes); GBS rampup finished before iteration 12695",
             "the gradient-reduction overlap and dtype of DeepSpeed's BF16 optimizer are not stated in the notes: "
             "shardsim's deepspeed framework defaults are used"]
    desc = "r0575: BLOOM-176B BF16, Megatron-DeepSpeed, 384x A100 80GB (TP4 PP12 DP8, MBS 2, GBS 2048)"
    return scenario(row, desc, model, gpu_cluster("jean_zay", 384), plan, step_metric(row),
                    f"BigScience BLOOM-176B training chronicles, {row['locator']}", assumptions_text(knobs, extra))


# =========================================================================================================
# 7. JAX: DGXC MaxText / Paxml on H100, MaxText on A3, MaxText on TPU v4 (2023) and v6e (tpu-recipes).
# =========================================================================================================

def mx(commit, path, line=None):
    return f"AI-Hypercomputer/maxtext@{commit}:{path}" + (f":{line}" if line is not None else "")


def dgxc_fsdp_layout(n):
    """DGXC MaxText/Paxml FSDP rule (dgxc maxtext/configure.sh:33-51, paxml/configure.sh:58): ici_fsdp 8 and
    dcn_fsdp = nodes below 64 nodes, else dcn_fsdp 16 and DP across the rest -> FSDP group of min(n, 128)."""
    return min(n, 128)


def llama_maxtext(name, layers, hidden, ffn, heads, kv, vocab, cite):
    return dense(name, layers, hidden, ffn, heads, kv, vocab,
                 f"{cite}: SwiGLU, RMSNorm, RoPE, no biases, untied logits; dropout not recorded in the notes "
                 "(none assumed)", head_dim=128)


MAXTEXT_DGXC = {
    # (model, precision) -> release commit, MaxText proxy commit, config lines, recompute
    ("llama2_70b", "BF16"): dict(commit="35a9aec", mt="02a8f5c19", seq=135, mbs=(33, 125), model=126,
                                 recompute=("custom", ["decoder_layer_input", "query_proj", "key_proj", "value_proj",
                                                       "out_proj", "mlpwo"], "72,81-88,127,149")),
    ("llama2_70b", "FP8"): dict(commit="35a9aec", mt="02a8f5c19", seq=135, mbs=(33, 125), model=126,
                                recompute=("custom", ["decoder_layer_input", "query_proj", "key_proj", "value_proj",
                                                      "out_proj"], "55,63-69,127,149"), quant=(54, 136)),
    ("llama3_70b", "BF16"): dict(commit="8f5cbb3", mt="7f16e75f4", seq=119, mbs=(33, 109), model=110,
                                 recompute=("save_qkv_proj", None, "41,111,133")),
    ("llama3_70b", "FP8"): dict(commit="8f5cbb3", mt="7f16e75f4", seq=119, mbs=(33, 109), model=110,
                                recompute=("save_qkv_proj", None, "41,111,133"), quant=(53, 120)),
}


def build_dgxc_maxtext(row):
    t = MAXTEXT_DGXC[(row["model"], row["precision"])]
    c, mt = t["commit"], t["mt"]
    cfg = "maxtext/configure.sh"
    n = row["hardware"]["count"]
    fsdp = dgxc_fsdp_layout(n)
    mbs = 2
    if row["model"] == "llama2_70b":
        model = llama_maxtext("llama2-70b", 80, 8192, 28672, 64, 8, 32000,
                              f"{dg(c, cfg, t['model'])} model_name=llama2-70b ({mx(mt, 'MaxText/configs/models/llama2-70b.yml')})")
    else:
        model = llama_maxtext("llama3-70b", 80, 8192, 28672, 64, 8, 128256,
                              f"{dg(c, cfg, t['model'])} model_name=llama3-70b ({mx(mt, 'MaxText/configs/models/llama3-70b.yml')}), "
                              "RoPE theta 500000")
    plan = base_plan("maxtext", n, 1, 1, 1, 1, mbs, mbs * n, row["seq_len"])
    kind, keep, lines = t["recompute"]
    knobs = {"zero": K(3, dg(c, cfg, "33-51") + " (ici_fsdp 8 x dcn_fsdp; FSDP sharding of weights, gradients and "
                       "optimizer state)")}
    if fsdp < n:
        knobs["fsdp_shard_size"] = K(fsdp, dg(c, cfg, "48-51") + f" (>= 64 nodes: dcn_fsdp 16 -> FSDP {fsdp}, DP "
                                     f"{n // fsdp} across)")
    knobs["recompute"] = K(kind, dg(c, cfg, lines) + (" (remat_policy=save_dot_except_mlp* in BASE_CONFIG, "
                                                      "overridden by the later remat_policy=custom; last key wins, "
                                                      f"{mx(mt, 'MaxText/pyconfig.py', '247-250')})"
                                                      if kind == "custom" else " (remat_policy save_qkv_proj)"))
    if keep:
        knobs["recompute_keep"] = K(keep, dg(c, cfg, lines) + " (tensors set to 'device'; decoder_layer_input "
                                    f"'device' by default, {mx(mt, 'MaxText/configs/base.yml', 168)}; "
                                    "qkv_proj=device has no effect)")
    knobs["fsdp_prefetch"] = K(True, dg(c, cfg, "96-121") + " (pipelined all-gather + while-loop double buffering "
                               "+ latency-hiding scheduler: layer i+1's all-gather overlaps layer i)")
    knobs["memory_reserved_bytes"] = jax_pool(0.94, dg(c, cfg, "40"))
    knobs["embedding_matmul"] = K(True, dg(c, cfg, 123 if c == "35a9aec" else 107) + " (BASE_CONFIG "
                                  "use_iota_embed=true: the lookup as a one-hot matmul)")
    if "quant" in t:
        knobs["matmul_dtype"] = K("fp8", dg(c, cfg, f"{t['quant'][0]},{t['quant'][1]}") + " (quantization=fp8: flax "
                                  f"Fp8DotGeneralOp, {mx('02a8f5c19', 'MaxText/layers/quantizations.py', '192-200')})")
        knobs["fp8_recipe"] = K("delayed", "flax Fp8DotGeneralOp: delayed scaling, amax history 1024, e4m3 / e5m2 "
                                "(notes/jax.md section 1.4)")
        knobs["fp8_casts_fused"] = K(True, "XLA fuses flax's quantise ops into the producers' fusions and folds the "
                                     "scales into cuBLASLt fp8 GEMMs (openxla/xla xla/service/gpu/transforms/"
                                     "gemm_rewriter.cc); shardsim's maxtext default", "default")
    apply_knobs(plan, knobs)
    image = "ghcr.io/nvidia/jax:maxtext-2024-12-09" if c == "35a9aec" else "nvcr.io/nvidia/jax:25.01-maxtext-py3"
    extra = [f"DGXC {row['release'][5:]}; MaxText inside {image}, "
             f"exact commit not stated (read at {mt}); per_device_batch_size {mbs} ({dg(c, cfg, t['mbs'][1])}), "
             f"seq {row['seq_len']} ({dg(c, cfg, t['seq'])}), GA 1 (base.yml default)",
             f"FSDP {fsdp} x DP {n // fsdp} (notes/jax.md per-row layout)",
             "weights fp32 and AdamW moments in the parameter dtype (base.yml weight_dtype float32, default); the "
             "FSDP collective dtypes are not stated (notes/jax.md section 6): shardsim's maxtext defaults",
             "cuDNN flash attention through Transformer Engine (attention=cudnn_flash_te, NVTE_FUSED_ATTN=1); XLA "
             "collective-combine thresholds and PGLE are not modelled", HARDWARE["dgxc_h100_jax"][2]]
    if "quant" in t:
        extra.insert(1, "FP8 is flax/XLA-native (Fp8DotGeneralOp) on q, k, v, o and the MLP GEMMs; LM head, "
                     "embedding and attention stay BF16; MFU was published against the FP8 peak")
    desc = (f"{row['id']}: {model['name']} {row['precision']}, DGXC {row['release'][5:]} MaxText, {n}x H100 "
            f"(FSDP {fsdp} x DP {n // fsdp}, per-device batch {mbs})")
    return scenario(row, desc, model, gpu_cluster("dgxc_h100_jax", n), plan, step_metric(row), dgxc_source(row),
                    assumptions_text(knobs, extra))


def build_dgxc_paxml(row):
    c = "35a9aec"
    cfg = "paxml/configure.sh"
    pax = "google/paxml@4a6bf20:paxml/contrib/gpu/scripts_gpu/configs.py"
    n = row["hardware"]["count"]
    fp8 = row["precision"] == "FP8"
    if row["model"] == "gpt3_175b":
        fsdp, mbs = 128, 2
        model = dense("gpt3-175b-paxml", 96, 12288, 49152, 96, 96, 50257,
                      f"{pax}:225-277 + JAX-Toolbox PR-46 (DIMS_PER_HEAD 128): learned positions, tied embedding, "
                      "GeLU, biases, LayerNorm (TE: zero-centred gamma), dropout 0; vocab 50257 (:235)",
                      mlp="gelu", norm="layernorm", position="learned", tied=True, bias=True, head_dim=128)
        keep = ["qkv_proj", "out_proj"]
        remat = ("NVIDIA/dgxc-benchmarking@35a9aec:paxml/paxml_mod_configs.py:29-31 (CHECKPOINT_POLICY "
                 "SAVE_QKV_OUT_PROJ: TE's combined_qkv_proj and out_proj saved; praxis@1358698:praxis/layers/"
                 "checkpoint_policy.py:55-58)")
        layout = dg(c, cfg, "58,69,114") + " (DCN mesh [nodes/16, 16, 1] x ICI [1, 8, 1]: FSDP 128, DP across)"
    else:
        fsdp, mbs = 8, 4
        model = dense("gpt3-5b-paxml", 24, 4096, 16384, 32, 32, 50304,
                      f"{pax}:180-221: learned positions, tied embedding, GeLU, biases, LayerNorm; vocab 50304 "
                      "inherited from GPT126MBase (:112); input (embedding) dropout 0.1 (:220) only, layer dropout 0",
                      mlp="gelu", norm="layernorm", position="learned", tied=True, bias=True, head_dim=128)
        keep = ["qkv_proj", "out_proj", "mlpwi", "mlpwo"]
        remat = ("NVIDIA/dgxc-benchmarking@35a9aec:paxml/paxml_mod_configs.py:25-27 (CHECKPOINT_POLICY SAVE_DOT_ONLY "
                 "= checkpoint_dots, praxis@1358698:praxis/layers/checkpoint_policy.py:51-52)")
        layout = (dg(c, cfg, "52,69,114") + " (DCN mesh [nodes, 1, 1] x ICI [1, 8, 1]: FSDP 8 inside a node, DP "
                  "across nodes)")
    plan = base_plan("maxtext", n, 1, 1, 1, 1, mbs, mbs * n, 2048)
    knobs = {"zero": K(3, layout)}
    if fsdp < n:
        knobs["fsdp_shard_size"] = K(fsdp, layout)
    knobs["recompute"] = K("custom", remat)
    knobs["recompute_keep"] = K(keep, remat)
    knobs["fused_qkv"] = K(True, "Transformer Engine attention computes one fused QKV GEMM (combined_qkv_proj; "
                           "notes/jax.md section 4.5)")
    knobs["fsdp_prefetch"] = K(True, dg(c, cfg, 27) + " (async + pipelined all-gather with the latency-hiding "
                               "scheduler; while_loop_double_buffering=false)", note="")
    knobs["memory_reserved_bytes"] = jax_pool(0.94 if row["model"] == "gpt3_175b" and not fp8 else 0.9,
                                              dg(c, cfg, "50-71"))
    knobs["embedding_matmul"] = K(True, "google/paxml@4a6bf20:paxml/tasks/lm/params/c4.py:344 (TransformerLmSpmdAdam "
                                  "EMBEDDING_LOOKUP_STYLE 'matmul', inherited by GPT126MBase) and " + pax +
                                  ":62-69 (the shared embedding's lookup_style): the lookup as a one-hot matmul; the "
                                  "learned positions' lookup too (a 2048-wide one-hot, not charged)")
    if fp8:
        knobs["matmul_dtype"] = K("fp8", dg(c, cfg, "42-44") + " (ENABLE_FP8=1: TE fp8_autocast)")
        knobs["fp8_recipe"] = K("delayed", "JAX-Toolbox@dbac0a72 patches/paxml/PR-46.patch te_helper.py "
                                "(DelayedScaling HYBRID, amax history 1024)")
        knobs["fp8_casts_fused"] = K(False, "Transformer Engine's JAX layers (ENABLE_TE=1) quantise in their own "
                                     "cast / cast-transpose kernels, not in XLA fusions (TransformerEngine v1.4 "
                                     "transformer_engine/jax/flax/module.py)", "default")
    apply_knobs(plan, knobs)
    extra = ["container ghcr.io/nvidia/jax:pax-2024-03-04 (paxml 4a6bf20 + JAX-Toolbox patches); the row's 'paxml "
             "24.11' is the DGXC version, not Pax's (notes/jax.md section 5.4)",
             f"row fsdp_degree null -> {fsdp} (notes); per-core batch {mbs}; MAX_SEQ_LEN 2048 (google/paxml@4a6bf20:"
             "paxml/contrib/gpu/scripts_gpu/configs.py:111)",
             "TE layers (ENABLE_TE=1) with fused attention in BF16; weights fp32 (praxis default), Adam state in "
             "the parameter dtype; FSDP collective dtypes not stated: shardsim's maxtext defaults",
             "the DGXC FLOP formula uses V 51200, the config " + str(model["vocab"]),
             "step time: last logged 'train_step() took' line (DGXC README); whether Pax's timer includes device "
             "completion is not established (notes/jax.md section 1.6)", HARDWARE["dgxc_h100_jax"][2]]
    desc = (f"{row['id']}: {model['name']} {row['precision']}, DGXC v24.11.1 Paxml, {n}x H100 "
            f"(FSDP {fsdp} x DP {n // fsdp}, per-core batch {mbs})")
    return scenario(row, desc, model, gpu_cluster("dgxc_h100_jax", n), plan, step_metric(row), dgxc_source(row),
                    assumptions_text(knobs, extra))


def build_maxtext_a3(row):
    c = "d2aa7f25"
    n = row["hardware"]["count"]
    vms = n // 8
    script = mx(c, f"MaxText/configs/a3/llama_2_7b/{vms}vm.sh")
    model = llama_maxtext("llama2-7b", 32, 4096, 11008, 32, 32, 32000,
                          f"{script} model_name=llama2-7b ({mx(c, 'MaxText/configs/models/llama2-7b.yml')})")
    plan = base_plan("maxtext", n, 1, 1, 1, 1, 4, 4 * n, 4096)
    knobs = {"zero": K(3, f"{script} (ici_fsdp_parallelism=8, dcn_data_parallelism={vms})")}
    if n > 8:
        knobs["fsdp_shard_size"] = K(8, f"{script} (FSDP inside the VM, DP across VMs)")
    knobs["recompute"] = K("save_dots", f"{script} (remat_policy=minimal_flash: every weight-matmul output and the "
                           f"attention context kept, {mx(c, 'MaxText/layers/models.py', '255-261')})")
    knobs["fsdp_prefetch"] = K(True, f"{script} (pipelined all-gather, while-loop double buffering, latency-hiding "
                               "scheduler)")
    knobs["memory_reserved_bytes"] = jax_pool(0.85, script)
    knobs["embedding_matmul"] = K(True, f"{script} (use_iota_embed=true: the lookup as a one-hot matmul)")
    apply_knobs(plan, knobs)
    N = 6_738_415_616
    tflop = maxtext_apr2024_tflop_per_device(N, 4096, 4, 32, 32, 128)
    published = row["measured"]["tflops_per_gpu"]
    extra = ["per_device_batch_size 4, max_target_length 4096, scan_layers=false, attention cudnn_flash_te, "
             f"use_iota_embed as embedding_matmul (all scripts alike, notes/jax.md section 4.8); logits_dot_in_fp32 True "
             f"({mx(c, 'MaxText/configs/base.yml', 87)}, default: the LM head runs in fp32) is not modelled",
             "weights fp32 (base.yml :72) and AdamW moments in the parameter dtype; FSDP collective dtypes not "
             "stated: shardsim's maxtext defaults", HARDWARE["a3_high"][2],
             f"step_time_s is derived from the published {published} TFLOP/s/device with MaxText's Apr-2024 count "
             f"({mx(c, 'MaxText/maxtext_utils.py', '94-117')}: 6*N*L*B + 12*H*layers*d*L^2*B/2, causal, N = "
             f"{N:,} parameters incl. embedding and untied logits): {tflop:.2f} TFLOP per device / published TFLOP/s"]
    desc = f"{row['id']}: Llama-2 7B BF16, MaxText on {vms}x A3 (8 H100 each), FSDP 8 x DP {vms}, per-device batch 4"
    return scenario(row, desc, model, gpu_cluster("a3_high", n), plan, [("step_time_s", round(tflop / published, 4))],
                    f"MaxText A3 Llama2-7B README ({mx(c, 'MaxText/configs/a3/llama_2_7b/README.md')}), {row['locator']}",
                    assumptions_text(knobs, extra))


V4_2023 = {
    # model: commit, layers, hidden, ffn, heads, head_dim, qk_norm, N params, pdbs (as measured), script
    "maxtext_22b": ("281e04bf3", 48, 6144, 24576, 24, 256, True, 21.945e9, 16, "MaxText/configs/1xv4-128.sh", 13),
    "maxtext_52b": ("e286533d8", 32, 12288, 49152, 32, 256, False, 51.943e9, 10, "MaxText/configs/1xv4-384.sh", 7),
}


def build_maxtext_v4(row):
    c, layers, hidden, ffn, heads, hd, qkn, N, pdbs, script, row_pdbs = V4_2023[row["model"]]
    n = row["hardware"]["count"]
    seq = 1024
    model = dense(row["model"].replace("_", "-"), layers, hidden, ffn, heads, heads, 32768,
                  f"MaxText 2023 as measured ({mx(c, script)}, base.yml, layers.py; notes/jax.md sections 4.9-4.10): "
                  f"{layers} layers, emb {hidden}, MLP {ffn} non-gated ReLU, {heads} heads of dim {hd}, vocab 32768 "
                  f"tied, RMS norm without bias, QK-norm {'on' if qkn else 'off'}; the parallel attention+MLP block "
                  "is not modelled (sequential); T5 relative position bias expressed as 'alibi' (a bias added to the "
                  "scores, no rotary); no dropout or biases recorded",
                  mlp="relu", position="alibi", tied=True, head_dim=hd, qk_norm=qkn)
    plan = base_plan("maxtext", n, 1, 1, 1, 1, pdbs, pdbs * n, seq)
    knobs = {"zero": K(3, f"{mx(c, script)} (ici_fsdp_parallelism={n})"),
             "recompute": K("full", f"{mx(c, script)} (remat_policy full: policy None, "
                            f"{mx('e286533d8', 'MaxText/layers.py', '990-999')})"),
             "attention": K("unfused", f"{mx('e286533d8', 'MaxText/layers.py', '214-410')} (dot-product attention, "
                            "no flash kernel in 2023)")}
    apply_knobs(plan, knobs)
    tflop = maxtext_2023_tflop_per_device(N, seq, pdbs)
    published = row["measured"]["tflops_per_gpu"]
    extra = [f"notes/jax.md section 5.1 conflict: the table was measured in 2023 with per_device_batch_size {pdbs} "
             f"and max_target_length 1024 (base.yml default), while the row carries per-device batch {row_pdbs} and "
             "seq 2048 from the later scripts: the as-measured configuration is used",
             "weights fp32, activations bf16, optax.adam; LIBTPU --xla_enable_async_all_gather, TPU_MEGACORE="
             "MEGACORE_DENSE", TPU_SLICES[("TPU v4", n)][3],
             f"step_time_s is derived from the published {published} TFLOP/s/chip with MaxText 2023's count "
             f"({mx(c, 'MaxText/train.py', 319 if c == '281e04bf3' else 286)}: 6*N*L*B, no attention, no remat, "
             f"N = {N / 1e9:.3f}B): {tflop:.2f} TFLOP per chip / published TFLOP/s"]
    desc = f"{row['id']}: MaxText {row['model'][8:].upper()} BF16 (2023 config), 1 slice TPU v4 ({n} chips), FSDP {n}"
    return scenario(row, desc, model, tpu_cluster("TPU v4", n), plan, [("step_time_s", round(tflop / published, 4))],
                    f"MaxText v4 README (AI-Hypercomputer/maxtext@30cd40a5:MaxText/configs/v4/README.md), {row['locator']}",
                    assumptions_text(knobs, extra))


TR = "benchmarks/maxtext_trillium_model_configs.py"
V6E = {
    # row: (maxtext commit, config lines, per-device batch, seq, remat keep, remat offload, extra plan knobs)
    "r0567": ("9f1820b47", "962-998", 5, 8192, None, ["decoder_layer_input", "query_proj", "key_proj", "value_proj"]),
    "r0568": ("9f1820b47", "812-859", 4, 8192, None,
              ["decoder_layer_input", "out_proj", "query_proj", "key_proj", "value_proj"]),
    "r0569": ("14b5876ea", "1470-1509", 12, 4096, None,
              ["decoder_layer_input", "out_proj", "query_proj", "key_proj", "value_proj"]),
    "r0570": ("449b4fe52", "1074-1116", 8, 4096, None,
              ["decoder_layer_input", "out_proj", "query_proj", "key_proj", "value_proj"]),
    "r0571": ("14b5876ea", "289-315", 3, 2048, None, None),
    "r0572": ("50bafeb98", "1717-1755", 1, 32768, ["decoder_layer_input"], None),
    "r0566": ("14b5876ea", "797-826", 1, 8192, None, ["decoder_layer_input"]),
    "r0573": ("50bafeb98", "1756-1795", 1, 32768, ["decoder_layer_input"], None),
    "r0574": ("50bafeb98", "1796-1835", 1, 32768, ["decoder_layer_input"], None),
}

# The recipes' splash attention tuning (sa_block_* and sa_use_fused_bwd_kernel in each config's tuning_params);
# what a recipe leaves out is base.yml's default at its commit: blocks of 512, the unfused backward
# (MaxText/configs/base.yml sa_* keys, identical at 9f1820b47, 14b5876ea, 449b4fe52 and 50bafeb98).
# The recipes that set use_iota_embed: True in their tuning_params (r0571's GPT-3 config does not).
IOTA_EMBED = ("r0566", "r0567", "r0568", "r0569", "r0570", "r0572", "r0573", "r0574")
SPLASH_KEYS = ("q", "kv", "q_dkv", "kv_dkv", "q_dq", "kv_dq")
SPLASH = {
    "r0567": dict(q=2048, kv=2048, q_dkv=2048, kv_dkv=2048, q_dq=2048, kv_dq=2048, fused=True),
    "r0568": dict(q=2048, kv=2048, q_dkv=2048, kv_dkv=2048, q_dq=2048, kv_dq=2048, fused=True),
    "r0569": dict(q=2048, q_dkv=2048, q_dq=2048),
    "r0570": dict(q=2048, q_dkv=2048, q_dq=2048),
    "r0571": dict(q=1024, q_dkv=2048, q_dq=2048),
    "r0566": dict(q=1024, q_dkv=2048, q_dq=2048),
    "r0572": dict(q=1024, kv=1024, q_dkv=512, kv_dkv=2048, q_dq=1024, kv_dq=1024),
    "r0573": dict(q=1024, kv=1024, q_dkv=512, kv_dkv=2048, q_dq=1024, kv_dq=1024),
    "r0574": dict(q=1024, kv=1024, q_dkv=512, kv_dkv=2048, q_dq=1024, kv_dq=1024),
}


def splash_knobs(row_id, c, cfgcite):
    tuned = SPLASH[row_id]
    base = mx(c, "MaxText/configs/base.yml" if c != "50bafeb98" else "src/MaxText/configs/base.yml")
    knobs = {}
    for key in SPLASH_KEYS:
        if key in tuned:
            knobs[f"splash_block_{key}"] = K(tuned[key], cfgcite + f" (sa_block_{key}: {tuned[key]})")
        else:
            knobs[f"splash_block_{key}"] = K(512, base + f" (sa_block_{key}: 512)", "default")
    if tuned.get("fused"):
        knobs["splash_fused_backward"] = K(True, cfgcite + " (sa_use_fused_bwd_kernel: True)")
    else:
        knobs["splash_fused_backward"] = K(False, base + " (sa_use_fused_bwd_kernel: False)", "default")
    return knobs


def v6e_model(row, c):
    m = row["model"]
    if m == "llama3_70b":
        return llama_maxtext("llama3.1-70b", 80, 8192, 28672, 64, 8, 128256,
                             mx(c, "MaxText/configs/models/llama3.1-70b.yml"))
    if m == "llama31_405b":
        return llama_maxtext("llama3.1-405b", 126, 16384, 53248, 128, 8, 128256,
                             mx(c, "MaxText/configs/models/llama3.1-405b.yml"))
    if m == "llama3_8b":
        return llama_maxtext("llama3.1-8b", 32, 4096, 14336, 32, 8, 128256, mx(c, "MaxText/configs/models/llama3.1-8b.yml"))
    if m == "mixtral_8x7b":
        return mixtral_8x7b(mx(c, "MaxText/configs/models/mixtral-8x7b.yml"), 1.25,
                            "token dropping at capacity factor 1.25 (megablox and sparse_matmul False -> dense_matmul, "
                            f"{mx(c, 'MaxText/layers/moe.py', '934-941')}); RoPE theta 1e6; no dense layer, ffn_hidden "
                            "unused")
    if m == "mixtral_8x22b":
        mm = dense("mixtral-8x22b", 56, 6144, 16384, 48, 8, 32768,
                   f"{mx(c, 'MaxText/configs/models/mixtral-8x22b.yml')} (identical at 261a8be0): 56 layers, hidden "
                   "6144, 48 heads, 8 KV heads, 8 experts top-2 of FFN 16384, vocab 32768, RoPE theta 1e6, RMSNorm, "
                   "SwiGLU, untied; token dropping at capacity factor 1.25; no dense layer, ffn_hidden unused",
                   head_dim=128)
        mm["moe"] = moe(8, 2, 16384, 1.25)
        return mm
    if m == "gpt3_175b":
        return dense("gpt3-175b-maxtext", 96, 12288, 49152, 96, 96, 50304,
                     f"{mx(c, 'MaxText/configs/models/gpt3-175b.yml')}; {mx(c, 'MaxText/layers/gpt3.py', '65-100,150,343')}: "
                     "learned positions (16384), non-gated GeLU, LayerNorm with bias, biases in attention and MLP, "
                     "tied embeddings, fused QKV, vocab 50304; dropout not recorded (none assumed)",
                     mlp="gelu", norm="layernorm", position="learned", tied=True, bias=True, head_dim=128)
    if m == "gemma3_12b":
        return dense("gemma3-12b", 48, 3840, 15360, 16, 8, 262144,
                     f"{mx(c, 'src/MaxText/configs/models/gemma3-12b.yml')}; {mx(c, 'src/MaxText/layers/gemma3.py', '37-60,125,131-172,209-224')}: "
                     "48 layers, hidden 3840, 16 heads of dim 256 (Q width 4096), 8 KV heads, GeGLU FFN 15360, "
                     "vocab 262144 tied, RMSNorm with pre+post attention/FFW norms (use_post_attn_norm, "
                     "use_post_ffw_norm: true in the model's yml), "
                     "QK-norm, 5 local layers (sliding window 1024) : 1 global", mlp="geglu", tied=True, head_dim=256,
                     attention_window=1024, global_every=6, qk_norm=True, post_norms=True)
    raise KeyError(m)


def build_v6e(row):
    c, lines, pdbs, seq, keep, offload = V6E[row["id"]]
    n = row["hardware"]["count"]
    cfgcite = mx(c, TR, lines)
    model = v6e_model(row, c)
    ep = row["parallelism"].get("ep", 1)
    plan = base_plan("maxtext", n, 1, 1, 1, ep, pdbs, pdbs * n, seq)
    knobs = {"zero": K(3, cfgcite + (" (ici_fsdp 64 x ici_expert 4)" if ep > 1 else " (ici_fsdp -1 = 256)"))}
    if keep is None and offload is None:
        knobs["recompute"] = K("full", cfgcite + " (remat_policy full)")
    else:
        knobs["recompute"] = K("custom", cfgcite + " (remat_policy custom)")
        if keep:
            knobs["recompute_keep"] = K(keep, cfgcite + " (decoder_layer_input 'device'; every other tensor 'remat')")
        if offload:
            knobs["recompute_offload"] = K(offload, cfgcite + " (tensors set to 'offload'; the rest 'remat')")
    knobs.update(splash_knobs(row["id"], c, cfgcite))
    if row["id"] in IOTA_EMBED:
        knobs["embedding_matmul"] = K(True, cfgcite + " (use_iota_embed: True: the lookup as a one-hot matmul, "
                                      + mx(c, "src/MaxText/layers/embeddings.py" if c == "50bafeb98"
                                           else "MaxText/layers/embeddings.py") + ")")
    if row["model"] == "gemma3_12b":
        knobs["vocab_tiling"] = K(16, cfgcite + " (num_vocab_tiling: 16; the loss and LM head in 16 chunks, each "
                                  "chunk's logits recomputed in the backward: " +
                                  mx(c, "src/MaxText/maxtext_utils.py", "1736-1790") + ")")
    if row["id"] in ("r0573", "r0574"):
        knobs["fsdp_shard_size"] = K(256, cfgcite + " (ici_fsdp_transpose_parallelism -1 = 256 within a slice; "
                                     "dcn_data_parallelism -1 = the slices: data parallel across them)")
    if row["id"] in ("r0572", "r0573", "r0574"):
        knobs["fsdp_prefetch"] = K(True, cfgcite + " (only --xla_tpu_scoped_vmem_limit_kib is set)", "not stated",
                                   "no flag asks for all-gather overlap; shardsim's prefetching default is kept")
    else:
        knobs["fsdp_prefetch"] = K(True, cfgcite + " (CF_FOR_ALL_GATHER flags: async collective fusion of the FSDP "
                                   "all-gathers with the consuming compute, notes/jax.md section 4.11)")
    extra = []
    if row["model"] == "gpt3_175b":
        knobs["fused_qkv"] = K(True, mx(c, "MaxText/configs/models/gpt3-175b.yml") + " (fused_qkv: True)")
    if row["model"] in ("mixtral_8x7b", "mixtral_8x22b"):
        knobs["moe_grouped_gemm"] = K(True, mx(c, "MaxText/layers/moe.py", "773-775") + " (dense_matmul: one einsum "
                                      "EBCM,EMH->EBCH over all experts)")
        if ep > 1:
            knobs["moe_dispatcher"] = K("alltoall", cfgcite + " (dispatch output sharded on activation_exp: "
                                        "all-to-all within each 4-chip ring)")
        extra.append("expert capacity per sequence ceil(L*k/E)*1.25 = 1280 slots: padding is executed; "
                     "dispatch/combine run as dense einsums (notes/jax.md section 4.14)")
    if row["model"] == "mixtral_8x22b":
        knobs["master_weights_dtype"] = K("bf16", cfgcite + " (weight_dtype bfloat16)")
        knobs["optimizer_state_dtype"] = K("bf16", mx(c, "MaxText/optimizers.py", "27-38") + " (optax.adamw without "
                                           "mu_dtype: moments in the bf16 parameter dtype)", "default")
        extra.append("notes/jax.md section 5.3: the README names maxtext@261a8be0 but the config (and its "
                     "sparse_matmul key) exist only from 449b4fe52, whose knobs are used; custom_mesh "
                     "hybrid_ring_64x4 (expert axis = 2x2 rings of the 16x16 torus) is not expressible: shardsim "
                     "places the 4 expert-parallel ranks by its own mesh; dense weights sharded over all 256 chips "
                     "(MaxText's 'embed' rule on fsdp x expert, assumed)")
    apply_knobs(plan, knobs)
    release = row["release"]
    extra += [f"{release}; synthetic data; flash (Pallas splash) attention; weights "
              f"{'bf16' if row['model'] == 'mixtral_8x22b' else 'fp32'}, AdamW moments in the parameter dtype; FSDP "
              "collective dtypes not stated: shardsim's maxtext defaults; XLA/libtpu flags (notes/jax.md section 4) "
              "not modelled beyond the overlap they enable",
              TPU_SLICES[("TPU v6e", 256)][3] + (f"; {n // 256} slices over the data-center network at the v6e "
                                                   "preset's 12.5 GB/s per chip (Cloud TPU v6e: 4 x 200 Gbps per "
                                                   "8-chip host)" if n > 256 else ""),
              "metric: the README's single 'completed step' log line (a sample, not "
              "an average)"]
    layout = f"FSDP {n // ep}" + (f" x EP {ep}" if ep > 1 else "")
    desc = (f"{row['id']}: {model['name']} BF16, MaxText tpu-recipes, TPU v6e-256 ({layout}, per-device batch {pdbs}, "
            f"seq {seq})")
    return scenario(row, desc, model, tpu_cluster("TPU v6e", n, 256), plan, step_metric(row),
                    f"AI-Hypercomputer/tpu-recipes training/trillium {row['locator']}", assumptions_text(knobs, extra))


# =========================================================================================================
# 8. PyTorch: torchtitan benchmarks (Dec 2024, 9dec370), docs/performance.md (Aug 2024, 3faaa1a0d; A100 tables
#    of April 2024, 1ea476e9f / 395a52627), Trainy H200 (e7c0cae), torchao float8 (~54ef42221) and MX
#    (6fc499f6), NeMo AutoModel (01926a5c).
# =========================================================================================================

def tt(commit, path, line=None):
    return f"pytorch/torchtitan@{commit}:{path}" + (f":{line}" if line is not None else "")


BD = tt("b5bcd76c66", "benchmarks/llama3_h100_202412_torchtitan.md")


def llama_tt(model, commit):
    """torchtitan's Llama flavors (pytorch/torchtitan@3faaa1a0d:torchtitan/models/llama/__init__.py:14-60): untied
    output, RMSNorm, SwiGLU, RoPE, no biases, no dropout."""
    cite = tt("3faaa1a0d", "torchtitan/models/llama/__init__.py", "14-60") + " (flavors agree with modern_runs.json)"
    shapes = {"llama3_8b": ("llama3-8b", 32, 4096, 14336, 32, 8, 128256),
              "llama3_70b": ("llama3-70b", 80, 8192, 28672, 64, 8, 128256),
              "llama31_405b": ("llama3.1-405b", 126, 16384, 53248, 128, 8, 128256),
              "llama2_13b": ("llama2-13b", 40, 5120, 13824, 40, 40, 32000),
              "llama2_70b": ("llama2-70b", 80, 8192, 28672, 64, 8, 32000)}[model]
    return dense(*shapes, f"{cite}: RoPE, SwiGLU, RMSNorm, no biases, untied output, no dropout")


def qwen3_8b_tt():
    """torchtitan's Qwen3 8B flavor (pytorch/torchtitan@b5bcd76c66:torchtitan/models/qwen3/__init__.py:367-400)."""
    return dense("qwen3-8b", 36, 4096, 12288, 32, 8, 151936,
                 tt("b5bcd76c66", "torchtitan/models/qwen3/__init__.py", "367-400") + ": 36 layers, dim 4096, 32 "
                 "heads of dim 128, 8 KV heads, FFN 12288 (SwiGLU), RMSNorm, QK-norm, RoPE theta 1e6, untied lm_head, "
                 "vocab 151936, fused qkv", head_dim=128, qk_norm=True)


# per torchtitan commit: FSDP wrapping / reshard code, mixed-precision config, per-op SAC save list
TT_CODE = {
    "9dec370": ("torchtitan/parallelisms/parallelize_llama.py:309-339", "torchtitan/config_manager.py:388-397",
                "mm (every 2nd recomputed), flash/efficient SDPA, reduce_scatter, abs, max"),
    "3faaa1a0d": ("torchtitan/parallelisms/parallelize_llama.py:289-323", "torchtitan/config_manager.py:311-330",
                  "mm (every 2nd recomputed), flash/efficient SDPA, reduce_scatter"),
    "1ea476e9f": ("torchtitan/parallelisms/parallelize_llama.py:216-239", "torchtitan/parallelisms/"
                  "parallelize_llama.py:220-222", "mm (every 2nd recomputed), flash/efficient SDPA, reduce_scatter"),
    "54ef42221": ("torchtitan/models/llama/parallelize_llama.py:346-369", "torchtitan/config_manager.py:499-512",
                  "mm (every 2nd recomputed), flash/efficient SDPA, reduce_scatter, max"),
    "e7c0cae": ("torchtitan/models/llama3/parallelize_llama.py:313-367", "torchtitan/config_manager.py:221-231",
                "mm (every 2nd recomputed), flash/efficient SDPA, reduce_scatter, max"),
    "6fc499f6": ("torchtitan/models/llama3/infra/parallelize.py:357-422", "torchtitan/config/job_config.py:207-216",
                 "mm (every 2nd recomputed), flash/efficient SDPA, reduce_scatter, max; cuDNN attention not saved"),
    "b5bcd76c66": ("torchtitan/distributed/fsdp.py:168-240", "torchtitan/config/configs.py:94-102",
                   "linear/mm (every 2nd recomputed), cuDNN SDPA, flex attention, reduce_scatter, max"),
}


def tt_common(commit):
    """Knobs shared by every torchtitan row: FSDP2 per TransformerBlock, bf16 params / fp32 reduction."""
    fsdp, mp, _ = TT_CODE[commit]
    return {
        "zero": K(3, tt(commit, fsdp) + " (FSDP2 fully_shard per TransformerBlock + root)"),
        "grad_reduce_dtype": K("fp32", tt(commit, mp) + " (reduce dtype float32)", "default"),
        "fsdp_prefetch": K(True, "FSDP2 implicit forward/backward prefetch (pytorch/pytorch f2805a0408, #128884); no "
                           "explicit prefetch lists in torchtitan", "default"),
    }


# row: dict of row-specific facts (all cites in notes/pytorch.md section 4)
TT_ROWS = {}
for rid, gpus, compile_, fp8 in (("r0486", 8, False, False), ("r0487", 8, True, False), ("r0488", 8, True, True),
                                 ("r0493", 128, False, False), ("r0494", 128, True, False), ("r0495", 128, True, True)):
    TT_ROWS[rid] = dict(family="tt2412_fsdp", model="llama3_8b", hw="grand_teton", commit="9dec370", dp=gpus,
                        mbs=2, gbs=2 * gpus, seq=8192, recompute="op_sac", compile=compile_,
                        fp8="tensorwise" if fp8 else None, fp8_ag=False)
for rid, seq, dps, cp in (("r0489", 32768, 8, 1), ("r0490", 65536, 4, 2), ("r0491", 131072, 2, 4),
                          ("r0492", 262144, 1, 8)):
    TT_ROWS[rid] = dict(family="tt2412_cp", model="llama3_8b", hw="grand_teton", commit="9dec370", dp=dps, cp=cp,
                        mbs=1, gbs=dps, seq=seq, recompute="full", compile=True, fp8="tensorwise", fp8_ag=False)
for rid, atp in (("r0496", False), ("r0497", True)):
    TT_ROWS[rid] = dict(family="tt2412_2d", model="llama3_70b", hw="grand_teton", commit="9dec370", dp=32, tp=8,
                        mbs=16, gbs=512, seq=8192, recompute="full", compile=True, fp8="tensorwise", fp8_ag=False,
                        async_tp=atp)
for rid, sched in (("r0498", "1f1b"), ("r0499", "interleaved")):
    TT_ROWS[rid] = dict(family="tt2412_3d", model="llama31_405b", hw="grand_teton", commit="9dec370", dp=8, tp=8,
                        pp=8, mbs=4, gbs=256, seq=8192, recompute="full", compile=True, fp8="tensorwise", fp8_ag=True,
                        async_tp=True, schedule=sched)
for rid, seq, dps, cp in (("r0500", 32768, 8, 1), ("r0501", 65536, 4, 2), ("r0502", 131072, 2, 4),
                          ("r0503", 262144, 1, 8)):
    TT_ROWS[rid] = dict(family="tt2412_4d", model="llama31_405b", hw="grand_teton", commit="9dec370", dp=dps, tp=8,
                        pp=8, cp=cp, mbs=1, gbs=8 * dps, seq=seq, recompute="full", compile=True, fp8="tensorwise",
                        fp8_ag=True, async_tp=True, schedule="1f1b")
for rid, gpus in (("r0516", 32), ("r0517", 64)):
    TT_ROWS[rid] = dict(family="trainy", model="llama3_8b", hw="trainy_h200", commit="e7c0cae", dp=gpus, mbs=2,
                        gbs=2 * gpus, seq=8192, recompute="op_sac", compile=True, fp8="tensorwise", fp8_ag=True)
for rid, fp8, atp in (("r0518", None, False), ("r0519", "tensorwise", False), ("r0520", "tensorwise", True)):
    TT_ROWS[rid] = dict(family="ttperf_405b", model="llama31_405b", hw="grand_teton_2024", commit="3faaa1a0d", dp=16,
                        tp=8, mbs=2, gbs=32, seq=8192, recompute="full", compile=True, fp8=fp8, fp8_ag=fp8 is not None,
                        async_tp=atp)
for rid, model, seq, mbs, ac in (("r0521", "llama3_8b", 8192, 1, "layer"), ("r0522", "llama3_8b", 8192, 1, "op"),
                                 ("r0523", "llama3_70b", 8192, 1, "full"), ("r0524", "llama2_13b", 4096, 2, "none"),
                                 ("r0525", "llama2_13b", 4096, 2, "layer"), ("r0526", "llama2_13b", 4096, 2, "op"),
                                 ("r0527", "llama2_70b", 4096, 1, "op"), ("r0528", "llama2_70b", 4096, 2, "full")):
    TT_ROWS[rid] = dict(family="ttperf_a100", model=model, hw="a100_tt", commit="1ea476e9f", dp=64, mbs=mbs,
                        gbs=64 * mbs, seq=seq, recompute={"layer": "full", "op": "op_sac", "full": "full",
                                                          "none": "none"}[ac],
                        every=2 if ac == "layer" else None, compile=False, fp8=None)
for rid, fp8, ag in (("r0529", None, False), ("r0530", "tensorwise", True), ("r0531", "rowwise", False)):
    TT_ROWS[rid] = dict(family="torchao_float8", model="llama3_8b", hw="torchao_h100", commit="54ef42221", dp=8,
                        mbs=1, gbs=8, seq=8192, recompute="op_sac", compile=True, fp8=fp8, fp8_ag=ag)
for rid, fp8, ag in (("r0532", None, False), ("r0533", "tensorwise", True), ("r0534", "mxfp8", False),
                     ("r0535", "mxfp8", False), ("r0536", "rowwise", False)):
    TT_ROWS[rid] = dict(family="torchao_mx", model="llama3_8b", hw="torchao_b200", commit="6fc499f6", dp=8, mbs=1,
                        gbs=8, seq=8192, recompute="op_sac", compile=True, fp8=fp8, fp8_ag=ag)

# torchtitan NVFP4 doc (b5bcd76c66:torchtitan/components/quantization/nvfp4.md): 4 GPUs, FSDP 4, seq 2048.
for rid, model, mbs, prec in (("r0537", "llama3_8b", 32, "nvfp4"), ("r0538", "llama3_8b", 32, "mxfp8"),
                              ("r0539", "llama3_8b", 32, None), ("r0540", "qwen3_8b", 16, "nvfp4"),
                              ("r0541", "qwen3_8b", 16, "mxfp8"), ("r0542", "qwen3_8b", 16, None)):
    TT_ROWS[rid] = dict(family="tt_nvfp4", model=model, hw="tt_nvfp4_blackwell", commit="b5bcd76c66", dp=4, mbs=mbs,
                        gbs=4 * mbs, seq=2048, recompute="op_sac", compile=True, fp8=prec, fp8_ag=False)

TT_FAMILY_NOTES = {
    "tt2412_fsdp": ("torchtitan 9dec370 (torch 1963fc8, torchao eab345c), Dec-2024 benchmark Tables 1/3 ({bd}:19-46): "
                    "local batch 2 (command line; toml 1), seq 8192 (toml {t}:30), FSDP over all GPUs, per-op SAC "
                    "(toml :53-55), torch.compile {compile}; float8 on all Linears but the output where stated "
                    "(tensorwise dynamic). Conflict (notes/pytorch.md 4.1): modern_runs' source note says float8 "
                    "rows use the FSDP float8 all-gather, but the benchmark does not say so and the 9dec370 default "
                    "is off (config_manager.py:542-550): off is used"),
    "tt2412_cp": ("torchtitan 9dec370, Table 2 ({bd}:31-38): dp_shard x cp = {dp} x {cp}, local batch 1, full AC "
                  "(command line; toml selective), compile, float8 tensorwise (FSDP float8 all-gather not stated: "
                  "default off); CP rotate method allgather and load balancing (defaults). Conflict (notes/pytorch.md "
                  "4.1 F2): torchtitan shards parameters over dp_shard*cp = 8 ranks (FSDP mesh dp_shard_cp, "
                  "parallelize_llama.py:79-94), shardsim's zero 3 shards over dp = {dp} only: not expressible, the "
                  "difference is left"),
    "tt2412_2d": ("torchtitan 9dec370, Table 4 ({bd}:48-53): TP 8 x FSDP 32, local batch 16 (command line; toml 8), "
                  "full AC (toml :53-54), compile, float8 tensorwise with float8 TP styles (FSDP float8 all-gather "
                  "not stated: default off), sequence parallel on the norms, loss parallel (not modelled); async TP "
                  "{atp} (written as tp_comm_overlap; async TP holds no stated SM count, so tp_comm_overlap_sms is "
                  "left at shardsim's default)"),
    "tt2412_3d": ("torchtitan 9dec370, Table 5 ({bd}:55-60): TP 8, PP 8 ({sched}), FSDP 8, local batch 32 in 8 "
                  "microbatches (default = PP degree, not stated) of 4 sequences; float8 tensorwise with FSDP float8 "
                  "all-gather and precomputed scales, async TP, compile, full AC (toml llama3_405b.toml:36-60); FSDP "
                  "keeps blocks unsharded after forward under PP; auto split {split} (pipelining_utils.py:18-57); "
                  "mesh [pp, dp_shard, cp, tp] with pp outermost (parallel_dims.py:48-61); async TP written as "
                  "tp_comm_overlap with shardsim's default SM count"),
    "tt2412_4d": ("torchtitan 9dec370, Table 6 ({bd}:62-69): TP 8, PP 8 1F1B, dp_shard x cp = {dp} x {cp}, local "
                  "batch 8 = 8 microbatches of 1 sequence; global batch not stated: dp_shard x 8 is written; float8 "
                  "tensorwise + FSDP float8 all-gather, async TP, full AC, compile; CP allgather with load balancing; "
                  "auto split 15,16x6,15; mesh with pp outermost. Conflict (notes/pytorch.md 4.1 F5): parameters are "
                  "sharded over dp_shard*cp = 8 ranks in torchtitan, over dp = {dp} in shardsim (not expressible)"),
    "trainy": ("torchtitan e7c0cae (torch 2.8.0a0, torchao 0afa4c1), Trainy H200 "
               "(pytorch/torchtitan@cbccb3878:benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md:18-36): local "
               "batch 2, compile, float8 tensorwise with FSDP float8 all-gather and precomputed scales "
               "(force_recompute_fp8_weight_in_bwd passed but a no-op in torchao 0afa4c1), per-op SAC (toml :55-57), "
               "seq 8192 (toml :34); TPS and memory sampled at iteration 100"),
    "ttperf_405b": ("torchtitan 3faaa1a0d, docs/performance.md 405B table (:5-15): TP 8, FSDP 16, local batch 2, seq "
                    "8192, full AC, compile (train_configs/llama3_405b.toml:29-59); the toml enables float8 (with FSDP "
                    "float8 all-gather) and async TP, so the 'None' row disabled both and the Float8 row async TP on "
                    "the command line (notes/pytorch.md 4.3); loss parallel not modelled. The published float8 MFUs "
                    "are against 1979 TFLOP/s (conflict); only WPS is used"),
    "ttperf_a100": ("torchtitan April-2024 tables (1ea476e9f / 395a52627; modern_runs names 3faaa1a0d): FSDP over 64 "
                    "A100, TP forced to 1, compile off, local batch as the table, seq from the tomls; 'selective "
                    "layer' N not stated: default 2 (every other block fully recomputed, config_manager.py:289-291); "
                    "the 8B/13B tomls use the Triton fused_rmsnorm (not modelled)"),
    "torchao_float8": ("torchao float8 README (pytorch/ao@8c81863ba:benchmarks/float8/training/float8_training_benchmark.sh:24-42): "
                       "torchtitan '0.0.2' (commit window 069bae286..54ef42221), llama3_8b.toml, local batch 1, seq 8192, "
                       "FSDP 8, per-op SAC, compile; tensorwise with FSDP float8 all-gather, precomputed scales and fp8 "
                       "weight recompute in backward; rowwise with bf16 all-gather; output layer excluded; tps = median "
                       "of the log lines; the 'GB' memory column is torchtitan's peak reserved GiB"),
    "tt_nvfp4": ("torchtitan NVFP4 doc (pytorch/torchtitan@b5bcd76c66:torchtitan/components/quantization/nvfp4.md): "
                 "200M-token runs, FSDP 4 (dp_shard 4, TP 1), seq 2048, eager + torch.compile of the model "
                 "(config_registry: CompileConfig components ['model']); AC not stated: the configs' default "
                 "SelectiveAC (per-op SAC, torchtitan/distributed/activation_checkpoint.py:185-192) is used. NVFP4 "
                 "(bf16 tail): layers 0..L-ceil(0.15L)-1 in NVFP4, the rest and the LM head in bf16 "
                 "(torchtitan/components/quantization/nvfp4.py:248-265; llama3_8b_first_85_pct_layers_nvfp4, "
                 "qwen3_8b_first_85_pct_layers_nvfp4); NVFP4 quantises GEMMs only, weights and collectives stay bf16 "
                 "(nvfp4.md:7-9, :143); MXFP8 converter on every decoder Linear with bf16 FSDP all-gathers (not "
                 "stated: torchao's MX training has no low-precision all-gather); the runs used torchtitan "
                 "8d6877e1 (Llama), 20a66c9a / 34c805f3 (Qwen3 MX-NVFP4 / BF16), PyTorch 2.14.0a0, TorchAO 0.18.0, "
                 "whose code is read at b5bcd76c66; the Qwen3 runs use varlen attention over packed C4 documents, "
                 "taken as full causal attention over 2048 tokens"),
    "torchao_mx": ("torchao MX README (pytorch/ao@e4e681be6:benchmarks/float8/training/llama3.sh:30-56): torchtitan "
                   "6fc499f6, llama3_8b.toml, local batch 1, seq 8192, FSDP 8, per-op SAC, compile; MXFP8 (cuBLAS, "
                   "block 32, FLOOR or RCEIL scales) / float8 tensorwise with FSDP float8 all-gather / rowwise; bf16 "
                   "weight all-gather for MX; output excluded. On B200 SDPA prefers cuDNN attention, which is not in "
                   "that commit's SAC save list, so the attention forward is recomputed in backward (code-level "
                   "inference, not modelled); every block reshards after forward; memory column = reserved GiB"),
}


# torchtitan compiles its loss with the model from bbb1b616e (2025-04-02) on: the rows of later commits with
# compile on run cross_entropy(pred.float()) under torch.compile.
COMPILED_LOSS = {"e7c0cae": "25-30", "6fc499f6": "25-30", "b5bcd76c66": "245-252"}
# torchtitan's FSDP units from 83e694105 (2025-07-28, #1094) on: what fsdp_keep_root false stands for.
NEW_FSDP_UNITS = {"6fc499f6": "torchtitan/models/llama3/infra/parallelize.py:402-422",
                  "b5bcd76c66": "torchtitan/distributed/fsdp.py:234-262,368"}


def build_torchtitan(row):
    f = TT_ROWS[row["id"]]
    fam = f["family"]
    n = row["hardware"]["count"]
    tp, pp, cp = f.get("tp", 1), f.get("pp", 1), f.get("cp", 1)
    model = qwen3_8b_tt() if f["model"] == "qwen3_8b" else llama_tt(f["model"], f["commit"])
    lps, vp, mesh = None, 1, None
    if pp > 1:
        if f["schedule"] == "interleaved":
            vp = 2
            lps = torchtitan_split(model["layers"], pp * 2)
        else:
            lps = torchtitan_split(model["layers"], pp)
        mesh = ["tp", "cp", "dp", "pp"]
    plan = base_plan("torchtitan", n, tp, pp, cp, 1, f["mbs"], f["gbs"], f["seq"], vp, sp=tp > 1,
                     layers_per_stage=lps, mesh_order=mesh)
    assert plan["dp"] == f["dp"], row["id"]
    knobs = tt_common(f["commit"])
    rc_cite = {"op_sac": "per-op SAC saving " + TT_CODE[f["commit"]][2],
               "full": "full AC: checkpoint_wrapper around every block",
               "none": "AC none"}[f["recompute"]]
    knobs["recompute"] = K(f["recompute"], rc_cite + " (notes/pytorch.md section 2.2)")
    if f.get("every"):
        knobs["recompute_every"] = K(f["every"], tt("1ea476e9f", "torchtitan/config_manager.py", "289-291"),
                                     "default", "'selective layer' with N not stated: default '2' (one block in 2 "
                                     "fully recomputed)")
    knobs["compile"] = K(f["compile"], "torch.compile of every TransformerBlock " + ("on" if f["compile"] else "off") +
                         " (the row's configuration; notes/pytorch.md section 2.3)")
    if f["commit"] in NEW_FSDP_UNITS:
        knobs["fsdp_keep_root"] = K(False, tt(f["commit"], NEW_FSDP_UNITS[f["commit"]]) + " (since 83e694105, 2025-07-28: "
                                    "the embedding a unit of its own, resharded after forward like every block, the "
                                    "last included; [norm, output] a unit regathered at once for the backward; no "
                                    "parameters left at the root)")
    if f["compile"] and f["commit"] in COMPILED_LOSS:
        knobs["loss_kernel"] = K("torch_compiled", tt(f["commit"], "torchtitan/components/loss.py",
                                                      COMPILED_LOSS[f["commit"]]) +
                                 " (with compile on, the cross-entropy is torch.compile'd too)")
    knobs["fsdp_reshard_after_forward"] = K(pp == 1, tt(f["commit"], TT_CODE[f["commit"]][0]) + (
        " (PP: no block reshards)" if pp > 1 else " (every block reshards" +
        (")" if f["commit"] == "6fc499f6" else " but the last; the root stays unsharded)")), "default")
    if tp > 1:
        knobs["tp_comm_overlap"] = K(bool(f.get("async_tp")), "async TP (inductor micro-pipelined TP with symmetric "
                                     "memory) " + ("on" if f.get("async_tp") else "off"))
    if cp > 1:
        knobs["cp_comm"] = K("all_gather", tt("9dec370", "torchtitan/config_manager.py", "364-377") +
                             " (context_parallel_rotate_method allgather)", "default")
    if fam == "tt_nvfp4":
        knobs["vocab_tiling"] = K(8, tt(f["commit"], "torchtitan/components/loss.py", "501-545") + " (the configs' "
                                  "loss=ChunkedLossWrapper, num_chunks 8: the LM head and loss run per chunk of tokens; "
                                  "it runs each chunk's backward at once, shardsim's vocab tiling recomputes the "
                                  "chunk's logits in the backward: one extra head GEMM, 1.6% of the step of r0542, 1.335 s against 1.314 s "
                                  "with --set plan.vocab_tiling=1)")
    if f["fp8"] == "nvfp4":
        tail = math.ceil(model["layers"] * 0.15)
        knobs["matmul_dtype"] = K("fp4", "NVFP4LinearConverter on the leading decoder layers' Linears " +
                                  tt(f["commit"], "torchtitan/components/quantization/nvfp4.py", "268-300"))
        knobs["bf16_tail_layers"] = K(tail, tt(f["commit"], "torchtitan/components/quantization/nvfp4.py", "248-265") +
                                      f" (ceil(0.15 x {model['layers']}) = {tail} last layers in bf16)")
        knobs["fp8_param_gather"] = K(False, "weights and collectives stay bf16 (" +
                                      tt(f["commit"], "torchtitan/components/quantization/nvfp4.md", "7-9") + ")")
        knobs["low_precision_saved_inputs"] = K(True, "torchao's NVFP4Linear saves the column-wise NVFP4 codes of its "
                                                "input for the weight gradient, not the bf16 input (pytorch/ao@36027d82d:"
                                                "torchao/prototype/moe_training/nvfp4_training/nvfp4_linear.py:194-236)")
    elif f["fp8"]:
        knobs["matmul_dtype"] = K("fp8", "float8 converter on every nn.Linear but the output layer")
        knobs["fp8_recipe"] = K({"tensorwise": "tensorwise", "rowwise": "rowwise", "mxfp8": "mxfp8"}[f["fp8"]],
                                "torchao recipe of the row (notes/pytorch.md section 1.8)")
        knobs["fp8_param_gather"] = K(f["fp8_ag"], "enable_fsdp_float8_all_gather " + ("on" if f["fp8_ag"] else "off"),
                                      "default" if fam in ("tt2412_fsdp", "tt2412_cp", "tt2412_2d") else "recipe",
                                      "not stated by the benchmark; argparse default off" if fam in
                                      ("tt2412_fsdp", "tt2412_cp", "tt2412_2d") else "")
    apply_knobs(plan, knobs)
    note = TT_FAMILY_NOTES[fam].format(bd=BD, t=tt("9dec370", "train_configs/llama3_8b.toml"),
                                       compile="on" if f["compile"] else "off", dp=f["dp"], cp=cp,
                                       atp="on" if f.get("async_tp") else "off", sched=f.get("schedule"),
                                       split=",".join(map(str, lps)) if lps else "")
    extra = [note, HARDWARE[f["hw"]][2]] + (
        [POWER_CAP_NOTE.format(GRAND_TETON_500W_CLOCK_SCALE)] if f["hw"] in POWER_CAPPED else []) + [
             "tokens/s per device = torchtitan tps (tokens before CP splitting / (time x cp x tp x pp)) = global "
             "tokens per step / (step time x devices)"]
    metrics = [("tokens_per_s_per_device", row["measured"]["tokens_per_s_per_gpu"])]
    mem = row["measured"].get("peak_mem_gib", row["measured"].get("peak_mem_gb"))
    if mem is not None:
        metrics.append(("peak_memory_GiB", mem))
        extra.append("peak_memory_GiB = torchtitan's peak reserved memory (reserved_bytes.all.peak) in GiB"
                     + (", max over GPUs" if fam.startswith("tt2412") else ""))
    prec = ("NVFP4 (bf16 tail)" if f["fp8"] == "nvfp4" else f"FP8 {f['fp8']}") if f["fp8"] else "BF16"
    desc = (f"{row['id']}: {model['name']} {prec}, torchtitan ({row['locator']}), {n}x {row['hardware']['chip']} "
            f"(FSDP {f['dp']}" + (f" TP{tp}" if tp > 1 else "") + (f" PP{pp}" if pp > 1 else "") +
            (f" CP{cp}" if cp > 1 else "") + f", local batch {f['mbs'] * (8 if pp > 1 else 1)}, seq {f['seq']})")
    src = {"tt_bench_202412": f"torchtitan benchmarks Dec 2024 ({BD})", "tt_h200_trainy": "torchtitan community "
           "benchmark, Trainy H200 (" + tt("b5bcd76c66", "benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md") + ")",
           "tt_perf_2024": "torchtitan docs/performance.md (" + tt("3faaa1a0d", "docs/performance.md") + ")",
           "torchao_float8": "TorchAO float8 README (pytorch/ao@8c81863ba:torchao/float8/README.md)",
           "torchao_mx": "TorchAO MX README (pytorch/ao@9e3758d15:torchao/prototype/mx_formats/README.md)",
           "tt_nvfp4": "torchtitan NVFP4 doc (" + tt("b5bcd76c66", "torchtitan/components/quantization/nvfp4.md") +
                       ")"}[row["source"]]
    if f["hw"] == "tt_nvfp4_blackwell":
        cluster = {"chip": gb200_chip_with_memory(TT_NVFP4_HBM_BYTES, "184.28 GiB, the capacity the torchtitan NVFP4 "
                                                  "doc's memory percentages imply"),
                   "devices": n, "fabric": gpu_fabric(HARDWARE[f["hw"]][1], n)}
    else:
        cluster = gpu_cluster(f["hw"], n)
    out = scenario(row, desc, model, cluster, plan, metrics, f"{src}, {row['locator']}", assumptions_text(knobs, extra))
    if power_cap_fitted(row["id"]):
        out["published"]["fitted"] = True
    return out


AM = "NVIDIA-NeMo/Automodel@01926a5c"
AM_ROWS = {
    # row: model builder, yaml, pp, vp, layers_per_stage rule, ep, dp, mbs, gbs, full AC, reshard, fsdp-optimizations
    "r0550": ("deepseek_v3", "deepseek_v3_te_deepep.yaml", 4, 8, (2, "old"), 64, 64, 1, 512, True, False, True),
    "r0549": ("deepseek_v3", "deepseek_v3_te_deepep_1024.yaml", 4, 4, (4, "either"), 64, 256, 1, 8192, True, False,
              True),
    "r0551": ("kimi_k2", "kimi_k2_te_deepep.yaml", 8, 4, (2, "old"), 32, 32, 1, 512, True, False, False),
    "r0552": ("qwen3_30b_a3b", "qwen3_moe_30b_te_deepep.yaml", 1, 1, None, 8, 8, 4, 512, True, False, True),
    "r0553": ("gpt_oss_20b", "gptoss_20b_te_deepep.yaml", 1, 1, None, 8, 8, 2, 256, True, False, False),
    "r0554": ("gpt_oss_120b", "gptoss_120b_te_deepep.yaml", 1, 1, None, 64, 64, 2, 512, False, True, False),
}


def build_automodel(row):
    name, yaml, pp, vp, lps_rule, ep, dp, mbs, gbs, full_ac, reshard, fsdpopt = AM_ROWS[row["id"]]
    yc = f"{AM}:examples/benchmark/configs/{yaml}"
    n = row["hardware"]["count"]
    model_cite = {
        "deepseek_v3": f"{yc}:63-69; {AM}:nemo_automodel/components/models/deepseek_v3/model.py:31-160",
        "kimi_k2": f"{yc}:62-76 (moonshotai/Kimi-K2-Base); shape from pytorch/torchtitan@b5bcd76c66:torchtitan/"
                   "models/kimi_k2_7/__init__.py:384-440 and the Kimi-K2 model card (notes/pytorch.md section 5)",
        "qwen3_30b_a3b": f"{yc}:62-77 (Qwen/Qwen3-30B-A3B)",
        "gpt_oss_20b": f"{yc}:62-76; {AM}:nemo_automodel/components/models/gpt_oss/model.py:33-37,92-107; "
                       "layers.py:38-125",
        "gpt_oss_120b": f"{yc}:63-78; {AM}:nemo_automodel/components/models/gpt_oss/model.py:33-37,92-107; "
                        "layers.py:38-125"}[name]
    builders = {"deepseek_v3": deepseek_v3, "kimi_k2": kimi_k2, "qwen3_30b_a3b": qwen3_30b_a3b}
    model = builders[name](model_cite) if name in builders else gpt_oss(name.split("_")[-1], model_cite)
    lps = automodel_split(model["layers"], pp * vp) if pp > 1 else None
    plan = base_plan("torchtitan", n, 1, pp, 1, ep, mbs, gbs, 4096, vp, layers_per_stage=lps)
    assert plan["dp"] == dp, row["id"]
    knobs = {
        "zero": K(3, f"{AM}:nemo_automodel/components/moe/parallelizer.py:123-217 (FSDP2 per decoder block; experts on "
                  "the ep_shard mesh)"),
        "master_weights_dtype": K("bf16", f"{AM}:nemo_automodel/components/models/deepseek_v3/model.py:286-304 "
                                  "(parameters stored in bf16)"),
        "optimizer_state_dtype": K("bf16", "torch.optim.Adam keeps its moments in the parameter dtype (bf16)",
                                   "default"),
        "grad_reduce_dtype": K("fp32", f"{AM}:nemo_automodel/components/moe/parallelizer.py:138-141 (FSDP reduce fp32)",
                               "default"),
        "recompute": K("full" if full_ac else "none", yc + ":58-61 (activation_checkpointing: full checkpointing of "
                       "every decoder block when true)"),
        "fsdp_reshard_after_forward": K(reshard, yc + ":61" if reshard else f"{AM}:nemo_automodel/components/moe/"
                                        "parallelizer.py:253 (default False)", "recipe" if reshard else "default"),
        "fsdp_prefetch": K(True, "FSDP2 implicit prefetch", "default"),
        "moe_dispatcher": K("alltoall", f"{AM}:nemo_automodel/components/moe/layers.py:419-443 (DeepEP through "
                            "MoEFlexTokenDispatcher: all-to-all dispatch)"),
        "expert_tp": K(1, "TP 1 (" + f"{AM}:docs/performance-summary.md:13-18" + ")"),
        "moe_grouped_gemm": K(True, f"{AM}:nemo_automodel/components/moe/layers.py:484-499 (grouped_gemm ops.gmm)"),
        **({"moe_bias_passes": K(True, f"{AM}:nemo_automodel/components/moe/layers.py:362-391,484-503 (gpt-oss "
                                 "expert_bias: _apply_bias after each ops.gmm, a per-expert add and torch.cat, in "
                                 "fp32 after the down projection)")} if name.startswith("gpt_oss") else {}),
        "moe_dedup": K(True, f"{AM}:nemo_automodel/components/moe/layers.py:419-443 (DeepEP dispatch: a token is sent "
                       "once to each rank holding any of its experts)"),
        "moe_routing": K("contiguous", f"{AM}:nemo_automodel/components/moe/layers.py:516-559 (fake balanced gate: "
                         "experts (token*k + j) mod E)"),
        "fsdp_sync_each_microbatch": (
            K(False, "PyTorch pipelining turns FSDP gradient sync off for all but the last microbatch", "default")
            if pp > 1 else
            K(not fsdpopt, "enable_fsdp_optimizations " + ("true: no gradient reduce-scatter or reshard until the "
                                                           "last micro-step" if fsdpopt else "false") +
              f" ({AM}:nemo_automodel/components/moe/fsdp_mixin.py)", "recipe" if fsdpopt else "default")),
        "loss_kernel": K("torch_bf16", f"{yc} (loss_fn: MaskedCrossEntropy with fp32_upcast: false, "
                         "torch.nn.functional.cross_entropy on the bf16 logits)"),
        "compile": K(True, f"{AM}:nemo_automodel/components/moe/utils.py:28-37 (BackendConfig: attention, linear and "
                     "RMSNorm from Transformer Engine, fused kernels)", "default"),
        "attention_kernel": K("flash2" if name.startswith("gpt_oss") else "cudnn",
                              "FlexAttention (GPT-OSS: sliding window and sinks; rate taken as FlashAttention-2's)"
                              if name.startswith("gpt_oss") else
                              "Transformer Engine DotProductAttention, cuDNN fused attention on sm90", "default"),
    }
    extra = [f"AutoModel table from ce005dd86/364f600be, configs read at 01926a5c ({yc}); mock data of full 4096-token "
             f"sequences; fake balanced gate (exactly uniform expert load, no router GEMM: capacity_factor 1.0); no "
             f"gradient clipping; TE attention/linear/RMSNorm, DeepEP; shared experts on a side stream",
             f"GBS {gbs}, local batch {row['batch']['local_batch']}, GA {row['batch']['ga']}, microbatch {mbs}, "
             f"EP {ep}, FSDP {dp} ({yc}:27-42)"]
    if pp > 1:
        extra.append(f"PP {pp} interleaved1f1b with microbatch 1; layers_per_stage {lps_rule[0]} in the YAML; "
                     + (f"the pre-01926a5c stage formula ceil(L/lps)+1 gives the table VP {vp}; " if lps_rule[1] == "old"
                        else f"the 1024-GPU YAML gives {pp * vp} stages = VP {vp} under either formula; ") +
                     f"split: the first L % S stages one layer more, loop placement ({AM}:nemo_automodel/components/"
                     "distributed/pipelining/functional.py:66-216)")
    if fsdpopt and name == "deepseek_v3":
        extra.append("enable_fsdp_optimizations was added to the YAML after the table date")
    if row["id"] == "r0549":
        extra.append("conflicts (notes/pytorch.md 4.8): the table lists VP 8 but its YAML (layers_per_stage 4) gives "
                     "VP 4, which is used; the 1024-GPU YAML was committed two days after the table")
    if row["id"] == "r0550":
        extra.append("conflict: at 01926a5c the stage formula gives VP 7; the table's VP 8 matches the code at the "
                     "table date, which is used")
    if row["id"] == "r0551":
        extra.append("conflict: 01926a5c's stage formula gives VP 3; the table's VP 4 (code at the table date) is used")
    if name.startswith("gpt_oss"):
        extra.append(f"EP {ep} from the YAML ({yc}:41) although the table shows '-' (notes conflict); FlexAttention "
                     "with sliding window and sinks")
        if name == "gpt_oss_20b":
            extra.append("activation checkpointing was true in the YAML at the table date (ce005dd86) and false at "
                         "01926a5c (92169724f, 2025-11-10): which produced the table is not knowable; the table-date "
                         "value (full AC) is used")
        else:
            extra.append("the YAML at the table date had GBS 256, PP 2, EP 16; bdb4dbc72 changed it to the table's "
                         "GBS 512, PP 1 (and EP 64), which is used")
    extra += [HARDWARE["automodel_h100"][2], "metric: 'Time per Global Step' = mean over steps 10-29 of the rank-0 "
              "iteration timer, covering the whole GA loop and optimizer.step"]
    apply_knobs(plan, knobs)
    desc = (f"{row['id']}: {model['name']} BF16, NeMo AutoModel, {n}x H100 (FSDP {dp} EP {ep}"
            + (f" PP{pp} VP{vp}" if pp > 1 else "") + f", GBS {gbs})")
    return scenario(row, desc, model, gpu_cluster("automodel_h100", n), plan, step_metric(row),
                    f"NeMo AutoModel performance summary ({AM}:docs/performance-summary.md), {row['locator']}",
                    assumptions_text(knobs, extra))


# =========================================================================================================
# Dispatch, skips, output
# =========================================================================================================

SPLIT = {}  # row id -> "development" | "held_out", filled from split.json

FRAMEWORK = {"NeMo/Megatron-Core": "megatron-core", "Megatron-Core": "megatron-core", "torchtitan": "torchtitan",
             "torchtitan+torchao": "torchtitan", "NeMo AutoModel": "torchtitan", "MaxText (JAX)": "maxtext",
             "MaxText (JAX/XLA GPU)": "maxtext", "Paxml (JAX)": "maxtext", "Megatron-DeepSpeed": "deepspeed"}
CHIP_SLUG = {"H100": "h100", "H200": "h200", "A100": "a100", "B200": "b200", "GB200": "gb200", "TPU v4": "tpuv4",
             "TPU v6e": "tpuv6e", "Blackwell (SM100+, SKU not named)": "blackwell"}
SKIPPED_CHIP = {"GB200": "gb200", "TPU v4": "tpu-v4", "TPU v6e": "tpu-v6e",
                "Blackwell (SM100+, SKU not named)": "blackwell-unnamed"}


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
