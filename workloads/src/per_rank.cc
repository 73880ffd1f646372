#include "shardsim/workloads/per_rank.h"

namespace shardsim {

int32_t RankGroups::id(const std::vector<uint32_t>& members) {
  const auto [it, fresh] = index_.try_emplace(members, static_cast<int32_t>(list_.size()));
  if (fresh) list_.push_back(members);
  return it->second;
}

Program rank_program(const ProgramSet& ps, const Mesh& mesh, uint32_t device, RankGroups& groups) {
  const Program& stage = ps.stages.at(static_cast<size_t>(mesh.coord(device, MeshAxis::kPp)));
  ProgramBuilder b;
  for (const std::string& s : stage.stream_names()) b.add_stream(s);
  std::vector<uint32_t> members;
  std::vector<OpId> deps;
  for (OpId i = 0; i < stage.size(); ++i) {
    Op o = stage.op(i);
    o.name = b.intern(stage.name(stage.op(i)));
    if (o.kind == OpKind::kCollective) {
      members.clear();  // group_members appends
      mesh.group_members(device, o.axes, members);
      o.group = groups.id(members);
    } else if (o.kind == OpKind::kSend || o.kind == OpKind::kRecv) {
      // The engine's peer of a mesh transfer (`peer` steps along the axis,
      // wrapping) and its channel: forward or not.
      const int64_t n = mesh.size(o.peer_axis);
      const int64_t c = mesh.coord(device, o.peer_axis);
      const int64_t nc = ((c + o.peer) % n + n) % n;
      o.peer_device = static_cast<int32_t>(static_cast<int64_t>(device) + (nc - c) * mesh.stride(o.peer_axis));
      o.tag = o.pass == Pass::kForward ? 0 : 1;
    }
    const auto d = stage.deps(i);
    deps.assign(d.begin(), d.end());
    b.add(o, deps);
  }
  for (const MemoryEvent& e : stage.memory_events()) b.memory(e.op, e.kind, Bytes(e.alloc), Bytes(e.free));
  return std::move(b).finish();
}

ProgramSet per_rank_programs(const ProgramSet& ps, const Mesh& mesh) {
  ProgramSet out;
  RankGroups groups;
  for (int64_t d = 0; d < mesh.devices(); ++d) {
    out.stages.push_back(rank_program(ps, mesh, static_cast<uint32_t>(d), groups));
    out.program_of.push_back(static_cast<uint32_t>(d));
  }
  out.groups = groups.list();
  out.pipelined = mesh.size(MeshAxis::kPp) > 1;
  return out;
}

}  // namespace shardsim
