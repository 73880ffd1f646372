#include "cuda_math.h"

#include <algorithm>
#include <cmath>

#include "cuda_kernels.h"
#include "cuda_util.h"

namespace shardsim::realexec::detail {
namespace {

/// Score workspace bound of attention (per CUDA stream that runs it).
constexpr int64_t kAttentionBoundBytes = int64_t{256} << 20;
/// cuBLASLt workspace (NVIDIA's recommendation for Hopper: 32 MiB).
constexpr int64_t kLtWorkspaceBytes = int64_t{32} << 20;
/// Per score element of a chunk: S and dP in fp32, P and dS in bf16.
constexpr int64_t kScoreBytes = 4 + 4 + 2 + 2;

cudaDataType_t data_type(DType d) {
  switch (d) {
    case DType::kFp16:
      return CUDA_R_16F;
    case DType::kFp32:
      return CUDA_R_32F;
    case DType::kBf16:
    case DType::kFp8:
    case DType::kInt8:
    case DType::kFp4:  // run as bf16: no fp4 GEMM path in the executor yet
      break;
  }
  return CUDA_R_16BF;
}

}  // namespace

CudaMath::CudaMath(cudaStream_t stream) : stream_(stream), attention_bound_(kAttentionBoundBytes) {
  check_cublas(cublasCreate(&blas_), "cublasCreate");
  check_cublas(cublasSetStream(blas_, stream_), "cublasSetStream");
  check_cublas(cublasLtCreate(&lt_), "cublasLtCreate");
  int device = 0, major = 0, minor = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
  fp8_ = major * 10 + minor >= 89;
  if (fp8_) {
    check_cuda(cudaMalloc(&lt_workspace_, kLtWorkspaceBytes), "cudaMalloc (cuBLASLt workspace)");
    lt_workspace_bytes_ = kLtWorkspaceBytes;
  }
}

CudaMath::~CudaMath() {
  cudaFree(scratch_);
  cudaFree(lt_workspace_);
  if (lt_ != nullptr) cublasLtDestroy(lt_);
  if (blas_ != nullptr) cublasDestroy(blas_);
}

void CudaMath::gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                    int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b, float beta, void* c,
                    cudaDataType_t c_type, int64_t ldc, int64_t stride_c, int64_t batch, float alpha) {
  // Column-major, as cuBLAS: C (m×n) = op(A)·op(B), bf16 operands here (the
  // attention products).
  check_cublas(
      cublasGemmStridedBatchedEx_64(blas_, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, m,
                                    n, k, &alpha, a, CUDA_R_16BF, lda, stride_a, b, CUDA_R_16BF, ldb, stride_b, &beta,
                                    c, c_type, ldc, stride_c, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "cublasGemmStridedBatchedEx");
}

void CudaMath::matmul(DType dtype, const void* a, const void* b, void* c, int64_t batch, int64_t m, int64_t n,
                      int64_t k) {
  if (dtype == DType::kFp8 && fp8_ && m % 16 == 0 && n % 16 == 0 && k % 16 == 0 &&
      matmul_fp8(a, b, c, batch, m, n, k)) {
    return;
  }
  // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: cuBLAS computes the n×m
  // column-major product of B (ld n) and A (ld k).
  const cudaDataType_t t = data_type(dtype);
  const float alpha = 1.0f, beta = 0.0f;
  check_cublas(
      cublasGemmStridedBatchedEx_64(blas_, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, t, n, k * n, a, t, k, m * k,
                                    &beta, c, t, n, m * n, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "cublasGemmStridedBatchedEx");
}

bool CudaMath::matmul_fp8(const void* a, const void* b, void* c, int64_t batch, int64_t m, int64_t n, int64_t k) {
  // cuBLASLt's fp8 products take the first operand transposed ("TN"): with
  // B stored [n][k] (a Linear layer's weight), column-major D (n×m) =
  // Bᵀ'·A' where B' is B read as k×n (ld k) and A' is A read as k×m (ld k).
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  bool ok = false;
  auto cleanup = [&] {
    if (pref != nullptr) cublasLtMatmulPreferenceDestroy(pref);
    if (lc != nullptr) cublasLtMatrixLayoutDestroy(lc);
    if (lb != nullptr) cublasLtMatrixLayoutDestroy(lb);
    if (la != nullptr) cublasLtMatrixLayoutDestroy(la);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  };
  try {
    check_cublas(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t t = CUBLAS_OP_T;
    check_cublas(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)),
                 "cublasLtMatmulDescSetAttribute");
    check_cublas(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, static_cast<uint64_t>(k), static_cast<uint64_t>(n), k),
                 "cublasLtMatrixLayoutCreate");
    check_cublas(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, static_cast<uint64_t>(k), static_cast<uint64_t>(m), k),
                 "cublasLtMatrixLayoutCreate");
    check_cublas(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, static_cast<uint64_t>(n), static_cast<uint64_t>(m), n),
                 "cublasLtMatrixLayoutCreate");
    const int32_t count = static_cast<int32_t>(batch);
    const int64_t strides[3] = {n * k, m * k, n * m};
    cublasLtMatrixLayout_t layouts[3] = {la, lb, lc};
    for (int i = 0; i < 3; ++i) {
      check_cublas(
          cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
          "cublasLtMatrixLayoutSetAttribute");
      check_cublas(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                    &strides[i], sizeof(strides[i])),
                   "cublasLtMatrixLayoutSetAttribute");
    }
    check_cublas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    const uint64_t ws = static_cast<uint64_t>(lt_workspace_bytes_);
    check_cublas(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
                 "cublasLtMatmulPreferenceSetAttribute");
    cublasLtMatmulHeuristicResult_t heuristic = {};
    int found = 0;
    if (cublasLtMatmulAlgoGetHeuristic(lt_, desc, la, lb, lc, lc, pref, 1, &heuristic, &found) ==
            CUBLAS_STATUS_SUCCESS &&
        found > 0) {
      const float alpha = 1.0f, beta = 0.0f;
      check_cublas(cublasLtMatmul(lt_, desc, &alpha, b, la, a, lb, &beta, c, lc, c, lc, &heuristic.algo, lt_workspace_,
                                  lt_workspace_bytes_, stream_),
                   "cublasLtMatmul");
      ok = true;
    }
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
  return ok;  // false: no fp8 algorithm for this shape; the caller runs it as bf16
}

