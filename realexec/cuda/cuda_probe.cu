#include <cuda_runtime.h>

#include <vector>

#include "cuda_probe.h"

namespace shardsim::realexec {
namespace {

__global__ void axpy(int n, float a, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

bool ok(cudaError_t e, std::string& why) {
  if (e == cudaSuccess) return true;
  why = cudaGetErrorString(e);
  return false;
}

}  // namespace

int cuda_device_count(std::string& why) {
  int n = 0;
  if (!ok(cudaGetDeviceCount(&n), why)) return 0;
  if (n == 0) why = "no CUDA device";
  return n;
}

bool cuda_self_check(std::string& why) {
  constexpr int kN = 4099;
  std::vector<float> x(kN), y(kN), out(kN);
  for (int i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i % 13);
    y[i] = static_cast<float>(i % 7);
  }
  float *dx = nullptr, *dy = nullptr;
  const size_t bytes = kN * sizeof(float);
  bool good = ok(cudaMalloc(&dx, bytes), why) && ok(cudaMalloc(&dy, bytes), why) &&
              ok(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice), why) &&
              ok(cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice), why);
  if (good) {
    axpy<<<(kN + 255) / 256, 256>>>(kN, 2.0f, dx, dy);
    good = ok(cudaGetLastError(), why) && ok(cudaMemcpy(out.data(), dy, bytes, cudaMemcpyDeviceToHost), why);
  }
  cudaFree(dx);
  cudaFree(dy);
  for (int i = 0; good && i < kN; ++i) {
    if (out[i] != 2.0f * x[i] + y[i]) {
      why = "axpy mismatch at " + std::to_string(i);
      good = false;
    }
  }
  return good;
}

}  // namespace shardsim::realexec
