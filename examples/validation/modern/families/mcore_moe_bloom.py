"""Families 5 and 6 of the modern validation set (make_scenarios.py): the Megatron-LM MoE README's Mixtral 8x7B
runs (r0545-r0546) and BLOOM-176B on Megatron-DeepSpeed (r0575)."""
from families.common import (
    HARDWARE, K, apply_knobs, assumptions_text, base_plan, dense, gpu_cluster, mcore_default_bucket_bytes,
    megatron_lm_flops, mixtral_8x7b, scenario, step_metric)


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
