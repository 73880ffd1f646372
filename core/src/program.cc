#include "shardsim/core/program.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "shardsim/core/error.h"

namespace shardsim {

int dtype_bits(DType d) {
  switch (d) {
    case DType::kBf16:
    case DType::kFp16:
      return 16;
    case DType::kFp32:
      return 32;
    case DType::kFp8:
    case DType::kInt8:
      return 8;
    case DType::kFp4:
      return 4;
  }
  return 16;
}

int dtype_bytes(DType d) {
  SHARDSIM_ASSERT(d != DType::kFp4, "fp4 is half a byte: size it with dtype_bits");
  return dtype_bits(d) / 8;
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
    case ComputeKind::kHostCopy:
      return "host copy";
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
    case DType::kFp4:
      return "fp4";
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
  gate_.push_back(kNone);
  return static_cast<StreamId>(p_.stream_names_.size() - 1);
}

uint32_t ProgramBuilder::intern(std::string_view name) {
  const auto [it, fresh] = name_index_.try_emplace(std::string(name), static_cast<uint32_t>(p_.names_.size()));
  if (fresh) p_.names_.emplace_back(name);
  return it->second;
}

OpId ProgramBuilder::add(Op op, std::initializer_list<OpId> deps) {
  return add(op, std::span<const OpId>(deps.begin(), deps.size()));
}

OpId ProgramBuilder::add(Op op, std::span<const OpId> deps) {
  SHARDSIM_ASSERT(op.stream < last_on_stream_.size(), "op on an undeclared stream");
  const auto id = static_cast<OpId>(p_.ops_.size());
  const size_t first = p_.deps_.size();
  if (last_on_stream_[op.stream] != kNone) p_.deps_.push_back(last_on_stream_[op.stream]);
  if (gate_[op.stream] != kNone) {
    p_.deps_.push_back(gate_[op.stream]);
    gate_[op.stream] = kNone;
  }
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

void ProgramBuilder::reserve(size_t ops) {
  if (ops <= p_.ops_.capacity()) return;
  const size_t have = std::max<size_t>(1, p_.ops_.size());
  p_.ops_.reserve(ops);
  p_.dep_begin_.reserve(ops + 1);
  p_.deps_.reserve(p_.deps_.size() * ops / have + ops / 8);
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
    case MemKind::kGradBuffers:
      return "gradient buffers";
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

namespace shardsim {

CollectiveInstances match_collectives(const ProgramSet& ps) {
  CollectiveInstances out;
  out.of.resize(ps.stages.size());
  // The device that runs each program (one, where it has collectives).
  std::vector<int64_t> runner(ps.stages.size(), -1);
  for (size_t d = 0; d < ps.program_of.size(); ++d) {
    int64_t& r = runner[ps.program_of[d]];
    r = r < 0 ? static_cast<int64_t>(d) : -2;  // -2: several devices
  }
  // Each device's place in each of its groups.
  std::vector<std::unordered_map<uint32_t, size_t>> position(ps.groups.size());
  for (size_t g = 0; g < ps.groups.size(); ++g) {
    for (size_t i = 0; i < ps.groups[g].size(); ++i) position[g].emplace(ps.groups[g][i], i);
  }
  std::vector<std::vector<size_t>> instances(ps.groups.size());  // per group, its instances so far
  std::vector<size_t> next(ps.groups.size());                    // per group, the running program's count
  for (size_t p = 0; p < ps.stages.size(); ++p) {
    const Program& prog = ps.stages[p];
    out.of[p].assign(prog.size(), -1);
    std::fill(next.begin(), next.end(), 0);
    for (OpId op = 0; op < prog.size(); ++op) {
      const Op& o = prog.op(op);
      if (o.kind != OpKind::kCollective) continue;
      if (o.group < 0 || static_cast<size_t>(o.group) >= ps.groups.size()) {
        throw std::logic_error("a per-rank collective names no group");
      }
      if (runner[p] < 0) throw std::logic_error("a program with collectives is run by one device");
      const auto g = static_cast<size_t>(o.group);
      const auto at = position[g].find(static_cast<uint32_t>(runner[p]));
      if (at == position[g].end()) throw std::logic_error("a device runs a collective of a group it is not in");
      const size_t k = next[g]++;
      if (k == instances[g].size()) {
        instances[g].push_back(out.group.size());
        out.group.push_back(static_cast<int32_t>(g));
        out.first.push_back(out.ops.size());
        out.ops.insert(out.ops.end(), ps.groups[g].size(), kNoOp);
      }
      const size_t inst = instances[g][k];
      out.of[p][op] = static_cast<int64_t>(inst);
      OpId& slot = out.ops[out.first[inst] + at->second];
      if (slot != kNoOp) throw std::logic_error("a device meets one collective instance twice");
      slot = op;
    }
  }
  out.first.push_back(out.ops.size());
  if (std::find(out.ops.begin(), out.ops.end(), kNoOp) != out.ops.end()) {
    throw std::logic_error("the members of a group run different numbers of collectives on it");
  }
  // Members agree on what each instance is.
  for (size_t inst = 0; inst + 1 < out.first.size(); ++inst) {
    const auto& members = ps.groups[static_cast<size_t>(out.group[inst])];
    const Op& a = ps.stages[ps.program_of[members[0]]].op(out.ops[out.first[inst]]);
    for (size_t i = 1; i < members.size(); ++i) {
      const Op& b = ps.stages[ps.program_of[members[i]]].op(out.ops[out.first[inst] + i]);
      if (a.collective != b.collective || a.comm_bytes.value() != b.comm_bytes.value()) {
        throw std::logic_error("the members of a collective instance disagree on its kind or size");
      }
    }
  }
  return out;
}

}  // namespace shardsim
