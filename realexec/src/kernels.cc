#include "shardsim/realexec/kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace shardsim::realexec {
namespace {

constexpr int64_t kBlock = 64;  // attention query and key block (FlashAttention-2 uses 64-128)
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kElementwiseScale = 1.0f + 1.0f / 256.0f;
constexpr float kNormEps = 1e-5f;
constexpr int64_t kTargetStride = 7919;  // a prime: spreads targets and embedding rows

int64_t qk_offset(const AttentionShape& s) {
  return s.keys - s.queries;  // query i sees keys up to i + offset (causal)
}
bool masked(const AttentionShape& s, int64_t i, int64_t j) {
  return s.causal && j > i + qk_offset(s);
}
/// Index of element (b, token, h, d) in a [batch, tokens, heads, head_dim] tensor.
int64_t at(const AttentionShape& s, int64_t tokens, int64_t b, int64_t t, int64_t h) {
  return ((b * tokens + t) * s.heads + h) * s.head_dim;
}

}  // namespace

void set_blas_threads(int n) {
  openblas_set_num_threads(n);
}

void matmul(const float* a, const float* b, float* c, int64_t batch, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < batch; ++i) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a + i * m * k, static_cast<int>(k), b + i * k * n, static_cast<int>(n), 0.0f,
                c + i * m * n, static_cast<int>(n));
  }
}

void matmul_reference(const float* a, const float* b, float* c, int64_t batch, int64_t m, int64_t n, int64_t k) {
  for (int64_t x = 0; x < batch; ++x) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < k; ++l) acc += double{a[x * m * k + i * k + l]} * double{b[x * k * n + l * n + j]};
        c[x * m * n + i * n + j] = static_cast<float>(acc);
      }
    }
  }
}

void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v, float* o, float* lse) {
  const int64_t D = s.head_dim, HD = s.heads * s.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::vector<float> S(kBlock * kBlock), acc(kBlock * D), mx(kBlock), l(kBlock);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t i0 = 0; i0 < s.queries; i0 += kBlock) {
        const int64_t bq = std::min(kBlock, s.queries - i0);
        std::fill(acc.begin(), acc.end(), 0.0f);
        std::fill(mx.begin(), mx.end(), kNegInf);
        std::fill(l.begin(), l.end(), 0.0f);
        const float* qb = q + at(s, s.queries, b, i0, h);
        for (int64_t j0 = 0; j0 < s.keys; j0 += kBlock) {
          if (masked(s, i0 + bq - 1, j0)) break;  // every later key block is masked for the whole query block
          const int64_t bk = std::min(kBlock, s.keys - j0);
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(bq), static_cast<int>(bk),
                      static_cast<int>(D), scale, qb, static_cast<int>(HD), k + at(s, s.keys, b, j0, h),
                      static_cast<int>(HD), 0.0f, S.data(), static_cast<int>(kBlock));
          for (int64_t r = 0; r < bq; ++r) {
            float* row = S.data() + r * kBlock;
            float rmax = kNegInf;
            for (int64_t c = 0; c < bk; ++c) {
              if (masked(s, i0 + r, j0 + c)) row[c] = kNegInf;
              rmax = std::max(rmax, row[c]);
            }
            const float mnew = std::max(mx[r], rmax);
            const float alpha = mx[r] == kNegInf ? 0.0f : std::exp(mx[r] - mnew);
            float sum = 0;
            for (int64_t c = 0; c < bk; ++c) {
              row[c] = row[c] == kNegInf ? 0.0f : std::exp(row[c] - mnew);
              sum += row[c];
            }
            l[r] = l[r] * alpha + sum;
            mx[r] = mnew;
            for (int64_t d = 0; d < D; ++d) acc[r * D + d] *= alpha;
          }
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(bq), static_cast<int>(D),
                      static_cast<int>(bk), 1.0f, S.data(), static_cast<int>(kBlock), v + at(s, s.keys, b, j0, h),
                      static_cast<int>(HD), 1.0f, acc.data(), static_cast<int>(D));
        }
        for (int64_t r = 0; r < bq; ++r) {
          float* orow = o + at(s, s.queries, b, i0 + r, h);
          const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
          for (int64_t d = 0; d < D; ++d) orow[d] = acc[r * D + d] * inv;
          lse[(b * s.queries + i0 + r) * s.heads + h] = mx[r] + std::log(l[r]);
        }
      }
    }
  }
}

