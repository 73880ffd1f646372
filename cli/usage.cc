#include "commands.h"

namespace shardsim::cli {

const char* const kUsage = R"(shardsim: predict how a Transformer training step runs on a cluster.

Usage:
  shardsim simulate SCENARIO [--set PATH=VALUE]... [--json] [--trace FILE]
                             [--trace-devices LIST] [--no-timing]
                             [--replica-shortcut on|off|auto]
      Lower SCENARIO (model + cluster + plan) to a per-device program and
      simulate one training step. Prints a summary, or with --json one object:
      step_time_s, mfu, hfu, model_tflops_per_device, tokens_per_s, breakdown
      {compute_s, exposed_comm_s, bubble_s, other_s}, memory
      {peak_bytes_per_device, capacity_bytes, fits, components}, sim {events,
      flows, devices, ops_per_device, wall_s}.
      --set plan.tp=4      override any field (dotted JSON path; the value is
                           JSON, or a string if it is not)
      --trace FILE         write a Chrome trace (open in ui.perfetto.dev)
      --trace-devices L    devices to trace, e.g. 0,1,8-15 (default 0)
      --no-timing          report sim.wall_s as 0, for byte-identical output
      --replica-shortcut   simulate only data-parallel replica 0 (replicas run
                           the same program; collectives over dp still move
                           every member's data). auto (default): on above
                           2048 devices. sim.simulated_devices says which.

  shardsim collective SCENARIO|CLUSTER --op OP --bytes SIZE [--group G]
                      [--concurrent] [--set PATH=VALUE]... [--json]
      Time one collective alone on the fabric, like nccl-tests: time, algorithm
      bandwidth (size / time) and bus bandwidth.
      OP: all-reduce, all-gather, reduce-scatter, all-to-all, broadcast
      SIZE: bytes, or with a unit: 64MB, 256MiB, 1GiB
      G: all (default), N (the first N devices), or tp / dp (a scenario's
         group holding device 0)
      --concurrent         run every group of that shape at once (contention)

  shardsim validate DIR [--json]
      Simulate every scenario in DIR that has a "published" object and print
      predicted against published figures, each row's error and the mean
      (examples/validation holds the published runs of Megatron-LM and
      Korthikanti et al.).

  shardsim run SCENARIO [--backend cpu|cuda] [--ranks N] [--steps K]
               [--warmup K] [--verify] [--trace FILE] [--json]
               [--timeout-s S] [--set PATH=VALUE]...
      Run the step for real: N MPI ranks (N = cluster.devices; default),
      started as `mpirun -n N --oversubscribe shardsim-rank ...`, each running
      its device's program with OpenBLAS kernels (bf16 as fp32) and MPI
      collectives. Prints the measured step time (median of K steps, default
      3, after 1 warm-up) and time per op kind; --json: step_time_s,
      step_times_s, time_by_kind_s, verify. --trace writes the measured
      Timeline of the last step as a Chrome trace. --verify checks every
      kernel against a reference and every communication result (exit 1 on
      a mismatch). A rank that dies or hangs ends the run within --timeout-s
      (default 300) with exit 1 and an error naming the rank
      (docs/realexec.md). `mpirun -n N shardsim run SCENARIO ...` also works
      (mpirun then supervises the ranks). --backend cuda: exit 2 (no CUDA
      executor yet).

  shardsim calibrate [--backend cpu] [--ranks N] --out FILE [--json] [--quick]
                     [--timeout-s S]
      Micro-benchmarks on N ranks (default 2): matmul FLOP/s by size,
      attention, memory bandwidth, the loss kernel, and each collective by
      group and message size with a latency + size / bandwidth fit. Writes
      the profile JSON (the simulator does not read it yet).

  shardsim compare PREDICTED.json MEASURED.json [--json]
      Step-time error and compute time per op kind of `simulate --json`
      (predicted) against `run --json` (measured); error = (predicted -
      measured) / measured.

  shardsim presets [list]            list chips, models and clusters
  shardsim presets show NAME         print one preset as JSON

Exit status: 0 success, 2 bad input or usage (one line on stderr naming the
file and JSON path), 1 internal error.
)";

}  // namespace shardsim::cli
