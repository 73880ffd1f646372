// The CUDA backend's own kernels (see cuda_kernels.h). Simple by design: one
// thread per output value or one block per row, grid-stride loops, fp32
// arithmetic; their speed is what calibration measures, and their results are
// checked against the CPU references (cuda_self_check.cc).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels.h"

namespace shardsim::realexec::cuda {
namespace {

constexpr int kThreads = 256;
constexpr float kElementwiseScale = 1.0f + 1.0f / 256.0f;  // as the CPU kernel
constexpr float kNormEps = 1e-5f;
constexpr int64_t kTargetStride = 7919;

/// Blocks for a grid-stride loop over n items.
unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > (int64_t{1} << 20) ? (int64_t{1} << 20) : b));
}
__device__ int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ int64_t grid_stride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

/// Sum (or max) over the block's threads; every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float v) {
  __shared__ float part[kThreads / 32];
  __shared__ float total;
  for (int o = 16; o > 0; o /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float x = lane < kThreads / 32 ? part[lane] : (kMax ? -INFINITY : 0.0f);
    for (int o = 16; o > 0; o /= 2) {
      const float other = __shfl_xor_sync(0xffffffffu, x, o);
      x = kMax ? fmaxf(x, other) : x + other;
    }
    if (lane == 0) total = x;
  }
  __syncthreads();
  const float r = total;
  __syncthreads();  // `total` and `part` are reused by the next reduction
  return r;
}

__device__ uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void fill_uniform_kernel(uint16_t* buf, int64_t n, uint64_t seed) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float u = static_cast<float>(mix(seed ^ static_cast<uint64_t>(i)) >> 40) / 16777216.0f - 0.5f;
    const __nv_bfloat16 h = __float2bfloat16(u);
    buf[i] = static_cast<uint16_t>(*reinterpret_cast<const unsigned short*>(&h) & 0xfffeu);
  }
}

__global__ void elementwise_kernel(const float* in, int64_t n_in, float* out, int64_t n_out) {
  for (int64_t j = first_index(); j < n_out; j += grid_stride()) {
    float acc = j < n_in ? in[j] * kElementwiseScale : 0.0f;
    for (int64_t i = j + n_out; i < n_in; i += n_out) acc += in[i] * kElementwiseScale;
    out[j] = acc;
  }
}

__global__ void rmsnorm_kernel(const float* x, const float* w, const float* grad, float* out, int64_t n_out,
                               int64_t row) {
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * row;
  const int64_t len = n_out - r0 < row ? n_out - r0 : row;
  float ss = 0;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) ss += x[r0 + j] * x[r0 + j];
  ss = block_reduce<false>(ss);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(len) + kNormEps);
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    float v = x[r0 + j] * inv * w[j];
    if (grad != nullptr) v *= grad[r0 + j];
    out[r0 + j] = v;
  }
}

__global__ void softmax_kernel(const float* in, const float* grad, float* out, int64_t n, int64_t row) {
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * row;
  const int64_t len = n - r0 < row ? n - r0 : row;
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) mx = fmaxf(mx, in[r0 + j]);
  mx = block_reduce<true>(mx);
  float sum = 0;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += expf(in[r0 + j] - mx);
  sum = block_reduce<false>(sum);
  const float inv = 1.0f / sum;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    float v = expf(in[r0 + j] - mx) * inv;
    if (grad != nullptr) v *= grad[r0 + j];
    out[r0 + j] = v;
  }
}

__global__ void cross_entropy_kernel(const float* logits, float* out, int64_t row) {
  const int64_t r = blockIdx.x;
  const float* x = logits + r * row;
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < row; j += blockDim.x) mx = fmaxf(mx, x[j]);
  mx = block_reduce<true>(mx);
  float sum = 0;
  for (int64_t j = threadIdx.x; j < row; j += blockDim.x) sum += expf(x[j] - mx);
  sum = block_reduce<false>(sum);
  if (threadIdx.x == 0) out[r] = mx + logf(sum) - x[(r * kTargetStride) % row];
}

__global__ void embedding_lookup_kernel(const float* table, int64_t table_rows, float* out, int64_t rows, int64_t row) {
  for (int64_t i = first_index(); i < rows * row; i += grid_stride()) {
    const int64_t r = i / row, j = i % row;
    out[i] = table[((r * kTargetStride) % table_rows) * row + j];
  }
}

__global__ void embedding_scatter_add_kernel(const float* grad, int64_t rows, float* table, int64_t table_rows,
                                             int64_t row) {
  for (int64_t i = first_index(); i < rows * row; i += grid_stride()) {
    const int64_t r = i / row, j = i % row;
    atomicAdd(table + ((r * kTargetStride) % table_rows) * row + j, grad[i]);
  }
}

