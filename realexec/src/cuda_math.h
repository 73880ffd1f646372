// Matmuls and attention of the CUDA backend (private to realexec): cuBLAS
// for every matrix product, the backend's own kernels (cuda_kernels.h) for
// the softmax pieces in between.
//
// Matmuls: bf16 and fp16 as cublasGemmStridedBatchedEx with fp32
// accumulation; fp32 as the same with fp32 operands; fp8 (e4m3) through
// cublasLt on devices of compute capability 8.9 and newer when m, n and k are
// multiples of 16 (cuBLASLt's fp8 rules), else as bf16; int8 (weight-only
// quantized inference dequantizes before the product) as bf16.
//
// Attention is "materialized" attention in chunks of query rows, all of its
// FLOPs on tensor cores through cuBLAS: per sequence and chunk, S = Q·Kᵀ/√d,
// P = softmax(S) and O = P·V (forward); the backward recomputes S, forms
// dP = dO·Vᵀ and dS = P∘(dP − rowsum(dO∘O))/√d and takes dV = Pᵀ·dO,
// dQ = dS·K, dK = dSᵀ·Q (dK and dV accumulate over chunks). Heads are the
// strided batch. The chunk keeps the score workspace under a bound. It
// computes the masked half of a causal score matrix too (FlashAttention skips
// it), which the calibration measures as a lower attention rate.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "shardsim/core/program.h"
#include "shardsim/realexec/kernels.h"

namespace shardsim::realexec::detail {

/// One per CUDA stream that runs compute ops (a cuBLAS handle and its
/// workspace are not shared between streams).
class CudaMath {
 public:
  /// Ops run on `stream`.
  explicit CudaMath(cudaStream_t stream);
  ~CudaMath();
  CudaMath(const CudaMath&) = delete;
  CudaMath& operator=(const CudaMath&) = delete;

  /// C[b] = A[b]·B[b] (row-major, A m×k, B k×n, batch entries back to back)
  /// in `dtype`; fp8 reads B as [n][k] (B transposed, cuBLASLt's layout).
  void matmul(DType dtype, const void* a, const void* b, void* c, int64_t batch, int64_t m, int64_t n, int64_t k);
  /// bf16 q, k, v, o ([batch, tokens, heads, head_dim]); fp32 lse
  /// ([batch, queries, heads]).
  void attention_forward(const AttentionShape& s, const void* q, const void* k, const void* v, void* o, float* lse);
  /// bf16 q, k, v, o, dout; fp32 lse; fp32 dq, dk, dv.
  void attention_backward(const AttentionShape& s, const void* q, const void* k, const void* v, const void* o,
                          const void* dout, const float* lse, float* dq, float* dk, float* dv);

  /// Allocates (once, before any step) the workspace attention of shape `s`
  /// needs besides its operands: chunked score buffers within the bound, and
  /// the row sums of the backward.
  void reserve(const AttentionShape& s);
  /// Whether fp8 matmuls run as fp8 on this device (else as bf16).
  bool fp8_supported() const { return fp8_; }

 private:
  void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda, int64_t stride_a,
            const void* b, int64_t ldb, int64_t stride_b, float beta, void* c, cudaDataType_t c_type, int64_t ldc,
            int64_t stride_c, int64_t batch, float alpha = 1.0f);
  bool matmul_fp8(const void* a, const void* b, void* c, int64_t batch, int64_t m, int64_t n, int64_t k);
  int64_t chunk_rows(const AttentionShape& s) const;

  cudaStream_t stream_;
  cublasHandle_t blas_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* lt_workspace_ = nullptr;
  int64_t lt_workspace_bytes_ = 0;
  int64_t attention_bound_ = 0;
  void* scratch_ = nullptr;  // attention: scores, probabilities, dP, dS, row sums
  int64_t scratch_bytes_ = 0;
  bool fp8_ = false;
};

}  // namespace shardsim::realexec::detail
