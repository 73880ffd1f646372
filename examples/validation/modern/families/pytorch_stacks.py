"""Family 8 of the modern validation set (make_scenarios.py): PyTorch. torchtitan's benchmarks and docs, the
torchao float8 and MX tables, torchtitan's NVFP4 runs and NeMo AutoModel."""
import math

from families.common import (
    GRAND_TETON_500W_CLOCK_SCALE, HARDWARE, K, POWER_CAPPED, POWER_CAP_NOTE, TT_NVFP4_HBM_BYTES, apply_knobs,
    assumptions_text, automodel_split, base_plan, deepseek_v3, dense, gb200_chip_with_memory, gpt_oss, gpu_cluster,
    gpu_fabric, kimi_k2, power_cap_fitted, qwen3_30b_a3b, scenario, step_metric, torchtitan_split)


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
                  "default off); CP rotate method allgather and load balancing (defaults). torchtitan shards parameters "
                  "over dp_shard*cp = 8 ranks (FSDP mesh dp_shard_cp, parallelize_llama.py:79-94), as shardsim's "
                  "zero 3 does over dp x cp (notes/pytorch.md 4.1 F2 took it for inexpressible)"),
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
                  "auto split 15,16x6,15; mesh with pp outermost. Parameters are sharded over dp_shard*cp = 8 ranks "
                  "in torchtitan, as shardsim's zero 3 does over dp x cp (notes/pytorch.md 4.1 F5 took it for "
                  "inexpressible)"),
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
