#include "shardsim/workloads/lower.h"

namespace shardsim {

// Model FLOPs of one training step, all devices together.
//   matmuls: each weight of N_matmul (for a mixture of experts, the weights
//   a token activates: router, top_k routed and the shared experts) does 2
//   FLOPs per token forward and 4
//   backward (activation and weight gradient): 6·N_matmul·tokens (Kaplan et
//   al. 2020; Narayanan et al. 2021, appendix).
//   attention: causal, so a sequence of s tokens has s(s+1)/2 query-key pairs
//   (a sliding window of W tokens: W(W+1)/2 + (s-W)·W); QK^T and AV each cost
//   2·head_dim FLOPs per pair and head forward, twice that backward:
//   6·L·heads·head_dim·s(s+1) per sequence without windows; with multi-head
//   latent attention QK^T runs over qk_head_dim and AV over v_head_dim
//   (ModelSpec::attention_flops_per_pair). (PaLM's
//   12·L·H·Q·T counts full, non-causal attention: about twice this term.)
double closed_form_model_flops(const ModelSpec& m, const Plan& p) {
  const ParamCount pc = count_params(m);
  const double tokens = static_cast<double>(p.global_batch) * static_cast<double>(p.seq_len);
  const double matmul = 6.0 * static_cast<double>(pc.matmul()) * tokens;
  // 2 FLOPs per multiply-add, QK^T and AV, times 3 for forward and backward:
  // 12·heads·head_dim per query-key pair; s(s+1)/2 pairs per causal layer.
  const double sequences = static_cast<double>(p.global_batch);
  const double attention = 3.0 * m.attention_flops_per_pair() * attention_pairs_all_layers(m, p.seq_len) * sequences;
  return matmul + attention;
}

}  // namespace shardsim
