// The CUDA backend's kernels and cuBLAS products against the CPU references
// (kernels.h) on small odd shapes. bf16 operands are rounded on the host
// first, so the reference sees the values the GPU sees; the tolerances are
// those of bf16 results (8 significant bits: 2^-8 ≈ 0.4% per rounding) where
// a product rounds to bf16, and the CPU check's 1e-3 where the arithmetic is
// fp32 throughout.
#include <cuda_runtime_api.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bf16.h"
#include "cuda_kernels.h"
#include "cuda_math.h"
#include "cuda_util.h"
#include "shardsim/realexec/cuda_rank.h"
#include "shardsim/realexec/kernels.h"

namespace shardsim::realexec {
namespace {

using detail::check_cuda;
using V = std::vector<float>;

/// A device buffer of n values of 1, 2 or 4 bytes, freed on scope exit.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) { check_cuda(cudaMalloc(&p_, bytes == 0 ? 1 : bytes), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }
  float* f() const { return static_cast<float*>(p_); }

 private:
  void* p_ = nullptr;
};

class Checker {
 public:
  Checker() {
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    math_ = std::make_unique<detail::CudaMath>(stream_);
  }
  ~Checker() {
    math_.reset();
    cudaStreamDestroy(stream_);
  }
  SelfCheck run();

