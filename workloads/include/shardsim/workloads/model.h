// Dense decoder-only Transformer shapes and their parameter counts.
#pragma once

#include <cstdint>
#include <string>

namespace shardsim {

enum class MlpKind : uint8_t { kGelu, kSwiglu };
enum class NormKind : uint8_t { kLayerNorm, kRmsNorm };
enum class PositionKind : uint8_t { kLearned, kRope };

struct ModelSpec {
  std::string name;
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t ffn_hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;  ///< defaults to hidden / heads
  int64_t vocab = 0;
  MlpKind mlp = MlpKind::kSwiglu;
  NormKind norm = NormKind::kRmsNorm;
  PositionKind position = PositionKind::kRope;
  bool tied_embeddings = false;
  bool dropout = false;  ///< dropout on attention probabilities and hidden states (GPT training)
  std::string source;
};

/// Parameter counts. "Matmul" parameters are the weights of every matmul
/// (attention and MLP projections of each layer, and the unembedding); they
/// set the 6·N·tokens FLOP term. Norm gains, biases and the embedding table
/// (a lookup, no FLOPs) are counted in total() only.
struct ParamCount {
  int64_t per_layer_matmul = 0;  ///< q, k, v, o and MLP weights of one layer
  int64_t per_layer_other = 0;   ///< norm gains (and biases for GPT style)
  int64_t unembedding = 0;       ///< vocab · hidden
  int64_t embedding = 0;         ///< vocab · hidden, 0 when tied
  int64_t final_norm = 0;
  int64_t matmul(int64_t layers) const { return layers * per_layer_matmul + unembedding; }
  int64_t total(int64_t layers) const {
    return layers * (per_layer_matmul + per_layer_other) + unembedding + embedding + final_norm;
  }
};

ParamCount count_params(const ModelSpec& m);

/// The vocabulary as tensor parallelism stores it: padded up to a multiple of
/// 128·tp, as Megatron-LM does (--make-vocab-size-divisible-by 128), so each
/// rank holds an equal, aligned slice. The padding is executed, not model,
/// work.
int64_t padded_vocab(const ModelSpec& m, int64_t tp);

}  // namespace shardsim