void attention_forward_reference(const AttentionShape& s, const float* q, const float* k, const float* v, float* o,
                                 float* lse) {
  const int64_t D = s.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> p(static_cast<size_t>(s.keys));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t i = 0; i < s.queries; ++i) {
        const float* qi = q + at(s, s.queries, b, i, h);
        double mx = -1e300;
        for (int64_t j = 0; j < s.keys; ++j) {
          const float* kj = k + at(s, s.keys, b, j, h);
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += double{qi[d]} * kj[d];
          p[j] = masked(s, i, j) ? -1e300 : dot * scale;
          mx = std::max(mx, p[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < s.keys; ++j) {
          p[j] = masked(s, i, j) ? 0.0 : std::exp(p[j] - mx);
          sum += p[j];
        }
        float* oi = o + at(s, s.queries, b, i, h);
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < s.keys; ++j) acc += p[j] * v[at(s, s.keys, b, j, h) + d];
          oi[d] = static_cast<float>(acc / sum);
        }
        lse[(b * s.queries + i) * s.heads + h] = static_cast<float>(mx + std::log(sum));
      }
    }
  }
}

void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v, const float* o,
                        const float* dout, const float* lse, float* dq, float* dk, float* dv) {
  const int64_t D = s.head_dim, HD = s.heads * s.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::fill(dq, dq + s.batch * s.queries * HD, 0.0f);
  std::fill(dk, dk + s.batch * s.keys * HD, 0.0f);
  std::fill(dv, dv + s.batch * s.keys * HD, 0.0f);
  std::vector<float> P(kBlock * kBlock), dP(kBlock * kBlock), Drow(kBlock);
  const int iHD = static_cast<int>(HD), iB = static_cast<int>(kBlock), iD = static_cast<int>(D);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t i0 = 0; i0 < s.queries; i0 += kBlock) {
        const int64_t bq = std::min(kBlock, s.queries - i0);
        const int ibq = static_cast<int>(bq);
        const float* qb = q + at(s, s.queries, b, i0, h);
        const float* dob = dout + at(s, s.queries, b, i0, h);
        for (int64_t r = 0; r < bq; ++r) {  // D_i = rowsum(dO ∘ O)
          const float* orow = o + at(s, s.queries, b, i0 + r, h);
          float acc = 0;
          for (int64_t d = 0; d < D; ++d) acc += orow[d] * dob[r * HD + d];
          Drow[r] = acc;
        }
        for (int64_t j0 = 0; j0 < s.keys; j0 += kBlock) {
          if (masked(s, i0 + bq - 1, j0)) break;
          const int64_t bk = std::min(kBlock, s.keys - j0);
          const int ibk = static_cast<int>(bk);
          const float* kb = k + at(s, s.keys, b, j0, h);
          const float* vb = v + at(s, s.keys, b, j0, h);
          // S = scale · Q Kᵀ, P = exp(S − lse)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ibq, ibk, iD, scale, qb, iHD, kb, iHD, 0.0f, P.data(),
                      iB);
          for (int64_t r = 0; r < bq; ++r) {
            const float l = lse[(b * s.queries + i0 + r) * s.heads + h];
            for (int64_t c = 0; c < bk; ++c) {
              float& x = P[r * kBlock + c];
              x = masked(s, i0 + r, j0 + c) ? 0.0f : std::exp(x - l);
            }
          }
          // dV += Pᵀ dO
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, ibk, iD, ibq, 1.0f, P.data(), iB, dob, iHD, 1.0f,
                      dv + at(s, s.keys, b, j0, h), iHD);
          // dP = dO Vᵀ
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ibq, ibk, iD, 1.0f, dob, iHD, vb, iHD, 0.0f, dP.data(),
                      iB);
          // dS = P ∘ (dP − D) · scale (stored in dP)
          for (int64_t r = 0; r < bq; ++r) {
            for (int64_t c = 0; c < bk; ++c) {
              dP[r * kBlock + c] = P[r * kBlock + c] * (dP[r * kBlock + c] - Drow[r]) * scale;
            }
          }
          // dQ += dS K, dK += dSᵀ Q
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ibq, iD, ibk, 1.0f, dP.data(), iB, kb, iHD, 1.0f,
                      dq + at(s, s.queries, b, i0, h), iHD);
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, ibk, iD, ibq, 1.0f, dP.data(), iB, qb, iHD, 1.0f,
                      dk + at(s, s.keys, b, j0, h), iHD);
        }
      }
    }
  }
}

