"""Family 7 of the modern validation set (make_scenarios.py): JAX. DGX Cloud MaxText and Paxml on H100, MaxText
on A3, MaxText on TPU v4 (2023) and TPU v6e (tpu-recipes)."""
from families.common import (
    HARDWARE, K, TPU_SLICES, apply_knobs, assumptions_text, base_plan, dense, dgxc_source, gpu_cluster, jax_pool,
    maxtext_2023_tflop_per_device, maxtext_apr2024_tflop_per_device, mixtral_8x7b, moe, scenario, step_metric,
    tpu_cluster)
from families.dgxc_nemo import dg


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
