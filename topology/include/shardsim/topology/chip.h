// An accelerator chip: peak compute, memory, its links, and the few default
// efficiencies the compute model uses. Presets cite their figures
// (presets/chips/*.json, from shared/reference/hardware.md).
#pragma once

#include <array>
#include <string>

#include "shardsim/core/program.h"
#include "shardsim/core/units.h"

namespace shardsim {

enum class ChipFamily : uint8_t { kGpu, kTpu, kCpu };

struct ChipSpec {
  std::string name;
  ChipFamily family = ChipFamily::kGpu;
  FlopsPerSec bf16_peak{0};
  FlopsPerSec fp8_peak{0};  ///< 0 when the chip has no fp8 matmul
  FlopsPerSec fp4_peak{0};  ///< dense block-scaled fp4 (NVFP4 / MXFP4); 0 when the chip has none
  Bytes hbm_capacity{0};
  BytesPerSec hbm_bandwidth{0};
  // Interconnect of one chip (one-way figures).
  BytesPerSec nvlink_per_gpu{0};  ///< GPU: NVLink to the node's NVSwitch
  BytesPerSec nic_per_gpu{0};     ///< GPU: scale-out NIC
  BytesPerSec ici_per_link{0};    ///< TPU: one ICI link
  BytesPerSec dcn_per_chip{0};    ///< TPU: the chip's share of its host's data-center network, one way
  /// The chip's own link to its host's memory (PCIe, NVLink-C2C), one way:
  /// what offloaded activations cross (plan.recompute_offload). 0: not
  /// stated, and a plan that offloads is refused.
  BytesPerSec host_link{0};
  /// Measured ring all-reduce bus bandwidth / NVLink line rate (NCCL figures).
  double nvlink_ring_efficiency = 1.0;
  /// GPU: CUDA compute capability x 10 (80 A100, 90 H100/H200, 100 B200) and
  /// NVLinks to the NVSwitches: what NCCL's cost model reads (0: unknown).
  int compute_capability = 0;
  int nvlink_links = 0;
  // Compute model defaults (sim/compute_model.h documents their use).
  double matmul_efficiency = 1.0;      ///< large bf16 GEMM fraction of the bf16 peak
  double fp8_matmul_efficiency = 1.0;  ///< large fp8 GEMM fraction of the fp8 peak (fast accumulation)
  double fp4_matmul_efficiency = 1.0;  ///< large fp4 GEMM fraction of the fp4 peak
  /// An fp8 GEMM that promotes its partial sums to fp32 as it goes (cuBLASLt
  /// without CUBLASLT_MATMUL_DESC_FAST_ACCUM: Transformer Engine's "split
  /// accumulator"), as training stacks run their backward GEMMs, runs at
  /// this fraction of the fast-accumulating rate fp8_matmul_efficiency
  /// describes (1: the tensor cores accumulate in fp32 anyway, Blackwell).
  double fp8_split_accumulator_efficiency = 1.0;
  /// A GEMM tile's fixed cost (pipeline fill, epilogue) in K elements at the
  /// bf16 rate: a tile that loops over K elements runs at K / (K + this)
  /// of the asymptotic rate; fp8 tiles step through K twice as fast, so
  /// the same fixed time is twice the K elements.
  double matmul_k_overhead = 0;
  /// The largest fraction of its format's peak a GEMM sustains at the
  /// chip's power limit, whatever its shape: where the tile loop would run
  /// faster (long K, whole waves), the clock falls until the power fits.
  /// A GEMM's efficiency is min(format efficiency x tile and wave terms,
  /// this); 1 where the measured rates show no such ceiling (Hopper's K
  /// sweeps follow the tile form to K = 16384). Taken as the same fraction
  /// for every format: energy per FLOP falls as the format's peak rises.
  double matmul_power_cap = 1.0;
  double attention_efficiency = 1.0;  ///< fused attention fraction of peak (kernels not listed below)
  /// Measured rate of a fused attention kernel on this chip: forward and
  /// backward fraction of the bf16 peak at long sequences, in the
  /// FlashAttention benchmarks' convention (causal FLOPs counted once,
  /// backward as 2.5 forward), and the key length at which each reaches half
  /// of that (rate(n) = rate · n / (n + half_tokens)); a backward reaches
  /// its rate later than the forward where measured (backward_half_tokens).
  struct AttentionRate {
    double forward = 0;  ///< 0: not measured on this chip
    double backward = 0;
    double half_tokens = 0;           ///< the forward's
    double backward_half_tokens = 0;  ///< the backward's (the forward's unless measured apart)
  };
  std::array<AttentionRate, kAttentionKernels> attention_kernels{};
  double memory_efficiency = 1.0;  ///< achievable fraction of HBM bandwidth
  SimTime launch_overhead;         ///< per-op fixed cost
  /// A kernel's fixed time inside a CUDA graph (launch, ramp-up and drain of
  /// back-to-back tiny kernels): what a graphed op pays instead of
  /// launch_overhead.
  SimTime graph_launch_overhead;
  /// What a matmul bound by its HBM traffic (a decode-shaped GEMM: a few
  /// rows against a weight read once) takes beyond a streaming kernel of the
  /// same bytes: its ramp-up, the reduction of K split over thread blocks and
  /// its drain. Measured on H100 and H200 (bench/decode_attention_probe.py,
  /// bench/fit_decode_kernels.py); 0 where not measured.
  SimTime memory_bound_matmul_extra;
  /// The same for attention bound by its cache reads (decode attention:
  /// split-K over the cached positions, then a combine).
  SimTime memory_bound_attention_extra;
  int compute_units = 1;  ///< SMs (GPU) or MXUs (TPU) that tiles spread over
  /// SMs a communication kernel holds while it runs (NCCL: one thread block
  /// per channel); compute beside it gets compute_units minus these.
  int comm_compute_units = 0;
  /// HBM bandwidth a memory-bound kernel loses beside a communication
  /// kernel, per fraction of the SMs that kernel holds: it keeps
  /// 1 - comm_memory_weight · held / compute_units of its rate (the
  /// communication kernel's loads and stores take that share of HBM). 0:
  /// not modelled. Measured on H100 and H200 beside a paced copy kernel on
  /// 16-32 SMs (bench/hbm_contention_probe.py).
  double comm_memory_weight = 0;
  int tile_m = 128, tile_n = 128, tile_k = 64;  ///< matmul tile of one compute unit
  /// The GEMM library hands every compute unit an equal share of the
  /// matmul's K iterations over all its tiles (stream-K: persistent kernels),
  /// so a partial last wave of tiles costs nothing; else tiles run in whole
  /// waves. CUDA 13.0's cuBLAS on H200 measured so
  /// (bench/prefill_gemm_probe.py); off in every preset (docs/model.md,
  /// section 3: a known inconsistency).
  bool matmul_stream_k = false;
  /// The compute units the GEMM library cuts split-K pieces and stream-K
  /// shares for when fewer are free: 0 (the default) for compute_units. Not
  /// a preset field: set by chip_beside_communication (sim/compute_model.h)
  /// for compute beside an NCCL kernel, which the library does not know of,
  /// so it still cuts the work for the whole chip and the pieces that find
  /// no free unit run in a second round.
  int planned_compute_units = 0;
  /// The tensor cores' clock in this cluster over the clock the preset's
  /// compute rates were measured at (1: the same): a GPU held below its
  /// default power limit lowers its SM clock, so compute-bound matmuls and
  /// attention run at this fraction of their rates, while a power cap does
  /// not lower the HBM clock, so memory-bound kernels keep theirs. Not a
  /// preset field: the scenario's cluster.compute_clock_scale (docs/model.md,
  /// section 3, "Power-capped GPUs").
  double compute_clock_scale = 1.0;
  std::string source;  ///< citation of the figures

