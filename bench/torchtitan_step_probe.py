#!/usr/bin/env python3
# One GPU's share of a torchtitan Llama 3 8B training step, run for real, to check the per-device
# compute the simulator predicts for torchtitan (docs/model.md, "A torchtitan step on one GPU").
#
# The model is torchtitan's Llama 3 of its 0.0.2 window (pytorch/torchtitan@54ef42221
# torchtitan/models/llama/model.py, norms.py): separate wq/wk/wv/wo and w1/w3/w2 linears without
# biases, RoPE through complex multiplication (view_as_complex), GQA's repeat_kv (expand and
# reshape), SDPA with is_causal, RMSNorm computed in fp32 (norm_type "rmsnorm", the default of
# llama3_8b.toml), and the loss as cross_entropy over the fp32-cast logits (train.py). Weights are
# held in bf16: the compute dtype FSDP2's MixedPrecisionPolicy(param_dtype=bf16) hands the layers;
# FSDP itself (its all-gathers, copies and reduce-scatters) is not run: one GPU. Activation
# checkpointing is torchtitan's per-op selective policy (parallelize_llama.py, _apply_ac_to_block:
# save the outputs of mm, SDPA's flash attention and max, except every second mm), each block
# wrapped on its own; "compile" compiles each TransformerBlock (torch.compile per block, as
# parallelize_llama.py does). SDPA is held to FlashAttention-2, the backend torch 2.5-2.7 picked
# for bf16 on sm90 (what the validation runs used).
#
# For each configuration: the median CUDA-event time of the forward + backward over timed steps
# after warm-up (no optimizer: FSDP shards it over the data-parallel ranks), then one step under
# torch.profiler, its kernels' time summed by category (GEMM, flash attention forward/backward,
# the rest) and the 40 kernels that took longest; nvidia-smi's SM clock and power every 0.5 s.
#
#   python3 bench/torchtitan_step_probe.py OUT.json [--layers 32] [--configs compile:op_sac,...]
import argparse
import json
import subprocess
import tempfile
import time
from collections import defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--layers", type=int, default=32)
p.add_argument("--seq", type=int, default=8192)
p.add_argument("--batch", type=int, default=1)
p.add_argument("--warmup", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--configs", default="compile:op_sac,eager:op_sac,compile:none")
args = p.parse_args()

# Llama 3 8B (torchtitan models/llama/__init__.py "8B").
DIM, HEADS, KV_HEADS, FFN, VOCAB, THETA, EPS = 4096, 32, 8, 14336, 128256, 500000.0, 1e-5
HEAD_DIM = DIM // HEADS
dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False


class RMSNorm(nn.Module):
    """torchtitan norms.py RMSNorm: normalise in fp32, cast back, scale."""

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).type_as(x)
        return out * self.weight


