// A calibration profile: what a machine's kernels and collectives were
// measured to achieve (`shardsim calibrate`), for the simulator to use in
// place of the chip's peak-times-efficiency roofline and the fabric's flows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shardsim/core/program.h"

namespace shardsim {

struct CalibrationProfile {
  std::string file;           ///< where it was read from
  uint64_t content_hash = 0;  ///< of the file's bytes (part of the scenario hash)
  /// Matmul FLOP/s measured at m x n x k; interpolated in log(m·n·k).
  struct MatmulPoint {
    double volume = 0;  ///< m·n·k
    double flops_per_s = 0;
  };
  std::vector<MatmulPoint> matmul;  ///< bf16 products, by increasing volume
  /// fp8 (e4m3) products where the backend ran them as such (the CUDA
  /// backend on compute capability 8.9+), by increasing volume; empty when
  /// not measured, and fp8 ops then take the bf16 rates (as the backend ran them).
  std::vector<MatmulPoint> matmul_fp8;
  double attention_flops_per_s = 0;
  double memory_bytes_per_s = 0;  ///< streaming bandwidth of one device
  double loss_values_per_s = 0;   ///< cross-entropy (exp-bound on CPUs)
  /// t = latency + bytes / bandwidth, by collective kind and group size
  /// (nccl-tests' size convention); send/recv as kind "send-recv".
  struct Fit {
    std::string kind;  ///< "all-reduce", "all-gather", ..., "send-recv"
    int64_t group = 0;
    double latency_s = 0;
    double bytes_per_s = 0;
  };
  std::vector<Fit> collectives;

  /// Matmul FLOP/s for a product of m·n·k multiply-adds in `dtype` (log-log
  /// interpolation between measured volumes, clamped at the ends): fp8 from
  /// the fp8 points when measured, every other type from the bf16 points
  /// (the backends run int8 and fp4 products as bf16).
  double matmul_flops_per_s(double volume, DType dtype = DType::kBf16) const;
  /// The fit for `kind` on a group of `group`: exact size, else the nearest
  /// measured group size (ties: the larger). Empty when the kind was not measured.
  std::optional<Fit> fit(const std::string& kind, int64_t group) const;
};

}  // namespace shardsim
