// How long a compute op takes on a chip: a roofline with a shape-aware
// matmul efficiency.
#pragma once

#include "shardsim/core/program.h"
#include "shardsim/core/units.h"
#include "shardsim/topology/chip.h"

namespace shardsim {

/// Fraction of the chip's matmul throughput a [m,k]·[k,n] product (batch of
/// them) can use once it is cut into tile_m x tile_n output tiles of depth
/// tile_k spread over compute_units in waves: useful work over padded work.
double matmul_quantization_efficiency(int64_t m, int64_t n, int64_t k, int64_t batch, const ChipSpec& chip);

/// Peak FLOP/s of the op's dtype (fp8 where the chip has it, else bf16).
FlopsPerSec peak_for(DType d, const ChipSpec& chip);

/// Roofline time of a compute op, launch overhead included.
SimTime compute_time(const Op& op, const ChipSpec& chip);

}  // namespace shardsim
