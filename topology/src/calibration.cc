#include "shardsim/topology/calibration.h"

#include <cmath>
#include <cstdlib>

namespace shardsim {

namespace {

double interpolate(const std::vector<CalibrationProfile::MatmulPoint>& matmul, double volume) {
  if (matmul.empty()) return 0;
  if (volume <= matmul.front().volume) return matmul.front().flops_per_s;
  if (volume >= matmul.back().volume) return matmul.back().flops_per_s;
  for (size_t i = 1; i < matmul.size(); ++i) {
    if (volume <= matmul[i].volume) {
      const CalibrationProfile::MatmulPoint& a = matmul[i - 1];
      const CalibrationProfile::MatmulPoint& b = matmul[i];
      const double f = std::log(volume / a.volume) / std::log(b.volume / a.volume);
      return std::exp(std::log(a.flops_per_s) + f * (std::log(b.flops_per_s) - std::log(a.flops_per_s)));
    }
  }
  return matmul.back().flops_per_s;
}

}  // namespace

double CalibrationProfile::matmul_flops_per_s(double volume, DType dtype) const {
  return interpolate(dtype == DType::kFp8 && !matmul_fp8.empty() ? matmul_fp8 : matmul, volume);
}

std::optional<CalibrationProfile::Fit> CalibrationProfile::fit(const std::string& kind, int64_t group) const {
  std::optional<Fit> best;
  for (const Fit& f : collectives) {
    if (f.kind != kind) continue;
    if (!best || std::llabs(f.group - group) < std::llabs(best->group - group) ||
        (std::llabs(f.group - group) == std::llabs(best->group - group) && f.group > best->group)) {
      best = f;
    }
  }
  return best;
}

}  // namespace shardsim
