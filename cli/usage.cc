#include "commands.h"

#include <sstream>
#include <string>

namespace shardsim::cli {

const char* const kUsage = R"(shardsim: predict how a Transformer training or inference step runs on a cluster.

Usage:
  shardsim simulate SCENARIO [--set PATH=VALUE]... [--json] [--trace FILE]
                             [--trace-devices LIST] [--no-timing]
                             [--critical-path on|off|auto]
                             [--replica-shortcut on|off|auto]
                             [--backend native|simgrid]
      Lower SCENARIO (model + cluster + plan) to a per-device program and
      simulate one step: training, or with plan.phase "prefill" / "decode"
      one inference step. Prints a summary, or with --json one object:
      step_time_s, mfu, hfu, model_tflops_per_device, tokens_per_s, breakdown
      {compute_s, exposed_comm_s, bubble_s, other_s}, memory
      {peak_bytes_per_device, capacity_bytes, fits, components},
      critical_path {length_s, ops, devices, by_category_s, top_segments}:
      the chain of ops, each started when the one before ended, that makes
      the step time (its categories sum to it), sim {events, flows, devices,
      ops_per_device, wall_s, backend}.
      --set plan.tp=4      override any field (dotted JSON path; the value is
                           JSON, or a string if it is not; null removes it)
      --trace FILE         write a Chrome trace (open in ui.perfetto.dev)
      --trace-devices L    devices to trace, e.g. 0,1,8-15 (default 0)
      --no-timing          report sim.wall_s as 0, for byte-identical output
      --critical-path M    the step's critical path records every running
                           device's ops (about 150 bytes and 1 us each).
                           auto (default): up to 4.2M op instances, else
                           critical_path says why it was skipped; on; off.
      --replica-shortcut   where the symmetry below does not already cover
                           dp, simulate only data-parallel replica 0 (an
                           estimate: collectives over dp still move every
                           member's data, other replicas' own traffic is not
                           simulated). auto (default): on above 2048
                           devices, and where it is exact (a replica is one
                           NVSwitch node). sim.replica_estimate says if.
                           Symmetry (native backend): the devices that mesh
                           translations map onto each other, with the fabric,
                           routes and collective plans, run once per orbit,
                           exactly (sim.symmetry says along which axes,
                           sim.simulated_devices how many ran; --set
                           simulator.symmetry=false runs every device).
      --backend B          native (default): shardsim's max-min fluid network;
                           simgrid: SimGrid decides how flows share links (in
                           a worker process; CM02 by default, or LV08 with
                           --set simulator.simgrid_network_model=LV08).
                           Same as --set simulator.backend=B.
      SCENARIO may also be a scenario whose "workload" is {"kind": "chakra",
      "dir": DIR} instead of a model and a plan, or a directory of Chakra
      traces with its scenario.json (what export chakra writes): each rank's
      recorded program runs on the scenario's cluster (docs/chakra.md).
      --retime             a trace's compute nodes with FLOPs or bytes take
                           the compute model's time on the cluster's chip,
                           not their recorded one

  shardsim export chakra SCENARIO --out DIR [--prefix P] [--set PATH=VALUE]...
                         [--json]
      Write the step as a Chakra execution trace (MLCommons): DIR/P.<rank>.et
      for every device (P is "shardsim" by default), comm_groups.json (for
      ASTRA-sim's --comm-group-configuration) and scenario.json, which
      `shardsim simulate DIR` runs. DIR must not exist or be empty; an
      error leaves nothing. --json: the summary as one object (dir, prefix,
      ranks, nodes, groups, bytes, wall_s).

  shardsim chakra dump FILE.et [--out TEXT]
  shardsim chakra pack TEXT --out FILE.et
      A Chakra trace file as protobuf text (to stdout by default), and such
      text (a "# GlobalMetadata" block, then "# Node" blocks) back into a
      file: for reading traces and writing small ones by hand.

  shardsim whatif SCENARIO [--speedup LEVER=K]... [--factor K] [--jobs J]
                  [--set PATH=VALUE]... [--json]
      How much shorter would the step be if one part of it were K times
      faster? Re-simulates SCENARIO with each lever sped up alone and ranks
      the levers by the step time saved, beside each one's share of the base
      step's critical path. Levers: a compute kind (matmul, attention,
      elementwise, norm, softmax, embedding, loss, optimizer) or compute (all);
      stream:NAME, a communication stream ("stream:dp gather"): its
      collectives and transfers K times faster; net:KIND (ici, nvlink, nic,
      switch) or net (all): K times the bandwidth of those links. The same
      keys as a scenario's simulator.speedup object.
      --speedup LEVER=K    try these levers (each alone, then together)
                           instead of every lever of the step
      --factor K           the speed-up of every lever (default 2)
      --jobs J             simulations at once (default: all cores)

