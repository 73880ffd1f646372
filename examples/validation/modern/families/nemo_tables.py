"""Families 1 and 2 of the modern validation set (make_scenarios.py): the NeMo 24.07 performance summary
(r0001-r0012) and the NeMo long-sequence tables (r0013-r0029)."""
from families.common import (
    HARDWARE, K, MIB, TE_DEFAULT_SMS, apex_master_copy, apply_knobs, assumptions_text, base_plan, gpt3_nemo,
    gpu_cluster, llama_nemo, mean_sms, nemo_llama_flops, nemotron, scenario)


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
