#include "rail_shortcut.h"

#include <algorithm>

namespace shardsim::detail {

bool rail_shortcut_is_exact(const ProgramSet& ps, const Mesh& mesh, const Topology& topo,
                            const std::vector<uint32_t>& trace_devices, bool weighs_links) {
  const int64_t tp = mesh.size(MeshAxis::kTp);
  const int64_t block = topo.rail_group();
  if (tp <= 1 || block <= 0 || block % tp != 0 || mesh.stride(MeshAxis::kTp) != 1) return false;
  if (!weighs_links && (block != tp || topo.rails_share_links())) return false;
  const uint8_t tp_bit = axis_bit(MeshAxis::kTp);
  for (const Program& p : ps.stages) {
    for (const Op& o : p.ops()) {
      if (o.kind == OpKind::kCollective && (o.axes & tp_bit) && o.axes != tp_bit) return false;
      if ((o.kind == OpKind::kSend || o.kind == OpKind::kRecv) && o.peer_axis == MeshAxis::kTp && !weighs_links) {
        return false;
      }
    }
  }
  return std::all_of(trace_devices.begin(), trace_devices.end(),
                     [&](uint32_t d) { return mesh.coord(d, MeshAxis::kTp) == 0; });
}

}  // namespace shardsim::detail