  shardsim topology FILE|SCENARIO|CLUSTER [--check] [--json] [--graphml OUT]
                    [--dot OUT] [--set PATH=VALUE]...
      Check a fabric graph file (GraphML or DOT: devices ranked 0..n-1, links
      with bw_GBps per direction, every device reachable), or build the graph
      of a scenario's or cluster's fabric (fat tree, torus, graph), and print
      its devices, switches, links by kind and rate, NVLink domains and the
      longest route from device 0 (--json: as one object). --graphml / --dot
      write it (- for stdout, without the summary).
      Graph fabrics: cluster.fabric {"kind": "graph", "file": F} or
      {"kind": "graph", "generate": fat_tree|nvl72|multi_plane|rail_only|
      dragonfly} (docs/topology.md).

  shardsim collective SCENARIO|CLUSTER --op OP (--bytes SIZE | --sweep MIN:MAX
                      [--factor F]) [--group G] [--concurrent]
                      [--nccl-table] [--set PATH=VALUE]... [--json]
      Time one collective alone on the fabric, like nccl-tests: time, algorithm
      bandwidth (size / time) and bus bandwidth.
      OP: all-reduce, all-gather, reduce-scatter, all-to-all, broadcast
      SIZE: bytes, or with a unit: 64MB, 256MiB, 1GiB
      --sweep MIN:MAX      every size from MIN to MAX, each F times the last
                           (default 2, like nccl-tests -b MIN -e MAX -f 2), as
                           a table: size, time, algbw, busbw, algorithm
                           (inside a GPU node: NCCL's choice of algorithm and
                           protocol, e.g. nvls/Simple, ring/LL128; across
                           nodes too with --set fabric.nccl_across_nodes=true)
      G: all (default), N (the first N devices), or tp / dp (a scenario's
         group holding device 0)
      --concurrent         run every group of that shape at once (contention)
      --nccl-table         also print NCCL's tuning table for the group: per
                           algorithm and protocol, channels, latency and
                           algorithm bandwidth (what NCCL logs with
                           NCCL_DEBUG_SUBSYS=TUNING), or why there is none
      --set PATH=VALUE     change the input: for a CLUSTER, paths name its
                           fields (fabric.nvls=false); for a SCENARIO, the
                           scenario's (cluster.fabric.nvls=false)

