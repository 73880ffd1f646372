"""What every family of the modern validation set shares (make_scenarios.py): the knob record K and its
assumptions text, publishers' FLOP formulas, hardware and clusters, model shapes, plan and scenario builders,
and the split, framework and chip tables."""
import json
import math
import pathlib
import re


HERE = pathlib.Path(__file__).resolve().parents[1]  # examples/validation/modern
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



# Transformer Engine defaults several families cite.
TE_DEFAULT_SMS = "NVIDIA/TransformerEngine@v1.11:transformer_engine/pytorch/module/base.py:242"
TE_DELAYED = "NVIDIA/TransformerEngine@v1.11:transformer_engine/common/recipe/__init__.py:54"

SPLIT = {}  # row id -> "development" | "held_out", filled from split.json

FRAMEWORK = {"NeMo/Megatron-Core": "megatron-core", "Megatron-Core": "megatron-core", "torchtitan": "torchtitan",
             "torchtitan+torchao": "torchtitan", "NeMo AutoModel": "torchtitan", "MaxText (JAX)": "maxtext",
             "MaxText (JAX/XLA GPU)": "maxtext", "Paxml (JAX)": "maxtext", "Megatron-DeepSpeed": "deepspeed"}
CHIP_SLUG = {"H100": "h100", "H200": "h200", "A100": "a100", "B200": "b200", "GB200": "gb200", "TPU v4": "tpuv4",
             "TPU v6e": "tpuv6e", "Blackwell (SM100+, SKU not named)": "blackwell"}
SKIPPED_CHIP = {"GB200": "gb200", "TPU v4": "tpu-v4", "TPU v6e": "tpu-v6e",
                "Blackwell (SM100+, SKU not named)": "blackwell-unnamed"}