__global__ void adam_kernel(float* param, const float* grad, float* m, float* v, int64_t n) {
  // One Adam step as the CPU kernel: β1 0.9, β2 0.999, ε 1e-8, lr 1e-4, step 1.
  const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, lr = 1e-4f;
  const float c1 = 1.0f / (1.0f - 0.9f), c2 = 1.0f / (1.0f - 0.999f);
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float g = grad[i];
    m[i] = b1 * m[i] + (1 - b1) * g;
    v[i] = b2 * v[i] + (1 - b2) * g * g;
    param[i] -= lr * (m[i] * c1) / (sqrtf(v[i] * c2) + eps);
  }
}

__device__ int64_t visible_keys(const ScoreChunk& c, int64_t r) {
  if (!c.causal) return c.keys;
  const int64_t last = c.row0 + r + c.offset + 1;  // keys j < last are visible
  return last < 0 ? 0 : (last > c.keys ? c.keys : last);
}

__global__ void attention_softmax_kernel(ScoreChunk c, const float* scores, __nv_bfloat16* p, float* lse) {
  const int64_t h = blockIdx.x / c.rows, r = blockIdx.x % c.rows;
  const float* s = scores + (h * c.rows + r) * c.keys;
  __nv_bfloat16* pr = p + (h * c.rows + r) * c.keys;
  const int64_t vis = visible_keys(c, r);
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < vis; j += blockDim.x) mx = fmaxf(mx, s[j]);
  mx = block_reduce<true>(mx);
  float sum = 0;
  for (int64_t j = threadIdx.x; j < vis; j += blockDim.x) sum += expf(s[j] - mx);
  sum = block_reduce<false>(sum);
  const float inv = sum > 0 ? 1.0f / sum : 0.0f;
  for (int64_t j = threadIdx.x; j < c.keys; j += blockDim.x) {
    pr[j] = __float2bfloat16(j < vis ? expf(s[j] - mx) * inv : 0.0f);
  }
  if (threadIdx.x == 0) lse[r * c.heads + h] = vis > 0 ? mx + logf(sum) : -INFINITY;
}

__global__ void attention_dscores_kernel(ScoreChunk c, const float* scores, const float* dp, const float* lse,
                                         const float* d, float scale, __nv_bfloat16* p, __nv_bfloat16* ds) {
  const int64_t n = c.heads * c.rows * c.keys;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t j = i % c.keys, hr = i / c.keys;
    const int64_t r = hr % c.rows, h = hr / c.rows;
    float pv = 0, dsv = 0;
    if (j < visible_keys(c, r)) {
      const int64_t row = r * c.heads + h;
      pv = expf(scores[i] - lse[row]);
      dsv = pv * (dp[i] - d[row]) * scale;
    }
    p[i] = __float2bfloat16(pv);
    ds[i] = __float2bfloat16(dsv);
  }
}

__global__ void attention_row_dot_kernel(const __nv_bfloat16* dout, const __nv_bfloat16* out, float* d, int64_t rows,
                                         int64_t head_dim) {
  // One warp per (token, head) row, grid-stride over rows.
  const int lane = threadIdx.x % 32;
  for (int64_t w = first_index() / 32; w < rows; w += grid_stride() / 32) {
    const __nv_bfloat16* a = dout + w * head_dim;
    const __nv_bfloat16* b = out + w * head_dim;
    float acc = 0;
    for (int64_t x = lane; x < head_dim; x += 32) acc += __bfloat162float(a[x]) * __bfloat162float(b[x]);
    for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) d[w] = acc;
  }
}

__device__ void store_value(void* buf, int width, int64_t i, float v) {
  if (width == 4) {
    static_cast<float*>(buf)[i] = v;
  } else if (width == 2) {
    static_cast<__nv_bfloat16*>(buf)[i] = __float2bfloat16(v);
  } else {
    static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v);
  }
}
__device__ float load_value(const void* buf, int width, int64_t i) {
  if (width == 4) return static_cast<const float*>(buf)[i];
  if (width == 2) return __bfloat162float(static_cast<const __nv_bfloat16*>(buf)[i]);
  return static_cast<float>(static_cast<const int8_t*>(buf)[i]);
}

__global__ void fill_pattern_kernel(void* buf, int width, int64_t n, int64_t rank) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) store_value(buf, width, i, detail::pattern(rank, i));
}

__global__ void check_pattern_kernel(const void* buf, int width, detail::ReceiveCheck c, unsigned long long* bad,
                                     unsigned long long* first_bad) {
  for (int64_t i = first_index(); i < c.n_recv; i += grid_stride()) {
    if (load_value(buf, width, i) != detail::expected_value(c, i)) {
      atomicAdd(bad, 1ull);
      atomicMin(first_bad, static_cast<unsigned long long>(i));
    }
  }
}

