// Compute time model.
//
//   time = launch_overhead + max(FLOPs / (peak · eff_kind · eff_shape),
//   (graph_launch_overhead instead for ops replayed in a CUDA graph: a
//   graphed kernel still pays its launch, ramp-up and drain on the GPU,
//   te42kyfo/gpu-benches gpu-small-kernels, T = a + V/b)
//                                HBM bytes / (HBM bandwidth · memory_efficiency))
//
// (Williams, Waterman, Patterson 2009, "Roofline"). eff_kind is the chip's
// matmul_efficiency for matmuls (a large square GEMM's measured fraction of
// peak) and attention_efficiency for fused attention. eff_shape models tile
// and wave quantization (NVIDIA, "Matrix Multiplication Background User's
// Guide", sections on tile and wave quantization; on TPUs, padding to the MXU
// size): the output is cut into tile_m x tile_n tiles processed tile_k deep,
// and the tiles run in waves of compute_units at a time, so a matmul whose
// tile count leaves the last wave part-empty, or whose dimensions are not
// tile multiples, wastes the rest. Other ops (norms, elementwise, loss,
// embedding, optimizer) are bound by HBM traffic.
//
// A matmul's or attention's HBM term carries the chip's
// memory_bound_matmul_extra / memory_bound_attention_extra, so a kernel bound
// by its bytes (decode: a few rows against a weight or a KV cache read once)
// pays it: the split-K reduction, ramp-up and drain such kernels add over a
// streaming kernel of their bytes,
//   time = launch + max(FLOPs / rate, bytes / bandwidth + extra).
// Measured on H100 and H200 as the mean of T - bytes / (HBM bw · memory_efficiency)
// over graphed cuBLAS decode GEMMs (4-470 MB) and cuDNN decode attention
// (under 300 MB of cache), less the graphed launch (bench/fit_decode_kernels.py).
//
// At its own power limit a chip's GEMMs cannot all run at the tile loop's
// rate: where the measured large GEMMs level off below the tile form (B200:
// squares from 4096^3 at 1410-1450 TFLOP/s where the form fitted to a K sweep
// keeps rising; bench/fit_published_sweep.py), the chip's matmul_power_cap
// bounds the efficiency, eff = min(E x tile and wave terms, cap).
//
// A GPU held below the power limit its rates were measured at runs its SMs
// at a lower clock: the FLOP term of a matmul or attention is divided by the
// cluster's compute_clock_scale (the clock ratio: tensor-core throughput is
// clock x FLOPs per clock), the HBM term is not (a power cap lowers the SM
// clock, not the memory clock), so a decode GEMV keeps its time.
#include "shardsim/sim/compute_model.h"

#include <algorithm>
#include <cmath>

