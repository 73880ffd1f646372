// One MPI rank of a real run on GPUs: the CUDA backend's executor. Built
// when nvcc is found (SHARDSIM_WITH_CUDA) and linked only into
// shardsim-rank-cuda.
//
// Rank r drives one GPU (its local rank on the node) and runs its device's
// Program as the CPU executor does, with: one CUDA stream per Program stream,
// the Program's dependencies across streams as cudaEvents, matmuls and
// attention through cuBLAS/cuBLASLt, memory-bound ops as the backend's own
// kernels, collectives through NCCL on one communicator per (group axes,
// stream) (its unique id broadcast over MPI), transfers through NCCL on one
// two-rank communicator per (sender, receiver, direction) channel, and every
// op timed by a cudaEvent pair. The host enqueues a whole step and then polls
// the events, so it never blocks on the GPU.
#pragma once

#include "shardsim/realexec/calibrate.h"
#include "shardsim/realexec/kernels.h"
#include "shardsim/realexec/measured.h"
#include "shardsim/realexec/rank.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::realexec {

/// Runs this process's rank on its GPU (MPI is initialized and finalized
/// here). Returns the exit status, as run_rank.
int run_rank_cuda(const Scenario& s, const RankOptions& opt, MeasuredRun* measured = nullptr);

/// Runs this rank's part of the CUDA calibration benchmarks
/// (cuda_calibrate.cc), on its GPU; the profile has the CPU backend's format.
int run_calibration_cuda(const CalibrateOptions& opt);

/// Runs every CUDA kernel and cuBLAS product of the backend on small shapes
/// (odd sizes, causal and not) against the CPU references, on the current
/// device. Throws std::runtime_error when no device can be used.
SelfCheck cuda_kernel_self_check();

}  // namespace shardsim::realexec
