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
* Recompute: Megatron 'selective' -> "selective"; full / block -> "full" (+ recompute_layers); MaxText
  'minimal_flash' -> "save_dots"; 'save_qkv_proj' -> "save_qkv_proj"; MaxText 'custom' -> "custom" with the
  tensors set to 'device' in recompute_keep and to 'offload' in recompute_offload (decoder_layer_input is
  'device' by default); Paxml SAVE_QKV_OUT_PROJ -> custom keep [qkv_proj, out_proj]; SAVE_DOT_ONLY -> custom
  keep [qkv_proj, out_proj, mlpwi, mlpwo]; torchtitan per-op SAC -> "op_sac"; 'selective layer' N -> "full"
  with recompute_every N.
* Models: inline for every row, vocabulary as the run's tokenizer/config had it before framework padding
  (shardsim pads to 128*tp itself). Proxy models use the proxy's layer count. Multi-head latent attention is
  approximated by GQA as shardsim's deepseek-v3 preset does (128 or 64 heads of dim 96, 8 KV heads); attention
  sinks, soft-capping, parallel attention/MLP blocks, relative position biases, iota embeddings, vocab tiling
  and compile/fusion choices are not expressible and are named in the model source or the assumptions.
* Chips and fabrics: see HARDWARE; every NIC figure is per GPU, one way (400 Gb/s = 50 GB/s).
* Skipped (manifest "skipped"): GB200 rows and the unnamed-Blackwell tt_nvfp4 rows (GB200 / NVL72 not modelled
  yet), NVFP4 precision, rows that span several TPU slices (DCN between slices not modelled), and any row
  whose architecture is unknown or whose configuration fails a shardsim check it cannot express.

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

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_RUNS = "/work/shared/reference/modern_runs.json"

GB200_SKIP = "GB200 / NVL72 not modelled yet (issue 19)"
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


def gpu_cluster(hw, devices):
    chip, nic, _ = HARDWARE[hw]
    return {"chip": chip, "devices": devices, "fabric": gpu_fabric(nic)}


def tpu_cluster(chip_name, devices):
    chip, dims, wrap, _ = TPU_SLICES[(chip_name, devices)]
    return {"chip": chip, "devices": devices, "fabric": {"kind": "torus", "dims": dims, "wraparound": wrap}}


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


def deepseek_v3(cite):
    m = dense("deepseek-v3", 61, 7168, 18432, 128, 8, 129280,
              f"{cite}; shape as shardsim's deepseek-v3 preset (DeepSeek-V3 report, arXiv 2412.19437): 61 layers, "
              "the first 3 dense (FFN 18432), 1 shared + 256 routed experts of FFN 2048, top-8, vocab 129280. "
              "Multi-head latent attention is not modelled: approximated by GQA with 128 heads of dim 96 and 8 KV "
              "heads as the preset does. No MTP module is built by AutoModel", head_dim=96)
    m["moe"] = moe(256, 8, 2048, 1.0, shared=1, first_dense=3)
    return m


def kimi_k2(cite):
    m = dense("kimi-k2", 61, 7168, 18432, 64, 8, 163840,
              f"{cite}: 61 layers (first 1 dense, FFN 18432), hidden 7168, 64 heads, MLA (q_lora 1536, kv_lora 512, "
              "qk 128+64, v 128), 384 routed experts top-8 + 1 shared of FFN 2048, vocab 163840, untied. MLA is "
              "not modelled: approximated by GQA as shardsim's deepseek-v3 preset does (heads of dim 96, 8 KV "
              "heads; 99M against MLA's 101M attention parameters per layer)", head_dim=96)
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


def split_front(layers, stages):
    """First `layers % stages` stages get one more layer (torchtitan's and AutoModel's auto split puts the
    remainder on the stages after the first: base for stage 0, base+1 for the next L % S, the rest on the
    last; AutoModel: the first L % S stages +1). `mode` picks which."""
    raise NotImplementedError


def torchtitan_split(layers, stages):
    """torchtitan 9dec370 auto split (pipelining_utils.py:18-57): stage 0 gets base = L // S, the next L % S
    stages base + 1, the remainder on the last stage."""
    base, rem = divmod(layers, stages)
    out = [base] + [base + 1] * rem
    out += [base] * (stages - 1 - rem - 1)
    out.append(layers - sum(out))
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


def apply_knobs(plan, knobs):
    for field, k in knobs.items():
        if field.startswith("_"):
            continue
        plan[field] = k["value"]
    return plan
