#include "shardsim/core/program.h"

#include <algorithm>

#include "shardsim/core/error.h"

namespace shardsim {

int dtype_bytes(DType d) {
  switch (d) {
    case DType::kBf16:
    case DType::kFp16:
      return 2;
    case DType::kFp32:
      return 4;
    case DType::kFp8:
    case DType::kInt8:
      return 1;
  }
  return 2;
}

std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::kCompute:
      return "compute";
    case OpKind::kCollective:
      return "collective";
    case OpKind::kSend:
      return "send";
    case OpKind::kRecv:
      return "recv";
  }
  return "?";
}

std::string_view to_string(ComputeKind k) {
  switch (k) {
    case ComputeKind::kMatmul:
      return "matmul";
    case ComputeKind::kAttention:
      return "attention";
    case ComputeKind::kElementwise:
      return "elementwise";
    case ComputeKind::kNorm:
      return "norm";
    case ComputeKind::kSoftmax:
      return "softmax";
    case ComputeKind::kEmbedding:
      return "embedding";
    case ComputeKind::kLoss:
      return "loss";
    case ComputeKind::kOptimizer:
      return "optimizer";
  }
  return "?";
}

std::string_view to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllGather:
      return "all-gather";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kAllToAll:
      return "all-to-all";
    case CollectiveKind::kBroadcast:
      return "broadcast";
  }
  return "?";
}

std::string_view to_string(DType d) {
  switch (d) {
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kFp32:
      return "fp32";
    case DType::kFp8:
      return "fp8";
    case DType::kInt8:
      return "int8";
  }
  return "?";
}

std::string_view to_string(Pass p) {
  switch (p) {
    case Pass::kForward:
      return "fwd";
    case Pass::kBackward:
      return "bwd";
    case Pass::kOptimizer:
      return "opt";
    case Pass::kRecompute:
      return "recompute";
  }
  return "?";
}

std::string_view to_string(MeshAxis a) {
  switch (a) {
    case MeshAxis::kTp:
      return "tp";
    case MeshAxis::kCp:
      return "cp";
    case MeshAxis::kPp:
      return "pp";
    case MeshAxis::kDp:
      return "dp";
    case MeshAxis::kEp:
      return "ep";
    case MeshAxis::kDs:
      return "ds";
  }
  return "?";
}

std::string Program::label(OpId id) const {
  const Op& o = ops_[id];
  std::string s;
  if (o.layer >= 0) s += "L" + std::to_string(o.layer) + " ";
  s += names_[o.name];
  s += " ";
  s += to_string(o.pass);
  if (o.microbatch >= 0) s += " mb" + std::to_string(o.microbatch);
  return s;
}

StreamId ProgramBuilder::add_stream(std::string name) {
  SHARDSIM_ASSERT(p_.stream_names_.size() < 255, "too many streams");
  p_.stream_names_.push_back(std::move(name));
  last_on_stream_.push_back(kNone);
  return static_cast<StreamId>(p_.stream_names_.size() - 1);
}

uint32_t ProgramBuilder::intern(std::string_view name) {
  auto& names = p_.names_;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<uint32_t>(i);
  }
  names.emplace_back(name);
  return static_cast<uint32_t>(names.size() - 1);
}

OpId ProgramBuilder::add(Op op, std::initializer_list<OpId> deps) {
  return add(op, std::span<const OpId>(deps.begin(), deps.size()));
}

OpId ProgramBuilder::add(Op op, std::span<const OpId> deps) {
  SHARDSIM_ASSERT(op.stream < last_on_stream_.size(), "op on an undeclared stream");
  const auto id = static_cast<OpId>(p_.ops_.size());
  const size_t first = p_.deps_.size();
  if (last_on_stream_[op.stream] != kNone) p_.deps_.push_back(last_on_stream_[op.stream]);
  for (OpId d : deps) {
    if (d == kNoOp) continue;
    SHARDSIM_ASSERT(d < id, "dependency on a later op");
    p_.deps_.push_back(d);
  }
  // Deduplicate this op's dependencies (the stream predecessor may repeat).
  std::sort(p_.deps_.begin() + static_cast<std::ptrdiff_t>(first), p_.deps_.end());
  p_.deps_.erase(std::unique(p_.deps_.begin() + static_cast<std::ptrdiff_t>(first), p_.deps_.end()), p_.deps_.end());
  p_.dep_begin_.push_back(static_cast<uint32_t>(p_.deps_.size()));
  p_.ops_.push_back(op);
  last_on_stream_[op.stream] = id;
  return id;
}

void ProgramBuilder::memory(OpId id, MemKind kind, Bytes alloc, Bytes free) {
  if (alloc.value() == 0 && free.value() == 0) return;
  p_.memory_.push_back({id, kind, alloc.value(), free.value()});
}

std::string_view to_string(MemKind k) {
  switch (k) {
    case MemKind::kActivation:
      return "activations";
    case MemKind::kRecomputed:
      return "recomputed";
    case MemKind::kHead:
      return "head";
    case MemKind::kParams:
      return "gathered parameters";
  }
  return "?";
}

Program ProgramBuilder::finish() && {
  std::stable_sort(p_.memory_.begin(), p_.memory_.end(),
                   [](const MemoryEvent& a, const MemoryEvent& b) { return a.op < b.op; });
  const size_t n = p_.ops_.size();
  std::vector<uint32_t> count(n + 1, 0);
  for (OpId d : p_.deps_) ++count[d + 1];
  for (size_t i = 0; i < n; ++i) count[i + 1] += count[i];
  p_.succ_begin_ = count;
  p_.succs_.assign(p_.deps_.size(), 0);
  std::vector<uint32_t> fill(count.begin(), count.end() - 1);
  for (OpId i = 0; i < n; ++i) {
    for (OpId d : p_.deps(i)) p_.succs_[fill[d]++] = i;
  }
  return std::move(p_);
}

}  // namespace shardsim
