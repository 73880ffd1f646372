// EngineCore's collectives (engine_core.h): a collective launches when
// every member (every canonical member, under the symmetry) has arrived;
// its plan, cached per size and group, runs as phases of flows, one per
// orbit under the symmetry; it completes for every member at once.
// Included at the end of engine_core.h. Private to sim/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine_core.h"

namespace shardsim::detail {

template <class Backend>
inline SimTime EngineCore<Backend>::route_latency(DeviceId a, DeviceId b) {
  const uint64_t key = static_cast<uint64_t>(a) << 32 | b;
  auto [it, fresh] = route_latency_.try_emplace(key);
  if (fresh) {
    route_scratch_.clear();
    topo_.route(a, b, route_scratch_);
    for (LinkId l : route_scratch_) it->second += topo_.link(l).latency;
  }
  return it->second;
}

template <class Backend>
inline void EngineCore<Backend>::launch(uint32_t any_member, OpId op) {
  const Op& o = program(any_member).op(op);
  const uint32_t id = acquire(runs_, free_runs_);
  CollectiveRun& r = runs_[id];
  r.op = op;
  const double k = stream_speedup(any_member, o);
  // Per rank, the group is named (axes 0xff marks it: no mesh group has).
  const PlanKey key{
      static_cast<uint64_t>(o.comm_bytes.value()),
      per_rank_ ? static_cast<uint32_t>(o.group) : static_cast<uint32_t>(mesh_.group_index(any_member, o.axes)),
      per_rank_ ? static_cast<uint8_t>(0xff) : o.axes, o.collective, k};
  r.instance = per_rank_ ? static_cast<int64_t>(info_[stage_of_[any_member]].coll_slot[op]) : -1;
  auto [it, fresh] = plans_.try_emplace(key);
  if (fresh) {
    if (per_rank_) {
      const auto& g = ps_.groups[static_cast<size_t>(o.group)];
      it->second.members.assign(g.begin(), g.end());
    } else {
      mesh_.group_members(any_member, o.axes, it->second.members);
    }
    it->second.plan = plan_collective(o.collective, o.comm_bytes, it->second.members, topo_, opt_.collective);
    for (CollectivePhase& ph : it->second.plan.phases) {
      ph.latency = sped_up(ph.latency, k);
      if (k != 1) {
        for (FlowSpec& f : ph.flows) f.bytes /= k;
      }
    }
    if (symmetric_) it->second.orbit_flows = orbit_flows(it->second.plan, o.axes);
  }
  r.cached = &it->second;
  r.phase = 0;
  r.start = now_;
  for (DeviceId m : r.cached->members) {
    DeviceClock& c = clocks_[m];
    c.advance(now_);
    ++c.comm_active;
    c.hold_sms(o, +1);
    retime_compute(m);
  }
  if (r.cached->plan.phases.empty()) {
    complete(id);
    return;
  }
  if (const auto fit =
          calibrated(std::string(to_string(o.collective)), static_cast<int64_t>(r.cached->members.size()))) {
    // Measured collective: its fit replaces the plan's phases of flows.
    r.phase = r.cached->plan.phases.size() - 1;
    push(now_ + sped_up(to_sim_time(fit->latency_s + static_cast<double>(o.comm_bytes.value()) / fit->bytes_per_s), k),
         EvType::kPhaseEnd, id, 0);
    return;
  }
  start_phase(id);
}

template <class Backend>
inline std::vector<std::vector<FlowSpec>> EngineCore<Backend>::orbit_flows(const CollectivePlan& plan,
                                                                           uint8_t axes) const {
  int64_t own = 1;  // |H_A|
  for (size_t a = 0; a < static_cast<size_t>(kNumMeshAxesWithEp); ++a) {
    if (axes & (1u << a)) {
      own *= mesh_.size(static_cast<MeshAxis>(a)) / sym_.group.step_of(mesh_, static_cast<MeshAxis>(a));
    }
  }
  std::vector<std::vector<FlowSpec>> out;
  using Moved = std::tuple<DeviceId, DeviceId, double, size_t>;  // the flow moved, its index
  std::vector<Moved> moved;
  for (const CollectivePhase& ph : plan.phases) {
    moved.clear();
    for (size_t i = 0; i < ph.flows.size(); ++i) {
      const FlowSpec& f = ph.flows[i];
      const auto src = static_cast<DeviceId>(sym_.group.canonical(mesh_, f.src));
      moved.emplace_back(src, static_cast<DeviceId>(mesh_.translate(f.dst, f.src, src)), f.bytes, i);
    }
    // Per distinct moved flow: its first index in the plan and its count.
    std::sort(moved.begin(), moved.end());
    std::vector<std::pair<size_t, size_t>> firsts;  // (first index, position in moved)
    std::vector<int64_t> count;
    for (size_t i = 0; i < moved.size(); ++i) {
      const bool same = i > 0 && std::get<0>(moved[i]) == std::get<0>(moved[i - 1]) &&
                        std::get<1>(moved[i]) == std::get<1>(moved[i - 1]) &&
                        std::get<2>(moved[i]) == std::get<2>(moved[i - 1]);
      if (same) {
        ++count.back();
        continue;
      }
      firsts.emplace_back(std::get<3>(moved[i]), i);
      count.push_back(1);
    }
    std::vector<size_t> order(firsts.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return firsts[x].first < firsts[y].first; });
    std::vector<FlowSpec>& laid = out.emplace_back();
    for (size_t k : order) {
      SHARDSIM_ASSERT(count[k] % own == 0, "a collective plan not invariant under its group's translations");
      const auto& [src, dst, bytes, index] = moved[firsts[k].second];
      for (int64_t c = 0; c < count[k] / own; ++c) laid.push_back({src, dst, bytes});
    }
  }
  return out;
}

