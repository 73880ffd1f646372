// Tensor-parallel communication overlapped with the GEMMs beside it:
// Transformer Engine's userbuffers and PyTorch's async TP (plan
// tp_comm_overlap; on TPUs, XLA's collective matmul).
#include "stage_lowering.h"

namespace shardsim::detail {

// Transformer Engine's userbuffers (TransformerEngine
// transformer_engine/pytorch/module/base.py, initialize_ub; Megatron-Core
// tp_comm_overlap): the column-parallel GEMMs' input all-gather is a ring
// exchange over copy engines, each step's shard consumed by a GEMM chunk;
// the row-parallel GEMMs' reduce-scatter is split in chunks (4 by default)
// that overlap the GEMM's later chunks on a few SMs; in backward the
// output-gradient gather before the row-parallel dgrad is a ring exchange
// too, and the input re-gather and dgrad reduce-scatter of the
// column-parallel layers overlap the GEMMs beside them ("bulk"), as the
// lowering's dependencies already let them.
OpId StageLowering::ub_gather_matmul(std::string_view name, int32_t L, Pass pass, int64_t m, int64_t n, int64_t k,
                                     const std::vector<OpId>& deps, double model_fraction, OpId& last_recv) {
  return ub_gather_matmuls({RingGemm{name, n, model_fraction}}, L, pass, m, k, deps, last_recv).back();
}

// The projections that read one gathered norm output share its ring: each
// shard, as it arrives, is multiplied by every one of them (userbuffers with
// a fused GEMM; PyTorch's async TP, whose micro-pipeline pass gives
// fused_all_gather_matmul every matmul of the gathered tensor).
std::vector<OpId> StageLowering::ub_gather_matmuls(const std::vector<RingGemm>& gemms, int32_t L, Pass pass, int64_t m,
                                                   int64_t k, const std::vector<OpId>& deps, OpId& last_recv) {
  const int64_t shard_bytes = T_ / t_ * h_ * kAct;
  std::vector<OpId> last(gemms.size(), kNone);
  OpId have = kNone, x = kNone;
  for (int64_t i = 0; i < t_; ++i) {
    OpId next = kNone;
    if (i + 1 < t_) {
      next = ring_exchange("tp ring send", "tp ring recv", L, pass, MeshAxis::kTp, TrainStreams::kTpSend,
                           TrainStreams::kTpRecv, shard_bytes, i == 0 ? deps : std::vector<OpId>{have},
                           /*holds_sms=*/false);
      last_recv = next;
    }
    for (size_t j = 0; j < gemms.size(); ++j) {
      const std::vector<OpId> after = i == 0 && j == 0 ? deps
                                      : j == 0         ? std::vector<OpId>{x, have}
                                                       : std::vector<OpId>{x};
      x = matmul(gemms[j].name, L, pass, m / t_, gemms[j].n, k, after, gemms[j].model_fraction);
      last[j] = x;
    }
    have = next;
  }
  return last;
}

StageLowering::RingGemm StageLowering::projection(Node n) const {
  switch (n) {
    case Node::kQ:
      if (p_.fused_qkv) return {"qkv", (a_ + 2 * kv_) * d_, qkv_model_fraction()};
      return {"q proj", a_ * d_, 1.0};
    case Node::kK:
      return {"k proj", kv_ * d_, kv_model_fraction()};
    case Node::kV:
      return {"v proj", kv_ * d_, kv_model_fraction()};
    case Node::kGate:
      if (p_.fused_gate_up && m_.gated()) return {"mlp up", up_n_, 1.0};
      return {"mlp gate", f_, 1.0};
    default:
      return {"mlp up", f_, 1.0};
  }
}

NodeSet StageLowering::ring_group(const LayerGraph& g, Node n) const {
  const NodeSet qkv = nodes({Node::kQ, Node::kK, Node::kV}) & g.present_nodes();
  const NodeSet mlp_in = nodes({Node::kGate, Node::kUp}) & g.present_nodes();
  if (n == Node::kQ && !m_.is_mla() && g.present(Node::kAg1)) return qkv;
  if (g.present(Node::kAg2) && n == (g.present(Node::kGate) ? Node::kGate : Node::kUp)) return mlp_in;
  return {};
}

OpId StageLowering::ub_matmul_scatter(std::string_view name, std::string_view rs_name, int32_t L, Pass pass, int64_t m,
                                      int64_t n, int64_t k, const std::vector<OpId>& deps) {
  constexpr int64_t kChunks = 4;  // TE's num_splits for the pipeline method
  OpId x = kNone, rs = kNone;
  for (int64_t i = 0; i < kChunks; ++i) {
    x = matmul(name, L, pass, m / kChunks, n, k, i == 0 ? deps : std::vector<OpId>{x});
    rs = collective(CollectiveKind::kReduceScatter, kTpAxis, kTpS, rs_name, L, pass, T_ / kChunks * h_ * kAct,
                    DType::kBf16, {x});
    // userbuffers' reduce-scatter kernels run on tp_comm_overlap_sms SMs
    // (Megatron-Core's default 16 for the pipelined split), not NCCL's.
    if (p_.tp_comm_overlap_sms > 0) b_.op(rs).sms = static_cast<uint16_t>(p_.tp_comm_overlap_sms);
  }
  return rs;
}

}  // namespace shardsim::detail
