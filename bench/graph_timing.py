"""Timing of GPU kernels inside a CUDA graph, shared by the probes run on a GPU machine
(bench/decode_attention_probe.py, bench/prefill_gemm_probe.py)."""
import torch


def graph_s(calls, calls_per_graph, min_s=0.1):
    """Seconds per call of `calls` (callables, cycled through) captured as one CUDA graph of
    `calls_per_graph` calls and replayed back-to-back for about min_s: kernel time and the graph's
    gap between kernels, without host dispatch."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for c in calls:
            c()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(calls_per_graph):
            calls[i % len(calls)]()
    g.replay()
    torch.cuda.synchronize()
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    s.record()
    g.replay()
    e.record()
    e.synchronize()
    rounds = max(3, int(min_s / (s.elapsed_time(e) / 1e3)))
    s.record()
    for _ in range(rounds):
        g.replay()
    e.record()
    e.synchronize()
    t = s.elapsed_time(e) / 1e3 / (rounds * calls_per_graph)
    del g
    return t