void attention_backward_reference(const AttentionShape& s, const float* q, const float* k, const float* v,
                                  const float* o, const float* dout, const float* lse, float* dq, float* dk,
                                  float* dv) {
  const int64_t D = s.head_dim, HD = s.heads * s.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> gq(static_cast<size_t>(s.batch * s.queries * HD), 0.0);
  std::vector<double> gk(static_cast<size_t>(s.batch * s.keys * HD), 0.0), gv(gk.size(), 0.0);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t i = 0; i < s.queries; ++i) {
        const int64_t qi = at(s, s.queries, b, i, h);
        double Di = 0;
        for (int64_t d = 0; d < D; ++d) Di += double{dout[qi + d]} * o[qi + d];
        const double l = lse[(b * s.queries + i) * s.heads + h];
        for (int64_t j = 0; j < s.keys; ++j) {
          if (masked(s, i, j)) continue;
          const int64_t kj = at(s, s.keys, b, j, h);
          double dot = 0, dp = 0;
          for (int64_t d = 0; d < D; ++d) {
            dot += double{q[qi + d]} * k[kj + d];
            dp += double{dout[qi + d]} * v[kj + d];
          }
          const double p = std::exp(dot * scale - l);
          const double ds = p * (dp - Di) * scale;
          for (int64_t d = 0; d < D; ++d) {
            gv[kj + d] += p * dout[qi + d];
            gq[qi + d] += ds * k[kj + d];
            gk[kj + d] += ds * q[qi + d];
          }
        }
      }
    }
  }
  for (size_t i = 0; i < gq.size(); ++i) dq[i] = static_cast<float>(gq[i]);
  for (size_t i = 0; i < gk.size(); ++i) {
    dk[i] = static_cast<float>(gk[i]);
    dv[i] = static_cast<float>(gv[i]);
  }
}

void elementwise(const float* in, int64_t n_in, float* out, int64_t n_out) {
  const int64_t first = std::min(n_in, n_out);
  for (int64_t j = 0; j < first; ++j) out[j] = in[j] * kElementwiseScale;
  for (int64_t j = first; j < n_out; ++j) out[j] = 0.0f;
  for (int64_t base = n_out; base < n_in; base += n_out) {
    const int64_t len = std::min(n_out, n_in - base);
    const float* src = in + base;
    for (int64_t j = 0; j < len; ++j) out[j] += src[j] * kElementwiseScale;
  }
}

void elementwise_reference(const float* in, int64_t n_in, float* out, int64_t n_out) {
  for (int64_t j = 0; j < n_out; ++j) {
    float acc = 0;  // same association order as the kernel
    for (int64_t i = j; i < n_in; i += n_out)
      acc = (i == j) ? in[i] * kElementwiseScale : acc + in[i] * kElementwiseScale;
    out[j] = acc;
  }
}

void rmsnorm(const float* x, const float* w, const float* grad, float* out, int64_t n_out, int64_t row) {
  for (int64_t r0 = 0; r0 < n_out; r0 += row) {
    const int64_t len = std::min(row, n_out - r0);
    const float* xr = x + r0;
    float ss = 0;
    for (int64_t j = 0; j < len; ++j) ss += xr[j] * xr[j];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(len) + kNormEps);
    float* o = out + r0;
    if (grad != nullptr) {
      const float* g = grad + r0;
      for (int64_t j = 0; j < len; ++j) o[j] = xr[j] * inv * w[j] * g[j];
    } else {
      for (int64_t j = 0; j < len; ++j) o[j] = xr[j] * inv * w[j];
    }
  }
}

void rmsnorm_reference(const float* x, const float* w, const float* grad, float* out, int64_t n_out, int64_t row) {
  for (int64_t r0 = 0; r0 < n_out; r0 += row) {
    const int64_t len = std::min(row, n_out - r0);
    double ss = 0;
    for (int64_t j = 0; j < len; ++j) ss += double{x[r0 + j]} * x[r0 + j];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(len) + kNormEps);
    for (int64_t j = 0; j < len; ++j) {
      out[r0 + j] = static_cast<float>(x[r0 + j] * inv * w[j] * (grad ? grad[r0 + j] : 1.0f));
    }
  }
}

