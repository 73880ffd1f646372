// How long a compute op takes on a chip: a roofline with a shape-aware
// matmul efficiency.
#pragma once

#include "shardsim/core/program.h"
#include "shardsim/core/units.h"
#include "shardsim/topology/calibration.h"
#include "shardsim/topology/chip.h"

namespace shardsim {

/// Fraction of the chip's matmul throughput a [m,k]·[k,n] product (batch of
/// them) can use once it is cut into tile_m x tile_n output tiles of depth
/// tile_k spread over compute_units in waves: useful work over padded work,
/// times K / (K + k_overhead) for each tile's fixed fill and epilogue
/// (K elements of the tile's loop; see ChipSpec::matmul_k_overhead).
double matmul_quantization_efficiency(int64_t m, int64_t n, int64_t k, int64_t batch, const ChipSpec& chip,
                                      double k_overhead = 0);

/// The fraction of the bf16 peak an attention op reaches: the chip's
/// measured rate of the op's kernel for its pass and key length, or the
/// chip's attention_efficiency for kernels it has no measurement of.
double attention_efficiency(const Op& op, const ChipSpec& chip);

/// Peak FLOP/s of the op's dtype: fp4 at the chip's fp4 peak, fp8 and int8
/// at its fp8 peak, each falling back to the next wider format the chip has,
/// else bf16.
FlopsPerSec peak_for(DType d, const ChipSpec& chip);

/// Roofline time of a compute op, launch overhead included; a matmul's or
/// attention's FLOP term at the chip's compute_clock_scale of its rate.
SimTime compute_time(const Op& op, const ChipSpec& chip);

/// The chip as compute sees it while a communication kernel runs beside it:
/// comm_compute_units fewer SMs, and the peak FLOP/s of the SMs left
/// (tiles then run in waves over fewer units), and the HBM share
/// comm_memory_weight says the kernel's traffic takes. NCCL runs one thread
/// block per channel, each on its own SM, for the whole collective, unknown
/// to the GEMM library, which still cuts stream-K and split-K work for the
/// whole chip (planned_compute_units). `sms` > 0 names a different count (a
/// kernel that holds a few SMs on purpose and tells the GEMM its margin:
/// Transformer Engine's userbuffers with set_sm_margin).
ChipSpec chip_beside_communication(const ChipSpec& chip, int sms = 0);

/// The op's time from measured rates instead of peak x efficiency: matmuls
/// at the profile's FLOP/s for their volume m·n·k (per product), attention
/// at its measured FLOP/s, the loss at its measured values/s (exp-bound on
/// CPUs), everything else at the measured streaming bandwidth; launch
/// overhead as compute_time. The rates were measured at the clocks the run
/// had, so compute_clock_scale does not apply.
SimTime calibrated_compute_time(const Op& op, const ChipSpec& chip, const CalibrationProfile& profile);

/// The time the simulation gives a compute op alone: calibrated when a
/// profile is in use (not null), the roofline otherwise. Whatever bounds a
/// simulated step from below (the plan search's) must use this too.
SimTime op_compute_time(const Op& op, const ChipSpec& chip, const CalibrationProfile* profile);

}  // namespace shardsim
