// The CUDA backend's kernels and cuBLAS products against the CPU references
// (cuda_self_check.cc), on the first GPU; skipped where there is none.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "shardsim/realexec/cuda_rank.h"

namespace shardsim::realexec {
namespace {

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

TEST(CudaBackend, KernelsMatchReferences) {
  if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
  const SelfCheck r = cuda_kernel_self_check();
  EXPECT_EQ(r.mismatches, 0) << r.first_mismatch;
  // matmul bf16 and fp32, attention forward, log-sum-exp and three gradients
  // (causal and not), seven memory-bound kernels; fp8 where the GPU has it.
  EXPECT_GE(r.checked, 2 + 2 * 5 + 7);
}

}  // namespace
}  // namespace shardsim::realexec
