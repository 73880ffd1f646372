// CPU kernels of the real-execution backend: one real kernel per compute op
// kind, on fp32 buffers (bf16 and fp16 ops run as fp32 on a CPU), and a
// straightforward reference of each for the tests and `--verify`.
//
// Matmuls go to OpenBLAS (cblas_sgemm, one thread: the caller sets it with
// set_blas_threads). Attention is a blocked (FlashAttention-style) kernel:
// per head, query blocks against key blocks with sgemm and an online softmax.
// Memory-bound kinds are loops that read and write the element counts they are
// given (the executor derives them from the op's declared bytes).
#pragma once

#include <cstdint>
#include <string>

namespace shardsim::realexec {

/// Sets OpenBLAS to `n` threads (the executor uses 1 per rank).
void set_blas_threads(int n);

/// C[b] = A[b] · B[b] for b < batch; A is m×k, B k×n, C m×n, row-major,
/// consecutive batch entries stored back to back.
void matmul(const float* a, const float* b, float* c, int64_t batch, int64_t m, int64_t n, int64_t k);
void matmul_reference(const float* a, const float* b, float* c, int64_t batch, int64_t m, int64_t n, int64_t k);

/// Shape of an attention op: `batch` sequences of `queries` query tokens and
/// `keys` key tokens, `heads` heads of `head_dim` (rows of q, k, v, o are
/// heads·head_dim wide). Causal masks key j > query i (+ keys - queries).
struct AttentionShape {
  int64_t batch = 1, queries = 1, keys = 1, heads = 1, head_dim = 1;
  bool causal = true;
};
/// Forward: o = softmax(q·kᵀ/√d (masked))·v and lse = log-sum-exp per query
/// row and head ([batch, queries, heads]). Blocked, online softmax.
void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v, float* o, float* lse);
void attention_forward_reference(const AttentionShape& s, const float* q, const float* k, const float* v, float* o,
                                 float* lse);
/// Backward as FlashAttention-2 runs it (five block matmuls: S, dV, dP, dQ,
/// dK): from q, k, v, o, do and lse, writes dq, dk, dv.
void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v, const float* o,
                        const float* dout, const float* lse, float* dq, float* dk, float* dv);
void attention_backward_reference(const AttentionShape& s, const float* q, const float* k, const float* v,
                                  const float* o, const float* dout, const float* lse, float* dq, float* dk, float* dv);

/// Elementwise op that reads `n_in` and writes `n_out` values:
/// out[j] = Σ_{i ≡ j mod n_out} in[i] · (1 + 2⁻⁸), a streaming pass over both.
void elementwise(const float* in, int64_t n_in, float* out, int64_t n_out);
void elementwise_reference(const float* in, int64_t n_in, float* out, int64_t n_out);

/// RMSNorm over rows of `row` values: out = x / sqrt(mean(x²) + 1e-5) · w,
/// for n_out values of x; with `grad` (backward) also multiplied by grad.
void rmsnorm(const float* x, const float* w, const float* grad, float* out, int64_t n_out, int64_t row);
void rmsnorm_reference(const float* x, const float* w, const float* grad, float* out, int64_t n_out, int64_t row);

/// Softmax over rows of `row` values, n values in all.
void softmax(const float* in, float* out, int64_t n, int64_t row);
void softmax_reference(const float* in, float* out, int64_t n, int64_t row);

/// Cross-entropy forward: `rows` rows of `row` logits; out[r] =
/// logsumexp(row r) − logit[r, target(r)], target(r) = (r · 7919) mod row.
void cross_entropy(const float* logits, float* out, int64_t rows, int64_t row);
void cross_entropy_reference(const float* logits, float* out, int64_t rows, int64_t row);

/// Embedding lookup: out row r (of `row` values) = table row (r · 7919) mod
/// table_rows. Backward (scatter_add): table row (r · 7919) mod table_rows +=
/// grad row r.
void embedding_lookup(const float* table, int64_t table_rows, float* out, int64_t rows, int64_t row);
void embedding_scatter_add(const float* grad, int64_t rows, float* table, int64_t table_rows, int64_t row);

/// One Adam step (β1 0.9, β2 0.999, ε 1e-8, lr 1e-4, step 1) over n params.
void adam(float* param, const float* grad, float* m, float* v, int64_t n);
void adam_reference(float* param, const float* grad, float* m, float* v, int64_t n);

/// Runs every kernel on small shapes (odd sizes, causal and not) against its
/// reference. `checked` counts the comparisons; `first_mismatch` names the
/// first kernel whose relative error exceeded 1e-3 (empty if none).
struct SelfCheck {
  int64_t checked = 0;
  int64_t mismatches = 0;
  std::string first_mismatch;
};
SelfCheck kernel_self_check();

/// Largest |a[i] − b[i]| / max(1, |b[i]|) over n values.
double max_relative_error(const float* a, const float* b, int64_t n);

}  // namespace shardsim::realexec
