// Compute time model.
//
//   time = launch_overhead + max(FLOPs / (peak · eff_kind · eff_shape),
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
#include "shardsim/sim/compute_model.h"

#include <algorithm>
#include <cmath>

namespace shardsim {

namespace {
int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
}  // namespace

double matmul_quantization_efficiency(int64_t m, int64_t n, int64_t k, int64_t batch, const ChipSpec& c) {
  if (m <= 0 || n <= 0 || k <= 0) return 1.0;
  const int64_t tiles = ceil_div(m, c.tile_m) * ceil_div(n, c.tile_n) * std::max<int64_t>(batch, 1);
  const int64_t waves = ceil_div(tiles, c.compute_units);
  const double padded = static_cast<double>(waves) * c.compute_units * c.tile_m * c.tile_n *
                        static_cast<double>(ceil_div(k, c.tile_k) * c.tile_k);
  const double useful = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
                        static_cast<double>(std::max<int64_t>(batch, 1));
  return std::min(1.0, useful / padded);
}

FlopsPerSec peak_for(DType d, const ChipSpec& chip) {
  if ((d == DType::kFp8 || d == DType::kInt8) && chip.fp8_peak.value() > 0) return chip.fp8_peak;
  return chip.bf16_peak;
}

SimTime compute_time(const Op& op, const ChipSpec& chip) {
  const double bytes = static_cast<double>(op.bytes_read.value() + op.bytes_written.value());
  const double mem_s = bytes / (chip.hbm_bandwidth.value() * chip.memory_efficiency);
  double flop_s = 0;
  if (op.compute == ComputeKind::kMatmul) {
    const double eff = chip.matmul_efficiency * matmul_quantization_efficiency(op.m, op.n, op.k, op.batch, chip);
    flop_s = op.flops.value() / (peak_for(op.dtype, chip).value() * eff);
  } else if (op.compute == ComputeKind::kAttention) {
    flop_s = op.flops.value() / (peak_for(op.dtype, chip).value() * chip.attention_efficiency);
  }
  return chip.launch_overhead + to_sim_time(std::max(mem_s, flop_s));
}

}  // namespace shardsim
