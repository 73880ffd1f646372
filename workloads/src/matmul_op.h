// The shape and FLOPs of a matmul op, shared by the training and inference
// lowerings (each adds its own bytes and model share).
#pragma once

#include <cstdint>

#include "shardsim/core/program.h"

namespace shardsim::detail {

/// `batch` products [m,k]·[k,n] in `dtype`: 2·batch·m·n·k FLOPs (one
/// multiply and one add per term).
inline Op matmul_op(Op o, int64_t batch, int64_t m, int64_t n, int64_t k, DType dtype) {
  o.compute = ComputeKind::kMatmul;
  o.dtype = dtype;
  o.batch = batch;
  o.m = m;
  o.n = n;
  o.k = k;
  o.flops = Flops(2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) *
                  static_cast<double>(k));
  return o;
}

}  // namespace shardsim::detail