void softmax(const float* in, float* out, int64_t n, int64_t row) {
  for (int64_t r0 = 0; r0 < n; r0 += row) {
    const int64_t len = std::min(row, n - r0);
    float mx = kNegInf;
    for (int64_t j = 0; j < len; ++j) mx = std::max(mx, in[r0 + j]);
    float sum = 0;
    for (int64_t j = 0; j < len; ++j) {
      out[r0 + j] = std::exp(in[r0 + j] - mx);
      sum += out[r0 + j];
    }
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < len; ++j) out[r0 + j] *= inv;
  }
}

void softmax_reference(const float* in, float* out, int64_t n, int64_t row) {
  for (int64_t r0 = 0; r0 < n; r0 += row) {
    const int64_t len = std::min(row, n - r0);
    double sum = 0;
    for (int64_t j = 0; j < len; ++j) sum += std::exp(double{in[r0 + j]});
    for (int64_t j = 0; j < len; ++j) out[r0 + j] = static_cast<float>(std::exp(double{in[r0 + j]}) / sum);
  }
}

void cross_entropy(const float* logits, float* out, int64_t rows, int64_t row) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = logits + r * row;
    float mx = kNegInf;
    for (int64_t j = 0; j < row; ++j) mx = std::max(mx, x[j]);
    float sum = 0;
    for (int64_t j = 0; j < row; ++j) sum += std::exp(x[j] - mx);
    out[r] = mx + std::log(sum) - x[(r * kTargetStride) % row];
  }
}

void cross_entropy_reference(const float* logits, float* out, int64_t rows, int64_t row) {
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < row; ++j) sum += std::exp(double{logits[r * row + j]});
    out[r] = static_cast<float>(std::log(sum) - logits[r * row + (r * kTargetStride) % row]);
  }
}

void embedding_lookup(const float* table, int64_t table_rows, float* out, int64_t rows, int64_t row) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = table + ((r * kTargetStride) % table_rows) * row;
    std::copy(src, src + row, out + r * row);
  }
}

void embedding_scatter_add(const float* grad, int64_t rows, float* table, int64_t table_rows, int64_t row) {
  for (int64_t r = 0; r < rows; ++r) {
    float* dst = table + ((r * kTargetStride) % table_rows) * row;
    const float* g = grad + r * row;
    for (int64_t j = 0; j < row; ++j) dst[j] += g[j];
  }
}

namespace {
struct AdamConst {
  float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, lr = 1e-4f;
  // Step 1: bias corrections 1 − β^1.
  float c1 = 1.0f / (1.0f - 0.9f), c2 = 1.0f / (1.0f - 0.999f);
};
}  // namespace

void adam(float* param, const float* grad, float* m, float* v, int64_t n) {
  const AdamConst c;
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    m[i] = c.b1 * m[i] + (1 - c.b1) * g;
    v[i] = c.b2 * v[i] + (1 - c.b2) * g * g;
    param[i] -= c.lr * (m[i] * c.c1) / (std::sqrt(v[i] * c.c2) + c.eps);
  }
}

void adam_reference(float* param, const float* grad, float* m, float* v, int64_t n) {
  const AdamConst c;
  for (int64_t i = 0; i < n; ++i) {
    const double mi = double{c.b1} * m[i] + (1 - double{c.b1}) * grad[i];
    const double vi = double{c.b2} * v[i] + (1 - double{c.b2}) * double{grad[i]} * grad[i];
    m[i] = static_cast<float>(mi);
    v[i] = static_cast<float>(vi);
    param[i] = static_cast<float>(param[i] - c.lr * (mi * c.c1) / (std::sqrt(vi * c.c2) + c.eps));
  }
}

double max_relative_error(const float* a, const float* b, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = std::fabs(double{a[i]} - double{b[i]}) / std::max(1.0, std::fabs(double{b[i]}));
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, d);
  }
  return worst;
}