def precompute_freqs_cis(dim, end, theta):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device, dtype=torch.float32)
    return torch.polar(torch.ones(dim // 2, dtype=torch.float32), torch.outer(t, freqs).float())


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    fc = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * fc).flatten(3)
    xk_out = torch.view_as_real(xk_ * fc).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x, n_rep):
    bs, slen, n_kv, hd = x.shape
    return x[:, :, :, None, :].expand(bs, slen, n_kv, n_rep, hd).reshape(bs, slen, n_kv * n_rep, hd)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.wq = nn.Linear(DIM, HEADS * HEAD_DIM, bias=False)
        self.wk = nn.Linear(DIM, KV_HEADS * HEAD_DIM, bias=False)
        self.wv = nn.Linear(DIM, KV_HEADS * HEAD_DIM, bias=False)
        self.wo = nn.Linear(HEADS * HEAD_DIM, DIM, bias=False)

    def forward(self, x, freqs_cis):
        bs, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bs, seqlen, -1, HEAD_DIM)
        xk = xk.view(bs, seqlen, -1, HEAD_DIM)
        xv = xv.view(bs, seqlen, -1, HEAD_DIM)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
        keys = repeat_kv(xk, HEADS // KV_HEADS)
        values = repeat_kv(xv, HEADS // KV_HEADS)
        xq, xk, xv = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        out = F.scaled_dot_product_attention(xq, xk, xv, is_causal=True)
        out = out.transpose(1, 2).contiguous().view(bs, seqlen, -1)
        return self.wo(out)


class FeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Linear(DIM, FFN, bias=False)
        self.w2 = nn.Linear(FFN, DIM, bias=False)
        self.w3 = nn.Linear(DIM, FFN, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = Attention()
        self.feed_forward = FeedForward()
        self.attention_norm = RMSNorm(DIM)
        self.ffn_norm = RMSNorm(DIM)

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.feed_forward(self.ffn_norm(h))


# torchtitan parallelize_llama.py _apply_ac_to_block, "op" mode.
_SAVE = {
    torch.ops.aten.mm.default,
    torch.ops.aten._scaled_dot_product_efficient_attention.default,
    torch.ops.aten._scaled_dot_product_flash_attention.default,
    torch.ops.aten.max.default,
}


def _op_sac_context():
    def policy(ctx, func, *a, **k):
        mode = "recompute" if ctx.is_recompute else "forward"
        key = f"{mode}_mm_count"
        if func == torch.ops.aten.mm.default:
            meta[key] += 1
        save = func in _SAVE and not (func == torch.ops.aten.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE

    meta = defaultdict(int)
    return create_selective_checkpoint_contexts(policy)


class Wrapped(nn.Module):
    """One block under the activation-checkpointing mode (torchtitan's checkpoint_wrapper)."""

    def __init__(self, block, ac):
        super().__init__()
        self.block, self.ac = block, ac

    def forward(self, x, freqs_cis):
        if self.ac == "none":
            return self.block(x, freqs_cis)
        if self.ac == "full":
            return checkpoint(self.block, x, freqs_cis, use_reentrant=False, preserve_rng_state=False)
        return checkpoint(self.block, x, freqs_cis, use_reentrant=False, preserve_rng_state=False,
                          context_fn=_op_sac_context)


class Model(nn.Module):
    def __init__(self, layers, ac, compiled):
        super().__init__()
        self.tok_embeddings = nn.Embedding(VOCAB, DIM)
        blocks = [Wrapped(Block(), ac) for _ in range(layers)]
        if compiled:
            blocks = [torch.compile(b) for b in blocks]
        self.layers = nn.ModuleList(blocks)
        self.norm = RMSNorm(DIM)
        self.output = nn.Linear(DIM, VOCAB, bias=False)
        self.register_buffer("freqs_cis", precompute_freqs_cis(HEAD_DIM, args.seq, THETA), persistent=False)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, self.freqs_cis)
        return self.output(self.norm(h))


def category(name):
    n = name.lower()
    if "flash" in n and "bwd" in n:
        return "attention backward"
    if "flash" in n:
        return "attention forward"
    if any(s in n for s in ("gemm", "nvjet", "sm90_xmma", "cutlass", "cublas", "xmma")):
        return "gemm"
    if "triton" in n:
        return "triton (compiled elementwise/norm)"
    if "nll_loss" in n or "log_softmax" in n or "softmax" in n:
        return "loss"
    if "embedding" in n or "index" in n:
        return "embedding"
    if "memcpy" in n or "memset" in n:
        return "copy/memset"
    return "other (eager elementwise, reductions)"


def run(compiled, ac):
    torch.manual_seed(0)
    model = Model(args.layers, ac, compiled).to(dev)
    for prm in model.parameters():
        if prm.dim() == 2:
            nn.init.normal_(prm, std=0.02)
    model = model.to(torch.bfloat16)
    model.freqs_cis = precompute_freqs_cis(HEAD_DIM, args.seq, THETA).to(dev)
    tokens = torch.randint(0, VOCAB, (args.batch, args.seq), device=dev)
    labels = torch.randint(0, VOCAB, (args.batch, args.seq), device=dev)

    def step():
        pred = model(tokens)
        loss = F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))
        loss.backward()
        for prm in model.parameters():
            prm.grad = None

    t0 = time.time()
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    warm_s = time.time() - t0
    times = []
    for _ in range(args.steps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        step()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    torch.cuda.reset_peak_memory_stats()
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    by_cat = defaultdict(float)
    by_kernel = defaultdict(lambda: [0.0, 0])
    for evt in prof.events():
        if evt.device_type != torch.autograd.DeviceType.CUDA:
            continue
        us = evt.time_range.elapsed_us()
        by_cat[category(evt.name)] += us / 1e6
        by_kernel[evt.name][0] += us / 1e6
        by_kernel[evt.name][1] += 1
    top = sorted(by_kernel.items(), key=lambda kv: -kv[1][0])[:40]
    times.sort()
    res = {
        "compile": compiled, "ac": ac, "layers": args.layers, "seq": args.seq, "batch": args.batch,
        "warmup_wall_s": round(warm_s, 2),
        "step_s": times, "median_step_s": times[len(times) // 2],
        "profiled_kernel_s_by_category": {k: round(v, 6) for k, v in sorted(by_cat.items())},
        "profiled_kernel_s_total": round(sum(by_cat.values()), 6),
        "top_kernels": [{"name": k[:160], "s": round(v[0], 6), "calls": v[1]} for k, v in top],
        "peak_allocated_GiB": round(torch.cuda.max_memory_allocated() / 2**30, 2),
    }
    del model
    torch.cuda.empty_cache()
    return res


out = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
       "args": vars(args), "runs": []}
smi_log = tempfile.NamedTemporaryFile(mode="w+", suffix=".csv")
smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,power.limit",
                        "--format=csv,noheader,nounits", "-lms", "500"], stdout=smi_log, stderr=subprocess.DEVNULL)


def save():
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
    for cfg in args.configs.split(","):
        mode, ac = cfg.split(":")
        try:
            r = run(mode == "compile", ac)
        except Exception as exc:  # record and go on: the next configuration may still run
            r = {"compile": mode == "compile", "ac": ac, "error": repr(exc)[:2000]}
            torch.cuda.empty_cache()
        out["runs"].append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "top_kernels"}), flush=True)
        save()
smi.terminate()
smi_log.seek(0)
samples = [l.split(",") for l in smi_log.read().splitlines() if l.count(",") == 2]
try:
    clocks = [float(s[0]) for s in samples]
    power = [float(s[1]) for s in samples]
    out["nvidia_smi"] = {"samples": len(samples), "sm_MHz_min_median_max": [min(clocks), sorted(clocks)[len(clocks) // 2], max(clocks)],
                         "power_W_median_max": [sorted(power)[len(power) // 2], max(power)], "power_limit_W": samples[0][2].strip()}
except (ValueError, IndexError):
    out["nvidia_smi"] = {"raw": samples[:5]}
save()
print(json.dumps(out.get("nvidia_smi")))