template <class Backend>
inline void EngineCore<Backend>::start_phase(uint32_t id) {
  CollectiveRun& r = runs_[id];
  const CollectivePhase& ph = r.cached->plan.phases[r.phase];
  const std::vector<FlowSpec>& flows = symmetric_ ? r.cached->orbit_flows[r.phase] : ph.flows;
  r.pending = flows.size();
  for (const FlowSpec& f : flows) {
    self().add_flow(f.src, f.dst, f.bytes, id);
    ++result_.flows;
  }
  if (r.pending == 0) push(now_ + ph.latency, EvType::kPhaseEnd, id, 0);
}

template <class Backend>
inline void EngineCore<Backend>::flow_done(const DoneFlow& f) {
  const uint32_t owner = f.owner;
  const DeviceId src = f.src;
  const DeviceId dst = f.dst;
  const bool p2p = (owner & kP2pOwner) != 0;
  const uint32_t id = owner & ~kP2pOwner;
  const OpId op = p2p ? transfers_[id].send_op : runs_[id].op;
  if (flows_traced_[src]) {
    // Per rank, the flow belongs to its sender's own op of the instance.
    OpId own = op;
    if (!p2p && runs_[id].instance >= 0) {
      const auto& members = runs_[id].cached->members;
      const auto i = static_cast<size_t>(std::find(members.begin(), members.end(), src) - members.begin());
      own = instances_.ops[instances_.first[static_cast<size_t>(runs_[id].instance)] + i];
    }
    result_.timeline.flows.push_back(
        TimelineFlow{src, dst, stage_of_[src], own, Bytes(static_cast<int64_t>(f.bytes)), f.start, now_});
  }
  result_.flow_byte_hops += f.bytes * f.hops;
  if (p2p) {
    push(now_ + sped_up(route_latency(src, dst), stream_speedup(src, program(src).op(op))), EvType::kTransferEnd, id,
         0);
    return;
  }
  CollectiveRun& r = runs_[id];
  if (--r.pending == 0) push(now_ + r.cached->plan.phases[r.phase].latency, EvType::kPhaseEnd, id, 0);
}

template <class Backend>
inline void EngineCore<Backend>::phase_end(uint32_t id) {
  CollectiveRun& r = runs_[id];
  if (++r.phase < r.cached->plan.phases.size()) {
    start_phase(id);
    return;
  }
  complete(id);
}

template <class Backend>
inline void EngineCore<Backend>::complete(uint32_t id) {
  CollectiveRun& r = runs_[id];
  const OpId op = r.op;
  // end_op may launch new collectives that reuse this slot; the cached
  // plan (and its member list) outlives it.
  const CachedPlan* cached = r.cached;
  // Per rank, each member meets the instance with its own op.
  const OpId* member_ops =
      r.instance >= 0 ? &instances_.ops[instances_.first[static_cast<size_t>(r.instance)]] : nullptr;
  auto op_of = [&](size_t i) { return member_ops != nullptr ? member_ops[i] : op; };
  const Op& o = program(cached->members.front()).op(op_of(0));
  for (DeviceId m : cached->members) {
    DeviceClock& c = clocks_[m];
    c.advance(now_);
    --c.comm_active;
    c.hold_sms(o, -1);
    retime_compute(m);
  }
  free_runs_.push_back(id);
  const SimTime busy = now_ - r.start;
  for (size_t i = 0; i < cached->members.size(); ++i) {
    const DeviceId m = cached->members[i];
    if (!active_[m]) continue;
    stream_busy_[m * streams_ + program(m).op(op_of(i)).stream] += busy;
    end_op(m, op_of(i));
  }
}

}  // namespace shardsim::detail