__global__ void corrupt_first_kernel(void* buf, int width) {
  store_value(buf, width, 0, load_value(buf, width, 0) + 1.0f);
}

}  // namespace

cudaError_t fill_uniform(void* buf, int64_t bytes, uint64_t seed, cudaStream_t stream) {
  const int64_t n = bytes / 2;
  fill_uniform_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<uint16_t*>(buf), n, seed);
  return cudaGetLastError();
}

cudaError_t elementwise(const float* in, int64_t n_in, float* out, int64_t n_out, cudaStream_t stream) {
  elementwise_kernel<<<blocks_for(n_out), kThreads, 0, stream>>>(in, n_in, out, n_out);
  return cudaGetLastError();
}

cudaError_t rmsnorm(const float* x, const float* w, const float* grad, float* out, int64_t n_out, int64_t row,
                    cudaStream_t stream) {
  const int64_t rows = (n_out + row - 1) / row;
  rmsnorm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, w, grad, out, n_out, row);
  return cudaGetLastError();
}

cudaError_t softmax(const float* in, const float* grad, float* out, int64_t n, int64_t row, cudaStream_t stream) {
  const int64_t rows = (n + row - 1) / row;
  softmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(in, grad, out, n, row);
  return cudaGetLastError();
}

cudaError_t cross_entropy(const float* logits, float* out, int64_t rows, int64_t row, cudaStream_t stream) {
  cross_entropy_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, out, row);
  return cudaGetLastError();
}

cudaError_t embedding_lookup(const float* table, int64_t table_rows, float* out, int64_t rows, int64_t row,
                             cudaStream_t stream) {
  embedding_lookup_kernel<<<blocks_for(rows * row), kThreads, 0, stream>>>(table, table_rows, out, rows, row);
  return cudaGetLastError();
}

cudaError_t embedding_scatter_add(const float* grad, int64_t rows, float* table, int64_t table_rows, int64_t row,
                                  cudaStream_t stream) {
  embedding_scatter_add_kernel<<<blocks_for(rows * row), kThreads, 0, stream>>>(grad, rows, table, table_rows, row);
  return cudaGetLastError();
}

cudaError_t adam(float* param, const float* grad, float* m, float* v, int64_t n, cudaStream_t stream) {
  adam_kernel<<<blocks_for(n), kThreads, 0, stream>>>(param, grad, m, v, n);
  return cudaGetLastError();
}

cudaError_t attention_softmax(const ScoreChunk& c, const float* scores, uint16_t* p, float* lse, cudaStream_t stream) {
  attention_softmax_kernel<<<static_cast<unsigned>(c.heads * c.rows), kThreads, 0, stream>>>(
      c, scores, reinterpret_cast<__nv_bfloat16*>(p), lse);
  return cudaGetLastError();
}

cudaError_t attention_dscores(const ScoreChunk& c, const float* scores, const float* dp, const float* lse,
                              const float* d, float scale, uint16_t* p, uint16_t* ds, cudaStream_t stream) {
  attention_dscores_kernel<<<blocks_for(c.heads * c.rows * c.keys), kThreads, 0, stream>>>(
      c, scores, dp, lse, d, scale, reinterpret_cast<__nv_bfloat16*>(p), reinterpret_cast<__nv_bfloat16*>(ds));
  return cudaGetLastError();
}

cudaError_t attention_row_dot(const uint16_t* dout, const uint16_t* out, float* d, int64_t tokens, int64_t heads,
                              int64_t head_dim, cudaStream_t stream) {
  const int64_t rows = tokens * heads;
  attention_row_dot_kernel<<<blocks_for(rows * 32), kThreads, 0, stream>>>(
      reinterpret_cast<const __nv_bfloat16*>(dout), reinterpret_cast<const __nv_bfloat16*>(out), d, rows, head_dim);
  return cudaGetLastError();
}

cudaError_t fill_pattern(void* buf, int width, int64_t n, int64_t rank, cudaStream_t stream) {
  fill_pattern_kernel<<<blocks_for(n), kThreads, 0, stream>>>(buf, width, n, rank);
  return cudaGetLastError();
}

cudaError_t check_pattern(const void* buf, int width, const detail::ReceiveCheck& check, unsigned long long* bad,
                          unsigned long long* first_bad, cudaStream_t stream) {
  check_pattern_kernel<<<blocks_for(check.n_recv), kThreads, 0, stream>>>(buf, width, check, bad, first_bad);
  return cudaGetLastError();
}

cudaError_t corrupt_first(void* buf, int width, cudaStream_t stream) {
  corrupt_first_kernel<<<1, 1, 0, stream>>>(buf, width);
  return cudaGetLastError();
}

}  // namespace shardsim::realexec::cuda
