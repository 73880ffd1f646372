// EngineCore's ops (engine_core.h): an op starts when its dependencies
// have ended; compute runs for its roofline time, slowed while
// communication beside it holds SMs; sends are eager transfers matched in
// order with their receives; an ending op starts its successors. Included
// at the end of engine_core.h. Private to sim/.
#pragma once

#include <cstdint>

#include "engine_core.h"

namespace shardsim::detail {

template <class Backend>
inline void EngineCore<Backend>::retime_compute(DeviceId d) {
  DeviceClock& c = clocks_[d];
  if (c.running.empty() || !active_[d]) return;
  const ProgramInfo& info = info_[stage_of_[d]];
  const uint8_t level = c.level();
  for (DeviceClock::Running& r : c.running) {
    if (level == r.level) continue;
    const double from = static_cast<double>(info.at(r.op, r.level).ps());
    const double to = static_cast<double>(info.at(r.op, level).ps());
    r.level = level;
    if (from <= 0) continue;
    const double left = static_cast<double>((r.end - now_).ps());
    const SimTime end = now_ + SimTime::from_ps(static_cast<int64_t>(std::llround(left * to / from)));
    if (end == r.end) continue;
    r.end = end;
    push(end, EvType::kOpEnd, d, r.op);
  }
}

template <class Backend>
inline bool EngineCore<Backend>::stale_compute_end(DeviceId d, OpId op) {
  if (info_[stage_of_[d]].beside_comm.empty() || !on_sms(program(d).op(op))) return false;
  // With contention every running compute op is listed until its end.
  DeviceClock& c = clocks_[d];
  for (size_t i = 0; i < c.running.size(); ++i) {
    if (c.running[i].op != op) continue;
    if (c.running[i].end != now_) return true;
    c.running[i] = c.running.back();
    c.running.pop_back();
    return false;
  }
  return true;  // ended already: an event of an end that moved away and back
}

template <class Backend>
inline void EngineCore<Backend>::start(uint32_t d, OpId op) {
  const Op& o = program(d).op(op);
#if SHARDSIM_EXPENSIVE_CHECKS
  for (OpId dep : program(d).deps(op))
    SHARDSIM_ASSERT(ended_[rem_offset_[d] + dep], "an op started before its dependency ended");
#endif
  if (trace_index_[d] >= 0) trace_starts_[static_cast<size_t>(trace_index_[d])][op] = now_;
  switch (o.kind) {
    case OpKind::kCompute: {
      DeviceClock& c = clocks_[d];
      c.advance(now_);
      if (!on_sms(o)) {
        // A host copy runs on the DMA engines beside compute, timed like
        // communication (comm_only when nothing computes); it holds no SMs.
        ++c.comm_active;
        push(now_ + info_[stage_of_[d]].duration[op], EvType::kOpEnd, d, op);
        return;
      }
      c.computing = true;
      c.compute_start = now_;
      const ProgramInfo& info = info_[stage_of_[d]];
      const uint8_t level = info.beside_comm.empty() ? 0 : c.level();
      const SimTime end = now_ + info.at(op, level);
      if (!info.beside_comm.empty()) c.running.push_back({op, end, level});
      push(end, EvType::kOpEnd, d, op);
      return;
    }
    case OpKind::kSend:
      send(d, op, o);
      return;
    case OpKind::kRecv: {
      Channel& ch = channels_[channel_key(d, peer(d, o), lane(o))];
      if (ch.arrived > 0) {
        --ch.arrived;
        end_op(d, op);
      } else {
        ch.waiting.push_back(op);
      }
      return;
    }
    case OpKind::kCollective:
      break;
  }
  const ProgramInfo& info = info_[stage_of_[d]];
  if (per_rank_) {
    // Every member runs (no symmetry, no replica shortcut).
    const uint64_t slot = info.coll_slot[op];
    if (++arrivals_[slot] < ps_.groups[static_cast<size_t>(o.group)].size()) return;
    launch(d, op);
    return;
  }
  const uint64_t slot =
      info.coll_slot[op] +
      static_cast<uint64_t>((*info.coll_groups[op])[static_cast<size_t>(mesh_.group_index(d, o.axes))]);
  // Only the group's canonical members run; the others arrive with the
  // canonical device of their orbit (symmetry). With the replica shortcut
  // only data-parallel replica 0 runs, and a group that spans dp counts
  // its other members as arrived with it (an estimate); its flows still
  // cover every member.
  auto size = static_cast<uint32_t>(sym_.group.canonical_members(mesh_, o.axes));
  if (replica_estimate_ && (o.axes & axis_bit(MeshAxis::kDp))) {
    size /= static_cast<uint32_t>(sym_.group.step_of(mesh_, MeshAxis::kDp));
  }
  if (++arrivals_[slot] < size) return;
  launch(d, op);
}

template <class Backend>
inline void EngineCore<Backend>::send(uint32_t d, OpId op, const Op& o) {
  const uint32_t id = acquire(transfers_, free_transfers_);
  const DeviceId dst = peer(d, o);
  transfers_[id] = Transfer{d, dst, op, lane(o), now_};
  for (DeviceId x : {static_cast<DeviceId>(d), receiver_side(dst)}) {
    clocks_[x].advance(now_);
    ++clocks_[x].comm_active;
    clocks_[x].hold_sms(o, +1);
    retime_compute(x);
  }
  const double k = stream_speedup(d, o);
  if (const auto fit = calibrated("send-recv", 2)) {
    // Measured point-to-point: latency + bytes / bandwidth, no flow.
    push(now_ + sped_up(to_sim_time(fit->latency_s + static_cast<double>(o.comm_bytes.value()) / fit->bytes_per_s), k),
         EvType::kTransferEnd, id, 0);
    return;
  }
  self().add_flow(d, dst, static_cast<double>(o.comm_bytes.value()) / k, kP2pOwner | id);
  ++result_.flows;
}

template <class Backend>
inline void EngineCore<Backend>::transfer_end(uint32_t id) {
  const Transfer tr = transfers_[id];
  free_transfers_.push_back(id);
  stream_busy_[tr.src * streams_ + program(tr.src).op(tr.send_op).stream] += now_ - tr.start;
  const Op& sent = program(tr.src).op(tr.send_op);
  const DeviceId receiver = receiver_side(tr.dst);
  for (DeviceId x : {tr.src, receiver}) {
    clocks_[x].advance(now_);
    --clocks_[x].comm_active;
    clocks_[x].hold_sms(sent, -1);
    retime_compute(x);
  }
  end_op(tr.src, tr.send_op);
  // Under the symmetry reduction a transfer stands for its images: the one
  // that reaches the receiver's canonical device, from the sender moved
  // as the receiver was, ends now too.
  const auto from = symmetric_ ? static_cast<DeviceId>(mesh_.translate(tr.src, tr.dst, receiver)) : tr.src;
  if (!active_[receiver]) return;
  Channel& ch = channels_[channel_key(receiver, from, tr.lane)];
  if (ch.waiting.empty()) {
    ++ch.arrived;
    return;
  }
  const OpId recv = ch.waiting.front();
  ch.waiting.pop_front();
  end_op(receiver, recv);
}

template <class Backend>
inline void EngineCore<Backend>::end_op(uint32_t d, OpId op) {
  const Program& p = program(d);
  const Op& o = p.op(op);
#if SHARDSIM_EXPENSIVE_CHECKS
  SHARDSIM_ASSERT(!ended_[rem_offset_[d] + op], "an op ended twice");
  ended_[rem_offset_[d] + op] = 1;
#endif
  DeviceClock& c = clocks_[d];
  if (o.kind == OpKind::kCompute && !on_sms(o)) {
    c.advance(now_);
    --c.comm_active;
    stream_busy_[d * streams_ + o.stream] += info_[stage_of_[d]].duration[op];
  } else if (o.kind == OpKind::kCompute) {
    c.advance(now_);
    c.computing = false;
    compute_by_kind_[d * kComputeKinds + static_cast<size_t>(o.compute)] += now_ - c.compute_start;
    // What communication beside it added to the op (its time alone is
    // its duration at level 0).
    const SimTime alone = info_[stage_of_[d]].duration[op];
    if (now_ - c.compute_start > alone) beside_comm_[d] += now_ - c.compute_start - alone;
  }
  c.end = std::max(c.end, now_);
  if (trace_index_[d] >= 0) {
    result_.timeline.spans.push_back(
        TimelineSpan{d, stage_of_[d], o.stream, op, trace_starts_[static_cast<size_t>(trace_index_[d])][op], now_});
  }
  uint16_t* rem = remaining_.data() + rem_offset_[d];
  for (OpId s : p.succs(op)) {
    if (--rem[s] == 0) start(d, s);
  }
}

}  // namespace shardsim::detail
