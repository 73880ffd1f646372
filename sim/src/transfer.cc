#include "shardsim/sim/transfer.h"

#include <algorithm>

#include "shardsim/sim/fluid_network.h"

namespace shardsim {

SimTime transfers_alone_time(const Topology& topo, const std::vector<FlowSpec>& flows) {
  FluidNetwork net(topo);
  std::vector<FlowId> ids;
  std::vector<SimTime> latency;
  std::vector<LinkId> route;
  SimTime last{};
  for (const FlowSpec& f : flows) {
    if (f.src == f.dst || f.bytes <= 0) continue;
    ids.push_back(net.add(f.src, f.dst, f.bytes, static_cast<uint32_t>(latency.size()), SimTime{}));
    route.clear();
    topo.route(f.src, f.dst, route);
    SimTime l{};
    for (LinkId id : route) l = l + topo.link(id).latency;
    latency.push_back(l);
  }
  // Finish events in time order; an event whose version is no longer the
  // flow's is stale (its rate changed since).
  std::vector<FluidNetwork::Finish> pending;
  std::vector<bool> done(ids.size(), false);
  size_t left = ids.size();
  net.update(SimTime{}, pending);
  while (left > 0) {
    auto next = pending.end();
    for (auto it = pending.begin(); it != pending.end(); ++it) {
      const uint32_t owner = net.owner(it->flow);
      if (done[owner] || it->version != net.version(it->flow)) continue;
      if (next == pending.end() || it->at < next->at) next = it;
    }
    if (next == pending.end()) break;  // cannot happen: every live flow has a current finish
    const FluidNetwork::Finish f = *next;
    const uint32_t owner = net.owner(f.flow);
    done[owner] = true;
    --left;
    last = std::max(last, f.at + latency[owner]);
    net.finish(f.flow);
    std::erase_if(pending, [&](const FluidNetwork::Finish& e) { return e.flow == f.flow; });
    net.update(f.at, pending);
  }
  return last;
}

}  // namespace shardsim