int64_t CudaMath::chunk_rows(const AttentionShape& s) const {
  const int64_t per_row = s.heads * s.keys * kScoreBytes;
  return std::clamp<int64_t>(attention_bound_ / std::max<int64_t>(1, per_row), 1, s.queries);
}

void CudaMath::reserve(const AttentionShape& s) {
  const int64_t rows = chunk_rows(s);
  // Scores of one chunk, then the row sums of the backward (fp32 per query
  // row and head of the whole batch).
  const int64_t bytes = rows * s.heads * s.keys * kScoreBytes + s.batch * s.queries * s.heads * 4;
  if (bytes <= scratch_bytes_) return;
  cudaFree(scratch_);
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  check_cuda(cudaMalloc(&scratch_, static_cast<size_t>(bytes)), "cudaMalloc (attention workspace)");
  scratch_bytes_ = bytes;
}

void CudaMath::attention_forward(const AttentionShape& s, const void* q, const void* k, const void* v, void* o,
                                 float* lse) {
  reserve(s);
  const int64_t H = s.heads, D = s.head_dim, ld = H * D, rows = chunk_rows(s);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  auto* scores = static_cast<float*>(scratch_);
  auto* p = reinterpret_cast<uint16_t*>(static_cast<char*>(scratch_) + rows * H * s.keys * 8);
  const auto* qb = static_cast<const uint16_t*>(q);
  const auto* kb = static_cast<const uint16_t*>(k);
  const auto* vb = static_cast<const uint16_t*>(v);
  auto* ob = static_cast<uint16_t*>(o);
  for (int64_t b = 0; b < s.batch; ++b) {
    const uint16_t* kseq = kb + b * s.keys * ld;
    const uint16_t* vseq = vb + b * s.keys * ld;
    for (int64_t r0 = 0; r0 < s.queries; r0 += rows) {
      const int64_t nr = std::min(rows, s.queries - r0);
      const uint16_t* qc = qb + (b * s.queries + r0) * ld;
      // Per head h: Sᵀ (keys × nr, column-major) = K_h (keys × D) · Q_hᵀ: S is
      // then row-major [nr][keys] at h·nr·keys.
      gemm(true, false, s.keys, nr, D, kseq, ld, D, qc, ld, D, 0.0f, scores, CUDA_R_32F, s.keys, nr * s.keys, H, scale);
      cuda::ScoreChunk c{H, nr, s.keys, r0, s.keys - s.queries, s.causal};
      check_cuda(cuda::attention_softmax(c, scores, p, lse + (b * s.queries + r0) * H, stream_), "attention softmax");
      // Oᵀ (D × nr) = V_hᵀ (D × keys) · Pᵀ (keys × nr).
      gemm(false, false, D, nr, s.keys, vseq, ld, D, p, s.keys, nr * s.keys, 0.0f, ob + (b * s.queries + r0) * ld,
           CUDA_R_16BF, ld, D, H);
    }
  }
}