namespace shardsim {

namespace {
int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// The tile side a GEMM library picks for a dimension shorter than the
/// default tile: the next power of two, at least 16 (the tensor-core
/// fragment; cuBLAS and CUTLASS ship skinny tiles for decode-shaped GEMMs).
int64_t tile_for(int64_t dim, int64_t tile) {
  if (dim >= tile) return tile;
  int64_t t = 16;
  while (t < dim) t *= 2;
  return std::min(t, tile);
}

}  // namespace

double matmul_quantization_efficiency(int64_t m, int64_t n, int64_t k, int64_t batch, const ChipSpec& c,
                                      double k_overhead) {
  if (m <= 0 || n <= 0 || k <= 0) return 1.0;
  const int64_t tm = tile_for(m, c.tile_m), tn = tile_for(n, c.tile_n);
  const int64_t tiles = ceil_div(m, tm) * ceil_div(n, tn) * std::max<int64_t>(batch, 1);
  const double useful = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
                        static_cast<double>(std::max<int64_t>(batch, 1));
  const int64_t ksteps = ceil_div(k, c.tile_k);
  // The units the GEMM library cuts the work for: the whole chip beside an
  // NCCL kernel, whose SMs it does not know of (chip_beside_communication).
  const int64_t units = c.compute_units, planned = std::max<int64_t>(c.planned_compute_units, units);
  if (c.matmul_stream_k) {
    // Stream-K (Osama et al., PPoPP 2023; persistent GEMM kernels, as
    // CUDA 13.0's cuBLAS runs on H200): the tiles' K iterations are dealt out evenly over the
    // compute units, so the padding is that of the tiles and of one
    // iteration per unit, not of a whole last wave; a tile whose K loop is
    // cut over several units pays its fill on each piece.
    //
    // Beside a kernel that holds some compute units, the GEMM library not
    // knowing of it (NCCL), the library still cuts the matmul for
    // planned_compute_units P, as data-parallel whole waves of tiles plus
    // the last partial wave's K iterations dealt evenly over P shares (the
    // data-parallel + stream-K hybrid of Osama et al.). The U free units
    // take the whole waves' tiles as they come (their K iterations spread
    // over U), and the P shares of the partial wave run in ceil(P / U)
    // rounds: a matmul of one partial wave takes twice as long beside 24
    // held SMs of 132. Measured (bench/fit_comm_contention.py): GEMMs of
    // 1024-2048 rows x1.6-1.8 on H100 and H200 beside a copy kernel on 16-32
    // SMs, larger ones x1.15-1.5 (the model: x1.6-2.0 and x1.14-1.40);
    // nearly x2 for a one-wave GEMM beside an NCCL all-gather holding 24 SMs
    // of an H100 (NVIDIA developer forum, "Compute-communication overlap
    // causes severe GEMM performance degradation because of tail effect").
    int64_t per_unit = ceil_div(tiles * ksteps, units);
    if (planned > units) {
      const int64_t whole = tiles / planned * planned, rest = tiles - whole;
      per_unit = ceil_div(whole * ksteps, units) +
                 (rest > 0 ? ceil_div(planned, units) * ceil_div(rest * ksteps, planned) : 0);
    }
    const double padded =
        static_cast<double>(per_unit) * static_cast<double>(units) * static_cast<double>(tm * tn) * c.tile_k;
    const int64_t pieces = tiles < planned ? std::max<int64_t>(1, planned / tiles) : 1;
    const double piece_k = static_cast<double>(ceil_div(ksteps, pieces) * c.tile_k);
    return std::min(1.0, useful / padded) * piece_k / (piece_k + k_overhead);
  }
  // Too few tiles to fill the compute units: split K over the idle units
  // (split-K), as GEMM libraries do, cut for the planned units (beside an
  // NCCL kernel the pieces that find no free unit run in a second wave).
  const int64_t split = tiles < planned ? std::max<int64_t>(1, std::min(planned / tiles, ksteps)) : 1;
  const int64_t waves = ceil_div(tiles * split, units);
  const double padded = static_cast<double>(waves) * static_cast<double>(units) * static_cast<double>(tm * tn) *
                        static_cast<double>(ceil_div(ksteps, split) * c.tile_k);
  // Each tile loops over its K (split-K shortens it) and pays a fixed
  // pipeline fill and epilogue on top.
  const double tile_k = static_cast<double>(ceil_div(ksteps, split) * c.tile_k);
  const double fill = tile_k / (tile_k + k_overhead);
  return std::min(1.0, useful / padded) * fill;
}

double attention_efficiency(const Op& op, const ChipSpec& chip) {
  const ChipSpec::AttentionRate& r = chip.attention_kernels[static_cast<size_t>(op.kernel)];
  const bool backward = op.pass == Pass::kBackward;
  const double measured = backward ? r.backward : r.forward;
  if (op.kernel == AttentionKernel::kDefault || measured <= 0) return chip.attention_efficiency;
  // The benchmarks count a backward as 2.5 forwards (five matmuls, QK^T
  // recomputed); the lowering counts the four it must do, twice the forward.
  // Splash ops carry the FLOPs they execute (lower_attention.cc), so its
  // rates are fractions of the peak over executed FLOPs.
  const double convention = backward && op.kernel != AttentionKernel::kSplash ? 2.0 / 2.5 : 1.0;
  const double keys = static_cast<double>(std::max<int64_t>(op.n, 1));
  return measured * convention * keys / (keys + (backward ? r.backward_half_tokens : r.half_tokens));
}

FlopsPerSec peak_for(DType d, const ChipSpec& chip) {
  return chip.matmul_peak(d);
}

ChipSpec chip_beside_communication(const ChipSpec& chip, int sms) {
  ChipSpec c = chip;
  const int held =
      std::min(sms > 0 && chip.comm_compute_units > 0 ? sms : chip.comm_compute_units, chip.compute_units - 1);
  if (held <= 0) return c;
  const double left = static_cast<double>(chip.compute_units - held) / chip.compute_units;
  // NCCL's kernels are unknown to the GEMM library, which plans for the
  // whole chip; a kernel that holds a few SMs on purpose (userbuffers) tells
  // the GEMM its margin (Transformer Engine's set_sm_margin).
  if (sms <= 0) c.planned_compute_units = chip.compute_units;
  // Its loads and stores take a share of HBM from a memory-bound kernel
  // beside it (bench/hbm_contention_probe.py: a copy kernel on 16-32 SMs of
  // an H100 or H200 takes 0.37 or 0.35 of its SMs' fraction, whatever its
  // pace from 0.75 to 1.5 TB/s; holding SMs without traffic takes nothing).
  c.memory_efficiency =
      chip.memory_efficiency * (1.0 - chip.comm_memory_weight * static_cast<double>(held) / chip.compute_units);
  c.compute_units = chip.compute_units - held;
  c.bf16_peak = chip.bf16_peak * left;
  c.fp8_peak = chip.fp8_peak * left;
  c.fp4_peak = chip.fp4_peak * left;
  return c;
}

namespace {

// A copy between HBM and host memory (offloaded activations) runs on the
// chip's DMA engines over its host link: its bytes at the link's one-way rate
// after the launch. It holds no compute units, so its time is the same beside
// communication, and a calibration profile (which times kernels) leaves it.
SimTime host_copy_time(const Op& op, const ChipSpec& chip) {
  const double bytes = static_cast<double>(op.bytes_read.value() + op.bytes_written.value());
  const double rate = chip.host_link.value();
  return chip.launch_overhead + to_sim_time(rate > 0 ? bytes / rate : 0.0);
}

}  // namespace

SimTime compute_time(const Op& op, const ChipSpec& chip) {
  if (op.compute == ComputeKind::kHostCopy) return host_copy_time(op, chip);
  const double bytes = static_cast<double>(op.bytes_read.value() + op.bytes_written.value());
  const double mem_s = bytes / (chip.hbm_bandwidth.value() * chip.memory_efficiency * op.memory_efficiency);
  double flop_s = 0;
  if (op.compute == ComputeKind::kMatmul) {
    // A low-precision GEMM runs at its format's peak (fp4 falls back to the
    // fp8 rate on a chip without fp4 tensor cores) and steps through K as
    // many times faster, so a tile's fixed time is that many more K elements.
    const double peak = peak_for(op.dtype, chip).value();
    const bool fp4 = op.dtype == DType::kFp4 && chip.fp4_peak.value() > 0;
    const bool low = fp4 || ((op.dtype == DType::kFp8 || op.dtype == DType::kInt8 || op.dtype == DType::kFp4) &&
                             chip.fp8_peak.value() > 0);
    const double k_overhead = chip.matmul_k_overhead * (low ? peak / chip.bf16_peak.value() : 1.0);
    const double accumulate = low && op.split_accumulator ? chip.fp8_split_accumulator_efficiency : 1.0;
    // The power cap bounds the GEMM's average rate (a clock set over many
    // kernels, not per wave): min(format x tile and wave terms, cap).
    const double eff = std::min(chip.format_matmul_efficiency(op.dtype) * accumulate *
                                    matmul_quantization_efficiency(op.m, op.n, op.k, op.batch, chip, k_overhead),
                                chip.matmul_power_cap);
    flop_s = op.flops.value() / (peak * eff * chip.compute_clock_scale);
  } else if (op.compute == ComputeKind::kAttention) {
    flop_s = op.flops.value() /
             (peak_for(op.dtype, chip).value() * attention_efficiency(op, chip) * chip.compute_clock_scale);
  }
  // The extra belongs to the memory-bound kernel's time: inside the max, so
  // the time stays continuous and monotone in both terms (a matmul slowed by
  // SMs lent to a collective never gets faster).
  double extra_s = 0;
  if (op.compute == ComputeKind::kMatmul) extra_s = chip.memory_bound_matmul_extra.seconds();
  if (op.compute == ComputeKind::kAttention) extra_s = chip.memory_bound_attention_extra.seconds();
  return (op.graphed ? chip.graph_launch_overhead : chip.launch_overhead) +
         to_sim_time(std::max(mem_s + extra_s, flop_s));
}

SimTime calibrated_compute_time(const Op& op, const ChipSpec& chip, const CalibrationProfile& profile) {
  if (op.compute == ComputeKind::kHostCopy) return host_copy_time(op, chip);
  const double bytes = static_cast<double>(op.bytes_read.value() + op.bytes_written.value());
  double s = profile.memory_bytes_per_s > 0 ? bytes / profile.memory_bytes_per_s : 0;
  if (op.compute == ComputeKind::kMatmul) {
    const double volume = static_cast<double>(std::max<int64_t>(op.m, 1)) *
                          static_cast<double>(std::max<int64_t>(op.n, 1)) *
                          static_cast<double>(std::max<int64_t>(op.k, 1));
    const double rate = profile.matmul_flops_per_s(volume, op.dtype);
    if (rate > 0) s = op.flops.value() / rate;
  } else if (op.compute == ComputeKind::kAttention && profile.attention_flops_per_s > 0) {
    s = op.flops.value() / profile.attention_flops_per_s;
  } else if (op.compute == ComputeKind::kLoss && profile.loss_values_per_s > 0) {
    s = static_cast<double>(op.m) / profile.loss_values_per_s;
  }
  return (op.graphed ? chip.graph_launch_overhead : chip.launch_overhead) + to_sim_time(s);
}

SimTime op_compute_time(const Op& op, const ChipSpec& chip, const CalibrationProfile* profile) {
  return profile != nullptr ? calibrated_compute_time(op, chip, *profile) : compute_time(op, chip);
}

}  // namespace shardsim