  shardsim search SCENARIO [--objective step_time|mfu|cost] [--top K]
                  [--max-simulations N] [--jobs J] [--devices N]
                  [--emit-best FILE] [--report FILE] [--set PATH=VALUE]... [--json]
                  [--no-timing] [--max-ttft-p99-s S] [--max-tpot-p99-s S]
      Which plan should I run? Enumerates the plans of SCENARIO's model,
      cluster and batch (tp, cp, pp and schedule, dp, ep, ZeRO stage,
      microbatch size, recomputation), drops the invalid and those over
      memory, bounds every other's step time from below (FLOPs through the
      pipeline; each layer's own work and communication; the lowered
      programs), and simulates in the order of the bounds, the scenario's own
      plan first, until no plan left can beat the best (up to N, default 64)
      and prints them ranked with the counts of each tier. "best proven"
      means every plan left was pruned by a bound.
      --objective cost     fewest device-seconds per step, also trying N/2,
                           N/4, ... devices (GPU clusters)
      --emit-best FILE     write the best plan as a ready scenario file
      --report FILE        write the HTML report of the best plan, with every
                           simulated plan as step time against peak memory
      --jobs J             simulations at once (default: every core); the
                           answer does not depend on it
      mpirun -n N shardsim search ... deals each wave's simulations out
      across N ranks (on J threads each); the answer does not depend on N.
      With an inference plan and a serving object, the search serves the
      request stream on every replica layout (tp, pp, ep) and ranks them by
      output tokens/s per device, those within the limits first:
      --max-ttft-p99-s S   time-to-first-token p99 limit
      --max-tpot-p99-s S   time-per-output-token p99 limit

  shardsim report SCENARIO --out FILE [--set PATH=VALUE]...
      Write one self-contained HTML page (no network, no script) about
      SCENARIO's step: how far to trust it (the validation rows like it, as
      `shardsim evidence` gives them), the time breakdown, a timeline of up
      to four devices (each stream; idle compute shaded), memory over the
      step by component, and a roofline of the ops against the chip's peak
      and HBM bandwidth.

  shardsim serve SCENARIO [--set PATH=VALUE]... [--json] [--trace FILE]
                 [--no-timing]
      Serve a request stream (SCENARIO's "serving" object: Poisson arrivals,
      a burst queued at once (maximum load) or a closed loop of clients,
      with prompt and output length distributions, or a trace file) on
      plan.dp / plan.ep replicas with iteration-level (continuous) batching
      and a paged KV cache, under an engine's policy (generic, vllm, sglang,
      trtllm: chunked and mixed batches, output reservation, prefix caching
      of shared prompt prefixes, their limits); optional speculative
      decoding and prefill/decode disaggregation. Every distinct iteration
      is lowered and simulated.
      Prints time to first token, time per output token, inter-token
      latency and end-to-end latency at p50/p90/p99, throughput, KV cache
      use and prefix-cache hits. The same seed gives the same output.
      --trace writes each replica's iterations and KV use as a Chrome trace.

  shardsim validate DIR [--json] [--check] [--split S] [--threads N]
                        [--record FILE] [--against FILE]
      Simulate every scenario under DIR (recursively) that has a "published"
      object and print predicted against published figures: each row's
      error, and the mean and max |error| by split (in_sample, development,
      held_out), framework, chip and source; peak-memory rows; published
      runs judged out of memory; rows listed as not expressible in a
      manifest.json. examples/validation holds the 2021-22 Megatron-LM and
      Korthikanti runs (in sample) and, in modern/, 367 runs of today's
      stacks with their development / held-out split (docs/validation.md).
      --check           load and check every scenario, simulate nothing
      --split S         simulate only rows of that split
      --threads N       scenarios simulated at once (default: all cores)
      --record FILE     write the accuracy record: every row's |error| and
                        the groups' statistics, with tolerances
      --against FILE    compare with a record; exit 1 if any row or group got
                        worse beyond its tolerance (CTest runs this)

  shardsim evidence SCENARIO [--record FILE] [--set PATH=VALUE]... [--json]
      How far to trust a prediction for SCENARIO: the accuracy record's rows
      (examples/validation/accuracy.json, embedded at build time) that share
      its framework, chip and GEMM precision (a serving scenario: its
      engine, chip and each family of metrics: throughput, time to first
      token, time per output token, end-to-end latency), then fewer of
      them, each side of the protocol apart (held out, development, in
      sample): rows, mean and max |error|, the mean speed error (predicted
      speed over measured, less 1: positive is too fast) and the share too
      fast, runs judged out of memory, peak-memory rows. "closest" is the
      most specific level whose sides hold 3 or more time or throughput
      rows together (docs/validation.md). Rows simulated with a calibration
      profile stand only for scenarios with one. --record FILE reads
      another record (`shardsim validate --record`). --json: scenario,
      family, framework, chip, precision, calibrated, record, groups
      [{level, label, split, rows, mean_abs_error, max_abs_error,
      mean_bias, rows_high (predicted too fast), runs, out_of_memory,
      memory_rows, memory_mean_abs_error, memory_max_abs_error,
      memory_mean_bias}], closest (a level, or null).

  shardsim run SCENARIO [--backend cpu|cuda] [--ranks N] [--steps K]
               [--warmup K] [--verify] [--trace FILE] [--json]
               [--timeout-s S] [--set PATH=VALUE]...
      Run the step for real: N MPI ranks (N = cluster.devices; default),
      started as `mpirun -n N --oversubscribe shardsim-rank ...`, each running
      its device's program with OpenBLAS kernels (bf16 as fp32) and MPI
      collectives. Prints the measured step time (median of K steps, default
      3, after 1 warm-up), time per op kind and the last step's critical
      path (on the ranks' own clocks); --json: step_time_s, step_times_s,
      time_by_kind_s, critical_path (as simulate gives it), verify. --trace
      writes the measured Timeline of the last step as a Chrome trace, the
      critical path as its first process. --verify checks every
      kernel against a reference and every communication result (exit 1 on
      a mismatch). A rank that dies or hangs ends the run within --timeout-s
      (default 300) with exit 1 and an error naming the rank
      (docs/realexec.md). `mpirun -n N shardsim run SCENARIO ...` also works
      (mpirun then supervises the ranks). --backend cuda: the same on GPUs
      (shardsim-rank-cuda: one GPU per rank, cuBLAS matmuls, NCCL
      collectives); exit 2 when it is not built or no GPU is usable.

  shardsim calibrate [--backend cpu|cuda] [--ranks N] --out FILE [--json] [--quick]
                     [--timeout-s S]
      Micro-benchmarks on N ranks (default 2): matmul FLOP/s by size,
      attention, memory bandwidth, the loss kernel, and each collective by
      group and message size with a latency + size / bandwidth fit. Writes
      the profile JSON; a scenario uses it with "cluster": {"calibration":
      FILE} (or --set cluster.calibration=FILE). --backend cuda: the same on
      GPUs (cuBLAS, NCCL; one GPU per rank), and fp8 products (cuBLASLt)
      where the GPU has fp8 tensor cores.

  shardsim compare PREDICTED.json MEASURED.json [--json] [--report FILE]
      Step-time error, compute time per op kind and the critical path's
      time by category (when both have one) of `simulate --json`
      (predicted) against `run --json` (measured); error = (predicted -
      measured) / measured. --report writes them as an HTML page.

  shardsim presets [list]            list chips, models and clusters
  shardsim presets show NAME         print one preset as JSON

Exit status: 0 success, 2 bad input or usage (one line on stderr naming the
file and JSON path), 1 internal error.
)";

