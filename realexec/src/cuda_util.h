// Error checks of the CUDA backend (private to realexec): every CUDA, cuBLAS
// and NCCL call is checked and a failure becomes a std::runtime_error naming
// the call, which ends the run with one line (run_mpi_rank).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace shardsim::realexec::detail {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
inline void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
  }
}
inline void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}

/// Selects this rank's GPU: its rank among the ranks of its node
/// (MPI_COMM_TYPE_SHARED), one GPU each. Throws when no device is usable or
/// the node has more ranks than GPUs. Collective over MPI_COMM_WORLD.
void select_cuda_device();

}  // namespace shardsim::realexec::detail