void CudaMath::attention_backward(const AttentionShape& s, const void* q, const void* k, const void* v, const void* o,
                                  const void* dout, const float* lse, float* dq, float* dk, float* dv) {
  reserve(s);
  const int64_t H = s.heads, D = s.head_dim, ld = H * D, rows = chunk_rows(s);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  char* base = static_cast<char*>(scratch_);
  const int64_t chunk = rows * H * s.keys;
  auto* scores = reinterpret_cast<float*>(base);
  auto* dp = reinterpret_cast<float*>(base + chunk * 4);
  auto* p = reinterpret_cast<uint16_t*>(base + chunk * 8);
  auto* ds = reinterpret_cast<uint16_t*>(base + chunk * 10);
  auto* rowdot = reinterpret_cast<float*>(base + chunk * kScoreBytes);
  const auto* qb = static_cast<const uint16_t*>(q);
  const auto* kb = static_cast<const uint16_t*>(k);
  const auto* vb = static_cast<const uint16_t*>(v);
  const auto* dob = static_cast<const uint16_t*>(dout);
  check_cuda(cuda::attention_row_dot(dob, static_cast<const uint16_t*>(o), rowdot, s.batch * s.queries, H, D, stream_),
             "attention row sums");
  // dq, dk and dv are fp32 row-major like q, k, v; the products write them
  // with bf16 operands and fp32 output.
  for (int64_t b = 0; b < s.batch; ++b) {
    const uint16_t* kseq = kb + b * s.keys * ld;
    const uint16_t* vseq = vb + b * s.keys * ld;
    float* dkseq = dk + b * s.keys * ld;
    float* dvseq = dv + b * s.keys * ld;
    for (int64_t r0 = 0; r0 < s.queries; r0 += rows) {
      const int64_t nr = std::min(rows, s.queries - r0);
      const int64_t row = b * s.queries + r0;
      const uint16_t* qc = qb + row * ld;
      const uint16_t* doc = dob + row * ld;
      const float accumulate = r0 == 0 ? 0.0f : 1.0f;
      gemm(true, false, s.keys, nr, D, kseq, ld, D, qc, ld, D, 0.0f, scores, CUDA_R_32F, s.keys, nr * s.keys, H, scale);
      // dPᵀ (keys × nr) = V_h (keys × D) · dO_hᵀ.
      gemm(true, false, s.keys, nr, D, vseq, ld, D, doc, ld, D, 0.0f, dp, CUDA_R_32F, s.keys, nr * s.keys, H);
      cuda::ScoreChunk c{H, nr, s.keys, r0, s.keys - s.queries, s.causal};
      check_cuda(cuda::attention_dscores(c, scores, dp, lse + row * H, rowdot + row * H, scale, p, ds, stream_),
                 "attention score gradients");
      // dV_hᵀ (D × keys) += dO_hᵀ (D × nr) · P (nr × keys).
      gemm(false, true, D, s.keys, nr, doc, ld, D, p, s.keys, nr * s.keys, accumulate, dvseq, CUDA_R_32F, ld, D, H);
      // dQ_hᵀ (D × nr) = K_hᵀ (D × keys) · dSᵀ (keys × nr).
      gemm(false, false, D, nr, s.keys, kseq, ld, D, ds, s.keys, nr * s.keys, 0.0f, dq + row * ld, CUDA_R_32F, ld, D,
           H);
      // dK_hᵀ (D × keys) += Q_hᵀ (D × nr) · dS (nr × keys).
      gemm(false, true, D, s.keys, nr, qc, ld, D, ds, s.keys, nr * s.keys, accumulate, dkseq, CUDA_R_32F, ld, D, H);
    }
  }
}

}  // namespace shardsim::realexec::detail