 private:
  void fill(V& v) {
    for (float& x : v) {
      state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
      x = static_cast<float>(static_cast<double>(state_ >> 40) / static_cast<double>(1ull << 24)) - 0.5f;
    }
  }
  static V rounded(const V& v) {
    V r(v.size());
    for (size_t i = 0; i < v.size(); ++i) r[i] = detail::from_bf16(detail::to_bf16(v[i]));
    return r;
  }
  /// Device copy of v as fp32 (width 4) or bf16 (width 2).
  std::unique_ptr<DeviceBuffer> upload(const V& v, int width) {
    auto d = std::make_unique<DeviceBuffer>(v.size() * static_cast<size_t>(width));
    if (width == 4) {
      check_cuda(cudaMemcpy(d->get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    } else {
      std::vector<uint16_t> h(v.size());
      for (size_t i = 0; i < v.size(); ++i) h[i] = detail::to_bf16(v[i]);
      check_cuda(cudaMemcpy(d->get(), h.data(), h.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    // A copy from pageable memory may return before its DMA ends, and the
    // checker's stream does not wait on the legacy stream: wait here.
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return d;
  }
  V download(const DeviceBuffer& d, size_t n, int width) {
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    V v(n);
    if (width == 4) {
      check_cuda(cudaMemcpy(v.data(), d.get(), n * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    } else {
      std::vector<uint16_t> h(n);
      check_cuda(cudaMemcpy(h.data(), d.get(), n * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
      for (size_t i = 0; i < n; ++i) v[i] = detail::from_bf16(h[i]);
    }
    return v;
  }
  void check(const std::string& what, const V& got, const V& want, double tolerance) {
    ++r_.checked;
    const double err = max_relative_error(got.data(), want.data(), static_cast<int64_t>(got.size()));
    if (err > tolerance && r_.mismatches++ == 0) {
      r_.first_mismatch = "CUDA " + what + ": relative error " + std::to_string(err);
    }
  }
  void matmuls();
  void attention(bool causal);
  void memory_bound();

  cudaStream_t stream_ = nullptr;
  std::unique_ptr<detail::CudaMath> math_;
  uint64_t state_ = 0x9e3779b97f4a7c15ull;
  SelfCheck r_;
};

constexpr double kBf16Tolerance = 2e-2;
constexpr double kFp32Tolerance = 1e-3;

void Checker::matmuls() {
  const int64_t b = 2, m = 37, n = 19, k = 53;
  V a(b * m * k), bb(b * k * n), want(b * m * n);
  fill(a);
  fill(bb);
  for (const DType t : {DType::kBf16, DType::kFp32}) {
    const int width = t == DType::kFp32 ? 4 : 2;
    const V ar = width == 2 ? rounded(a) : a, br = width == 2 ? rounded(bb) : bb;
    auto da = upload(ar, width), db = upload(br, width);
    DeviceBuffer dc(want.size() * static_cast<size_t>(width));
    math_->matmul(t, da->get(), db->get(), dc.get(), b, m, n, k);
    matmul_reference(ar.data(), br.data(), want.data(), b, m, n, k);
    check(t == DType::kFp32 ? "matmul fp32" : "matmul bf16", download(dc, want.size(), width), want,
          width == 2 ? kBf16Tolerance : kFp32Tolerance);
  }
  if (!math_->fp8_supported()) return;
  // fp8 e4m3: values from {0, ±0.5, ±1, ±1.5, ±2}, exact in e4m3; B is read
  // as [n][k] (cuda_math.h). Shapes are multiples of 16, as cuBLASLt needs.
  const int64_t m8 = 32, n8 = 48, k8 = 64;
  const float values[9] = {0.0f, 0.5f, -0.5f, 1.0f, -1.0f, 1.5f, -1.5f, 2.0f, -2.0f};
  const uint8_t codes[9] = {0x00, 0x30, 0xb0, 0x38, 0xb8, 0x3c, 0xbc, 0x40, 0xc0};
  std::vector<uint8_t> a8(m8 * k8), b8(n8 * k8);
  V af(a8.size()), bf(b8.size());
  for (size_t i = 0; i < a8.size(); ++i) {
    const size_t j = (i * 7 + 3) % 9;
    a8[i] = codes[j];
    af[i] = values[j];
  }
  for (size_t i = 0; i < b8.size(); ++i) {
    const size_t j = (i * 5 + 1) % 9;
    b8[i] = codes[j];
    bf[i] = values[j];
  }
  DeviceBuffer da(a8.size()), db(b8.size()), dc(static_cast<size_t>(m8 * n8) * 2);
  check_cuda(cudaMemcpy(da.get(), a8.data(), a8.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
  check_cuda(cudaMemcpy(db.get(), b8.data(), b8.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  math_->matmul(DType::kFp8, da.get(), db.get(), dc.get(), 1, m8, n8, k8);
  V want8(static_cast<size_t>(m8 * n8));
  for (int64_t i = 0; i < m8; ++i) {
    for (int64_t j = 0; j < n8; ++j) {
      double acc = 0;
      for (int64_t x = 0; x < k8; ++x) acc += double{af[i * k8 + x]} * bf[j * k8 + x];
      want8[i * n8 + j] = static_cast<float>(acc);
    }
  }
  check("matmul fp8", download(dc, want8.size(), 2), want8, kBf16Tolerance);
}

void Checker::attention(bool causal) {
  AttentionShape s;
  s.batch = 2;
  s.queries = 75;
  s.keys = causal ? 75 : 130;
  s.heads = 3;
  s.head_dim = 16;
  s.causal = causal;
  const size_t qn = static_cast<size_t>(s.batch * s.queries * s.heads * s.head_dim);
  const size_t kn = static_cast<size_t>(s.batch * s.keys * s.heads * s.head_dim);
  const size_t ln = static_cast<size_t>(s.batch * s.queries * s.heads);
  V q(qn), k(kn), v(kn), dout(qn);
  fill(q);
  fill(k);
  fill(v);
  fill(dout);
  q = rounded(q);
  k = rounded(k);
  v = rounded(v);
  dout = rounded(dout);
  V o(qn), lse(ln);
  attention_forward_reference(s, q.data(), k.data(), v.data(), o.data(), lse.data());
  auto dq_in = upload(q, 2), dk_in = upload(k, 2), dv_in = upload(v, 2);
  DeviceBuffer d_o(qn * 2), d_lse(ln * 4);
  math_->attention_forward(s, dq_in->get(), dk_in->get(), dv_in->get(), d_o.get(), d_lse.f());
  const std::string tag = causal ? " (causal)" : "";
  check("attention forward" + tag, download(d_o, qn, 2), o, kBf16Tolerance);
  check("attention log-sum-exp" + tag, download(d_lse, ln, 4), lse, kFp32Tolerance);
  // Backward from the reference's o (as bf16) and lse.
  o = rounded(o);
  V dq(qn), dk(kn), dv(kn);
  attention_backward_reference(s, q.data(), k.data(), v.data(), o.data(), dout.data(), lse.data(), dq.data(), dk.data(),
                               dv.data());
  auto d_oin = upload(o, 2), d_dout = upload(dout, 2), d_lsein = upload(lse, 4);
  DeviceBuffer d_dq(qn * 4), d_dk(kn * 4), d_dv(kn * 4);
  math_->attention_backward(s, dq_in->get(), dk_in->get(), dv_in->get(), d_oin->get(), d_dout->get(), d_lsein->f(),
                            d_dq.f(), d_dk.f(), d_dv.f());
  check("attention backward dq" + tag, download(d_dq, qn, 4), dq, kBf16Tolerance);
  check("attention backward dk" + tag, download(d_dk, kn, 4), dk, kBf16Tolerance);
  check("attention backward dv" + tag, download(d_dv, kn, 4), dv, kBf16Tolerance);
}

void Checker::memory_bound() {
  using detail::check_cuda;
  {
    V in(1000), want(333);
    fill(in);
    auto d = upload(in, 4);
    DeviceBuffer out(333 * 4);
    check_cuda(cuda::elementwise(d->f(), 1000, out.f(), 333, stream_), "elementwise");
    elementwise_reference(in.data(), 1000, want.data(), 333);
    check("elementwise", download(out, 333, 4), want, kFp32Tolerance);
  }
  {
    V x(300), w(64), g(300), want(300);
    fill(x);
    fill(w);
    fill(g);
    auto dx = upload(x, 4), dw = upload(w, 4), dg = upload(g, 4);
    DeviceBuffer out(300 * 4);
    check_cuda(cuda::rmsnorm(dx->f(), dw->f(), dg->f(), out.f(), 300, 64, stream_), "rmsnorm");
    rmsnorm_reference(x.data(), w.data(), g.data(), want.data(), 300, 64);
    check("rmsnorm", download(out, 300, 4), want, kFp32Tolerance);
    check_cuda(cuda::softmax(dx->f(), nullptr, out.f(), 300, 64, stream_), "softmax");
    softmax_reference(x.data(), want.data(), 300, 64);
    check("softmax", download(out, 300, 4), want, kFp32Tolerance);
  }
  {
    V logits(7 * 101), want(7);
    fill(logits);
    auto d = upload(logits, 4);
    DeviceBuffer out(7 * 4);
    check_cuda(cuda::cross_entropy(d->f(), out.f(), 7, 101, stream_), "cross-entropy");
    cross_entropy_reference(logits.data(), want.data(), 7, 101);
    check("cross-entropy", download(out, 7, 4), want, kFp32Tolerance);
  }
  {
    V p(500), g(500), m(500), v(500);
    fill(p);
    fill(g);
    fill(m);
    fill(v);
    for (float& x : v) x = std::fabs(x);
    auto dp = upload(p, 4), dg = upload(g, 4), dm = upload(m, 4), dv = upload(v, 4);
    check_cuda(cuda::adam(dp->f(), dg->f(), dm->f(), dv->f(), 500, stream_), "adam");
    adam_reference(p.data(), g.data(), m.data(), v.data(), 500);
    check("adam", download(*dp, 500, 4), p, kFp32Tolerance);
  }
  {
    V table(10 * 8), want(13 * 8);
    fill(table);
    auto dt = upload(table, 4);
    DeviceBuffer out(13 * 8 * 4);
    check_cuda(cuda::embedding_lookup(dt->f(), 10, out.f(), 13, 8, stream_), "embedding lookup");
    embedding_lookup(table.data(), 10, want.data(), 13, 8);
    check("embedding lookup", download(out, want.size(), 4), want, kFp32Tolerance);
    V zero(10 * 8, 0.0f), t2 = zero;
    auto d2 = upload(zero, 4);
    check_cuda(cuda::embedding_scatter_add(out.f(), 13, d2->f(), 10, 8, stream_), "embedding scatter-add");
    embedding_scatter_add(want.data(), 13, t2.data(), 10, 8);
    check("embedding scatter-add", download(*d2, t2.size(), 4), t2, kFp32Tolerance);
  }
}

SelfCheck Checker::run() {
  matmuls();
  attention(true);
  attention(false);
  memory_bound();
  return r_;
}

}  // namespace

SelfCheck cuda_kernel_self_check() {
  Checker c;
  return c.run();
}

}  // namespace shardsim::realexec