SelfCheck kernel_self_check() {
  SelfCheck r;
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto fill = [&](std::vector<float>& v) {
    for (float& x : v) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      x = static_cast<float>(static_cast<double>(state >> 40) / static_cast<double>(1ull << 24)) - 0.5f;
    }
  };
  auto check = [&](const char* what, const std::vector<float>& got, const std::vector<float>& want) {
    ++r.checked;
    const double err = max_relative_error(got.data(), want.data(), static_cast<int64_t>(got.size()));
    if (err > 1e-3) {
      if (r.mismatches++ == 0) r.first_mismatch = std::string(what) + ": relative error " + std::to_string(err);
    }
  };
  using V = std::vector<float>;
  {  // matmul, odd shapes
    const int64_t b = 2, m = 37, n = 19, k = 53;
    V a(b * m * k), bb(b * k * n), c(b * m * n), cr(c.size());
    fill(a);
    fill(bb);
    matmul(a.data(), bb.data(), c.data(), b, m, n, k);
    matmul_reference(a.data(), bb.data(), cr.data(), b, m, n, k);
    check("matmul", c, cr);
  }
  for (const bool causal : {true, false}) {
    AttentionShape s;
    s.batch = 2;
    s.queries = 75;
    s.keys = causal ? 75 : 130;
    s.heads = 3;
    s.head_dim = 16;
    s.causal = causal;
    const int64_t qn = s.batch * s.queries * s.heads * s.head_dim, kn = s.batch * s.keys * s.heads * s.head_dim;
    V q(qn), k(kn), v(kn), o(qn), orf(qn), lse(s.batch * s.queries * s.heads), lser(lse.size());
    fill(q);
    fill(k);
    fill(v);
    attention_forward(s, q.data(), k.data(), v.data(), o.data(), lse.data());
    attention_forward_reference(s, q.data(), k.data(), v.data(), orf.data(), lser.data());
    check(causal ? "attention forward (causal)" : "attention forward", o, orf);
    check("attention log-sum-exp", lse, lser);
    V dout(qn), dq(qn), dk(kn), dv(kn), dqr(qn), dkr(kn), dvr(kn);
    fill(dout);
    attention_backward(s, q.data(), k.data(), v.data(), o.data(), dout.data(), lse.data(), dq.data(), dk.data(),
                       dv.data());
    attention_backward_reference(s, q.data(), k.data(), v.data(), o.data(), dout.data(), lse.data(), dqr.data(),
                                 dkr.data(), dvr.data());
    check("attention backward dq", dq, dqr);
    check("attention backward dk", dk, dkr);
    check("attention backward dv", dv, dvr);
  }
  {
    V in(1000), out(333), outr(333);
    fill(in);
    elementwise(in.data(), 1000, out.data(), 333);
    elementwise_reference(in.data(), 1000, outr.data(), 333);
    check("elementwise", out, outr);
  }
  {
    V x(300), w(64), g(300), o(300), orf(300);
    fill(x);
    fill(w);
    fill(g);
    rmsnorm(x.data(), w.data(), g.data(), o.data(), 300, 64);
    rmsnorm_reference(x.data(), w.data(), g.data(), orf.data(), 300, 64);
    check("rmsnorm", o, orf);
    softmax(x.data(), o.data(), 300, 64);
    softmax_reference(x.data(), orf.data(), 300, 64);
    check("softmax", o, orf);
  }
  {
    V logits(7 * 101), o(7), orf(7);
    fill(logits);
    cross_entropy(logits.data(), o.data(), 7, 101);
    cross_entropy_reference(logits.data(), orf.data(), 7, 101);
    check("cross-entropy", o, orf);
  }
  {
    V p(500), g(500), m(500), v(500);
    fill(p);
    fill(g);
    fill(m);
    fill(v);
    for (float& x : v) x = std::fabs(x);
    V pr = p, mr = m, vr = v;
    adam(p.data(), g.data(), m.data(), v.data(), 500);
    adam_reference(pr.data(), g.data(), mr.data(), vr.data(), 500);
    check("adam", p, pr);
  }
  {
    V table(10 * 8), out(13 * 8), want(13 * 8);
    fill(table);
    embedding_lookup(table.data(), 10, out.data(), 13, 8);
    for (int64_t r = 0; r < 13; ++r) {
      for (int64_t j = 0; j < 8; ++j) want[r * 8 + j] = table[((r * kTargetStride) % 10) * 8 + j];
    }
    check("embedding lookup", out, want);
    V t2(10 * 8, 0.0f), t2r(10 * 8, 0.0f);
    embedding_scatter_add(out.data(), 13, t2.data(), 10, 8);
    for (int64_t r = 0; r < 13; ++r) {
      for (int64_t j = 0; j < 8; ++j) t2r[((r * kTargetStride) % 10) * 8 + j] += out[r * 8 + j];
    }
    check("embedding scatter-add", t2, t2r);
  }
  return r;
}

}  // namespace shardsim::realexec
