// Finding the rank programs of real runs next to the shardsim executable
// (shardsim links neither MPI nor CUDA; it starts them under mpirun).
#pragma once

#include <string>

namespace shardsim::cli {

/// The executable `name` next to this one, or "" if there is none.
std::string sibling(const std::string& name);

/// --backend cuda: shardsim-rank-cuda's path, with this machine's CUDA device
/// count in *devices; throws UsageError (exit 2, one line) when the CUDA
/// executor is not built or no device is usable (shardsim-cuda-probe says).
std::string cuda_rank_program(int* devices);

}  // namespace shardsim::cli
