// EngineCore's result (engine_core.h): the step time and its critical
// device, the checks that every op ran and every transfer paired (or, for
// traces, the deadlock found), and the breakdown of the critical device's
// time. Included at the end of engine_core.h. Private to sim/.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine_core.h"

namespace shardsim::detail {

template <class Backend>
inline void EngineCore<Backend>::finish_result() {
  SimTime step;
  uint32_t crit = 0;
  for (uint32_t d = 0; d < devices_; ++d) {
    if (active_[d] && clocks_[d].end > step) {
      step = clocks_[d].end;
      crit = d;
    }
  }
  if (per_rank_) {
    // A circle of waits shows first as a receive whose transfer never
    // came: name the lowest such channel's (deterministically), else the
    // first op left waiting on its dependencies.
    uint64_t first = UINT64_MAX;
    OpId op = 0;
    for (const auto& [key, ch] : channels_) {
      if (!ch.waiting.empty() && key < first) {
        first = key;
        op = ch.waiting.front();
      }
    }
    if (first != UINT64_MAX) throw Deadlock(static_cast<uint32_t>(first >> 40), op);
  }
  for (uint32_t d = 0; d < devices_; ++d) {
    for (size_t i = rem_offset_[d]; i < rem_offset_[d + 1]; ++i) {
      // Per-rank programs come from traces, which may wait on each other
      // in a circle (a user's input); lowered steps never do.
      if (remaining_[i] != 0 && per_rank_) throw Deadlock(d, static_cast<uint32_t>(i - rem_offset_[d]));
      SHARDSIM_ASSERT(remaining_[i] == 0, "an op never ran: deadlock");
    }
  }
  SHARDSIM_ASSERT(self().active_flows() == 0, "flows left at the end");
#if SHARDSIM_EXPENSIVE_CHECKS
  // Bytes sent equal bytes carried: every flow's bytes crossed each link of its route.
  double carried = 0;
  for (double b : self().link_bytes()) carried += b;
  SHARDSIM_ASSERT(std::abs(carried - result_.flow_byte_hops) <= 1e-6 * std::max(1.0, carried),
                  "bytes over links differ from bytes sent times hops");
#endif
  for (const auto& [key, ch] : channels_) {
    if (per_rank_ && !ch.waiting.empty()) throw Deadlock(static_cast<uint32_t>(key >> 40), ch.waiting.front());
    SHARDSIM_ASSERT(ch.arrived == 0 && ch.waiting.empty(), "a pipeline send and receive did not pair up");
  }
  DeviceClock& c = clocks_[crit];
  c.advance(step);
  result_.step_time = step;
  result_.critical_device = crit;
  const double idle = (step - c.compute - c.comm_only).seconds();
  result_.breakdown.compute_s = c.compute.seconds();
  result_.breakdown.exposed_comm_s = c.comm_only.seconds();
  (mesh_.size(MeshAxis::kPp) > 1 || ps_.pipelined ? result_.breakdown.bubble_s : result_.breakdown.other_s) = idle;
  result_.link_bytes = self().link_bytes();
  for (uint32_t d = 0; d < devices_; ++d) result_.active_devices += active_[d];
  for (size_t k = 0; k < kComputeKinds; ++k) {
    const SimTime t = compute_by_kind_[crit * kComputeKinds + k];
    if (t.ps() > 0) result_.compute_by_kind_s.emplace_back(to_string(static_cast<ComputeKind>(k)), t.seconds());
  }
  result_.compute_beside_comm_s = beside_comm_[crit].seconds();
  const Program& cp = program(crit);
  for (size_t st = 1; st < cp.num_streams(); ++st) {
    const SimTime t = stream_busy_[crit * streams_ + st];
    if (t.ps() > 0) result_.comm_busy_by_stream_s.emplace_back(cp.stream_names()[st], t.seconds());
  }
}

}  // namespace shardsim::detail