std::string command_usage(const std::string& cmd) {
  // kUsage lists the commands in paragraphs: a blank line, then lines
  // "  shardsim NAME ..." (one or more of one command) and the deeper-
  // indented text about them; an unindented line ("Exit status:") ends the
  // list. A command's usage is its paragraphs, in order.
  std::istringstream in(kUsage);
  const std::string header = "  shardsim ";
  std::string line, out, paragraph;
  bool after_blank = false;
  bool ours = false;
  while (std::getline(in, line)) {
    const bool starts = after_blank && line.rfind(header, 0) == 0;
    const bool ends = !line.empty() && line[0] != ' ' && line.back() != ':';
    if (starts || ends) {
      if (ours) out += paragraph;
      paragraph.clear();
      const std::string rest = starts ? line.substr(header.size()) : std::string();
      ours = starts && (rest == cmd || rest.rfind(cmd + " ", 0) == 0);
    }
    paragraph += line + "\n";
    after_blank = line.empty() || (line[0] != ' ' && line.back() == ':');
  }
  if (ours) out += paragraph;
  if (out.empty()) return {};
  while (out.size() >= 2 && out.compare(out.size() - 2, 2, "\n\n") == 0) out.pop_back();
  return "Usage:\n" + out + "\n" +
         "Exit status: 0 success, 2 bad input or usage, 1 internal error.\n"
         "shardsim --help lists every command.\n";
}

}  // namespace shardsim::cli
