"""Families 3 and 4 of the modern validation set (make_scenarios.py): the DGX Cloud recipes of Megatron-Core
through NeMo, on the NeMo-1.0 YAML path (v24.11.1, v25.02) and the NeMo 2.0 path (v25.04, v25.05.01, dfc8039)."""
import re

from families.common import (
    HARDWARE, K, MIB, NO_BUCKETING, TE_DEFAULT_SMS, TE_DELAYED, apex_master_copy, apply_knobs, assumptions_text,
    base_plan, dense, dgxc_source, embed_loss_split, gb200_cluster, gpt3_nemo, gpu_cluster, grok1, llama_nemo,
    mcore_default_bucket_bytes, mean_sms, megatron_dp_knobs, nemotron, scenario, step_metric)


# =========================================================================================================
# 3. DGX Cloud recipes on the NeMo-1.0 YAML path (v24.11.1 = 35a9aec, v25.02 = 8f5cbb3): Llama 3.1,
#    GPT-3 175B, Nemotron-4, Grok-1. Measured step time.
# =========================================================================================================

DGXC_COMMIT = {"dgxc v24.11.1": "35a9aec", "dgxc v25.02": "8f5cbb3", "dgxc v25.04": "741c886", "dgxc v25.05": "68eaf7e",
               "dgxc v25.05.01": "60d6fd3", "dgxc v25.05.02 (commit dfc8039, revised Grok1 H100)": "dfc8039"}
DGXC_SOFTWARE = {"35a9aec": "nemo:24.09 (NeMo 2.0.0, MCore 0.9, TE 1.10)",
                 "8f5cbb3": "nemo:24.12 (NeMo 2.1.0, MCore 0.10, inferred from the container date)"}
DGXC_NEMO = {"35a9aec": "v2.0.0", "8f5cbb3": "v2.1.0"}  # the NeMo release of each container above


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
    knobs["expert_layout"] = K("nested", "NVIDIA/Megatron-LM@core_v0.9.0:megatron/core/parallel_state.py:536,591-599",
                               "default", "one RankGenerator: ep inside dp, outside tp and cp (order tp-cp-ep-dp-pp); "
                               "parallel folding came with core_v0.10.0")
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
    knobs["expert_layout"] = K("folded", "NVIDIA/Megatron-LM@core_v0.12.0:megatron/core/parallel_state.py:693-714",
                               "default", "expert groups from their own RankGenerator (expert_tp, ep, expert dp, pp): "
                               "an expert group takes consecutive ranks past its expert_tp ones")
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
