// The CUDA backend's own kernels (compiled by nvcc; this header is plain
// C++17 for the g++ side): the memory-bound ops of a Program, the pieces of
// attention around its cuBLAS matmuls, and the --verify fill and check of
// communication buffers. Matmuls themselves go to cuBLAS (cuda_math.h).
//
// Memory-bound kernels follow the CPU kernels (shardsim/realexec/kernels.h)
// value for value on fp32 buffers, so they move the bytes the op declares and
// are checked against the same references. bf16 tensors are passed as
// uint16_t storage. Every launcher enqueues on `stream` and returns the launch
// error (cudaSuccess when none).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "verify_pattern.h"

namespace shardsim::realexec::cuda {

/// Fills `bytes` bytes with bf16 values uniform in [-0.5, 0.5) (read as fp32,
/// pairs of them are also finite values in that range; the lowest mantissa
/// bit is cleared so that no byte is an fp8 e4m3 NaN).
cudaError_t fill_uniform(void* buf, int64_t bytes, uint64_t seed, cudaStream_t stream);

cudaError_t elementwise(const float* in, int64_t n_in, float* out, int64_t n_out, cudaStream_t stream);
cudaError_t rmsnorm(const float* x, const float* w, const float* grad, float* out, int64_t n_out, int64_t row,
                    cudaStream_t stream);
/// Softmax over rows of `row` values; with `grad`, the result times grad.
cudaError_t softmax(const float* in, const float* grad, float* out, int64_t n, int64_t row, cudaStream_t stream);
cudaError_t cross_entropy(const float* logits, float* out, int64_t rows, int64_t row, cudaStream_t stream);
cudaError_t embedding_lookup(const float* table, int64_t table_rows, float* out, int64_t rows, int64_t row,
                             cudaStream_t stream);
cudaError_t embedding_scatter_add(const float* grad, int64_t rows, float* table, int64_t table_rows, int64_t row,
                                  cudaStream_t stream);
cudaError_t adam(float* param, const float* grad, float* m, float* v, int64_t n, cudaStream_t stream);

// ---- attention around cuBLAS -------------------------------------------------
// One chunk of `rows` query rows (global query index row0 + r) of one sequence
// against `keys` keys, for `heads` heads; scores are laid out
// [heads][rows][keys] (fp32, already scaled by 1/sqrt(head_dim)). Query i sees
// key j when !causal or j <= i + offset (offset = keys - queries).
struct ScoreChunk {
  int64_t heads = 1, rows = 1, keys = 1, row0 = 0, offset = 0;
  bool causal = true;
};
/// Forward: p = softmax of each score row (bf16, masked keys 0) and
/// lse[r·heads + h] = log-sum-exp of the row.
cudaError_t attention_softmax(const ScoreChunk& c, const float* scores, uint16_t* p, float* lse, cudaStream_t stream);
/// Backward: with d[r·heads + h] = Σ dO·O of the row, p = exp(s − lse) and
/// ds = p·(dp − d)·scale, both bf16 (masked keys 0).
cudaError_t attention_dscores(const ScoreChunk& c, const float* scores, const float* dp, const float* lse,
                              const float* d, float scale, uint16_t* p, uint16_t* ds, cudaStream_t stream);
/// d[t·heads + h] = Σ_x dout[t, h, x]·out[t, h, x] over head_dim x, for
/// `tokens` tokens (bf16 rows of heads·head_dim).
cudaError_t attention_row_dot(const uint16_t* dout, const uint16_t* out, float* d, int64_t tokens, int64_t heads,
                              int64_t head_dim, cudaStream_t stream);

// ---- --verify ----------------------------------------------------------------
/// value(rank, i) (verify_pattern.h) into n values of `width` bytes (4 fp32,
/// 2 bf16, 1 int8).
cudaError_t fill_pattern(void* buf, int width, int64_t n, int64_t rank, cudaStream_t stream);
/// Compares the received buffer with expected_value(check, i); adds the
/// mismatches to *bad and lowers *first_bad to the first bad index.
cudaError_t check_pattern(const void* buf, int width, const detail::ReceiveCheck& check, unsigned long long* bad,
                          unsigned long long* first_bad, cudaStream_t stream);
/// Adds 1 to value 0 (the corrupt fault of the failure tests).
cudaError_t corrupt_first(void* buf, int width, cudaStream_t stream);

}  // namespace shardsim::realexec::cuda