  /// Peak FLOP/s of a matmul at `d`: fp4 at fp4_peak, fp8 and int8 at
  /// fp8_peak, each falling back to the next wider format the chip has
  /// (fp4 to fp8), else bf16.
  FlopsPerSec matmul_peak(DType d) const {
    if (d == DType::kFp4 && fp4_peak.value() > 0) return fp4_peak;
    if ((d == DType::kFp8 || d == DType::kInt8 || d == DType::kFp4) && fp8_peak.value() > 0) return fp8_peak;
    return bf16_peak;
  }
  /// The efficiency of the format a GEMM in `d` runs at, as a fraction of
  /// matmul_peak(d) (fp4 without fp4 tensor cores runs at fp8's).
  double format_matmul_efficiency(DType d) const {
    if (d == DType::kFp4 && fp4_peak.value() > 0) return fp4_matmul_efficiency;
    if ((d == DType::kFp8 || d == DType::kInt8 || d == DType::kFp4) && fp8_peak.value() > 0) {
      return fp8_matmul_efficiency;
    }
    return matmul_efficiency;
  }
  /// The fraction of matmul_peak(d) no GEMM in `d` exceeds: its format's
  /// efficiency under the power cap (the roofline bounds of the search).
  double best_matmul_efficiency(DType d) const {
    const double format = format_matmul_efficiency(d);
    return format < matmul_power_cap ? format : matmul_power_cap;
  }
};

}  // namespace shardsim
