// EngineCore's setup (engine_core.h): per stage program, each op's
// durations alone and beside communication, the step's symmetry and which
// devices run, the collectives' arrival counters, the traced devices; then
// the first ops started. Included at the end of engine_core.h. Private to
// sim/.
#pragma once

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "engine_core.h"

namespace shardsim::detail {

template <class Backend>
inline EngineCore<Backend>::EngineCore(const ProgramSet& ps, const Mesh& mesh, const Topology& topo,
                                       const ChipSpec& chip, const EngineOptions& opt)
    : ps_(ps), mesh_(mesh), topo_(topo), opt_(opt), per_rank_(ps.per_rank()) {
  devices_ = static_cast<uint32_t>(mesh.devices());
  SHARDSIM_ASSERT(mesh.devices() == topo.num_devices(), "mesh and topology disagree on the device count");
  SHARDSIM_ASSERT(
      per_rank_ ? ps.program_of.size() == devices_ : static_cast<int64_t>(ps.stages.size()) == mesh.size(MeshAxis::kPp),
      "one program per pipeline stage, or one per device");
  SHARDSIM_ASSERT(devices_ < (1u << 24), "channel keys hold 24-bit device ids");
  // Compute that starts while a collective or transfer of its device is in
  // flight runs on the SMs communication leaves (compute_model.h).
  // Kernels that hold a few SMs on purpose (Op::sms) leave more: one such
  // count per step (the largest, should programs name several).
  int few = 0;
  for (const Program& p : ps.stages) {
    for (const Op& o : p.ops()) {
      if (o.kind != OpKind::kCompute && o.holds_sms) few = std::max(few, static_cast<int>(o.sms));
    }
  }
  const ChipSpec beside = chip_beside_communication(chip);
  const ChipSpec beside_few = chip_beside_communication(chip, few);
  const bool contended = opt.calibration == nullptr && beside.compute_units != chip.compute_units;
  for (const Program& p : ps.stages) {
    ProgramInfo info;
    const size_t n = p.size();
    info.duration.resize(n);
    if (contended) info.beside_comm.resize(n);
    if (contended && few > 0) info.beside_few.resize(n);
    info.dep_count.resize(n);
    info.coll_slot.assign(n, 0);
    info.coll_groups.assign(n, nullptr);
    for (OpId i = 0; i < n; ++i) {
      const Op& o = p.op(i);
      SHARDSIM_ASSERT(p.deps(i).size() < 65536, "too many dependencies");
      info.dep_count[i] = static_cast<uint16_t>(p.deps(i).size());
      if (o.kind == OpKind::kCompute && o.timing != OpTiming::kModel) {
        // A recorded duration (a trace's): as recorded, or, recorded
        // alone, slowed beside communication as the model slows the op.
        const double k = opt.compute_speedup[static_cast<size_t>(o.compute)];
        info.duration[i] = sped_up(o.recorded, k);
        const SimTime alone = compute_time(o, chip);
        auto beside_time = [&](const ChipSpec& c) {
          if (o.timing != OpTiming::kAlone || alone.ps() <= 0) return sped_up(o.recorded, k);
          return sped_up(scaled(o.recorded, compute_time(o, c), alone), k);
        };
        if (contended) info.beside_comm[i] = beside_time(beside);
        if (!info.beside_few.empty()) info.beside_few[i] = beside_time(beside_few);
      } else if (o.kind == OpKind::kCompute) {
        const double k = opt.compute_speedup[static_cast<size_t>(o.compute)];
        info.duration[i] = sped_up(op_compute_time(o, chip, opt.calibration), k);
        if (contended) info.beside_comm[i] = sped_up(compute_time(o, beside), k);
        if (!info.beside_few.empty()) info.beside_few[i] = sped_up(compute_time(o, beside_few), k);
      }
      if (o.kind == OpKind::kCollective && !per_rank_) {
        SHARDSIM_ASSERT(!(o.axes & axis_bit(MeshAxis::kPp)), "collectives stay inside a pipeline stage");
      }
    }
    info.stream_speedup.assign(p.stream_names().size(), 1.0);
    for (const auto& [name, k] : opt.stream_speedup) {
      for (size_t st = 0; st < p.stream_names().size(); ++st) {
        if (p.stream_names()[st] == name) info.stream_speedup[st] *= k;
      }
    }
    info_.push_back(std::move(info));
  }
  find_symmetry_if_asked(ps, topo);
  // Only canonical devices run (all, without symmetry); with the replica
  // shortcut (an estimate) only those of data-parallel replica 0.
  // Per-rank programs (a trace) have no replicas: every rank runs.
  replica_estimate_ =
      opt.replica_shortcut && !per_rank_ && mesh.size(MeshAxis::kDp) > 1 && sym_.group.step_of(mesh, MeshAxis::kDp) > 1;
  active_.assign(devices_, opt.active_devices.empty() ? 1 : 0);
  for (uint32_t d : opt.active_devices) {
    if (d < devices_) active_[d] = 1;
  }
  for (uint32_t d = 0; d < devices_; ++d) {
    active_[d] =
        active_[d] && sym_.group.is_canonical(mesh, d) && (!replica_estimate_ || mesh.coord(d, MeshAxis::kDp) == 0);
  }
  result_.symmetry = sym_.group;
  result_.symmetry_note = sym_.note;
  // An arrival counter per collective op and group that has a running
  // member (of 16,384 devices, a few may run); per rank, one per
  // collective instance.
  uint64_t slots = 0;
  if (per_rank_) {
    instances_ = match_collectives(ps);
    for (size_t st = 0; st < ps.stages.size(); ++st) {
      for (OpId i = 0; i < ps.stages[st].size(); ++i) {
        if (instances_.of[st][i] >= 0) info_[st].coll_slot[i] = static_cast<uint64_t>(instances_.of[st][i]);
      }
    }
    slots = instances_.group.size();
  }
  for (size_t st = 0; st < ps.stages.size() && !per_rank_; ++st) {
    const Program& p = ps.stages[st];
    for (OpId i = 0; i < p.size(); ++i) {
      if (p.op(i).kind != OpKind::kCollective) continue;
      const auto& groups = running_groups(p.op(i).axes);
      info_[st].coll_slot[i] = slots;
      info_[st].coll_groups[i] = &groups.first;
      slots += static_cast<uint64_t>(groups.second);
    }
  }
  arrivals_.assign(slots, 0);
  stage_of_.resize(devices_);
  rem_offset_.resize(devices_ + 1, 0);
  for (uint32_t d = 0; d < devices_; ++d) {
    stage_of_[d] = per_rank_ ? ps.program_of[d] : static_cast<uint32_t>(mesh.coord(d, MeshAxis::kPp));
    rem_offset_[d + 1] = rem_offset_[d] + (active_[d] ? program(d).size() : 0);
  }
  remaining_.resize(rem_offset_[devices_]);
#if SHARDSIM_EXPENSIVE_CHECKS
  ended_.assign(rem_offset_[devices_], 0);
#endif
  for (uint32_t d = 0; d < devices_; ++d) {
    if (!active_[d]) continue;
    const auto& dc = info_[stage_of_[d]].dep_count;
    std::copy(dc.begin(), dc.end(), remaining_.begin() + static_cast<std::ptrdiff_t>(rem_offset_[d]));
  }
  clocks_.resize(devices_);
  for (const Program& p : ps.stages) streams_ = std::max(streams_, p.num_streams());
  compute_by_kind_.assign(static_cast<size_t>(devices_) * kComputeKinds, SimTime());
  beside_comm_.assign(devices_, SimTime());
  stream_busy_.assign(static_cast<size_t>(devices_) * streams_, SimTime());
  trace_index_.assign(devices_, -1);
  flows_traced_.assign(devices_, false);
  for (uint32_t d : opt.trace_devices) {
    if (d < devices_ && active_[d] && !flows_traced_[d]) {
      flows_traced_[d] = true;
      result_.timeline.devices.push_back(d);
    }
  }
  // Every running device's spans, unless they are more than asked for.
  bool every = opt.spans_of_every_device;
  for (uint32_t d = 0; d < devices_; ++d) {
    if (active_[d]) result_.op_instances += static_cast<int64_t>(program(d).size());
  }
  if (every && opt.span_instance_limit > 0 && result_.op_instances > opt.span_instance_limit) {
    every = false;
    result_.spans_over_limit = true;
  }
  for (uint32_t d = 0; d < devices_; ++d) {
    if (active_[d] && (flows_traced_[d] || every)) {
      trace_index_[d] = static_cast<int>(trace_starts_.size());
      trace_starts_.emplace_back(program(d).size());
    }
  }
  std::sort(result_.timeline.devices.begin(), result_.timeline.devices.end());
}

template <class Backend>
inline void EngineCore<Backend>::start_all() {
  std::vector<uint32_t> order(devices_);
  for (uint32_t d = 0; d < devices_; ++d) order[d] = d;
  if (opt_.start_order_seed != 0) {
    // Fisher-Yates with std::mt19937_64, whose output the standard fixes.
    std::mt19937_64 rng(opt_.start_order_seed);
    for (uint32_t i = devices_; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  }
  for (uint32_t d : order) {
    if (!active_[d]) continue;
    const auto& dc = info_[stage_of_[d]].dep_count;
    for (OpId i = 0; i < dc.size(); ++i) {
      if (dc[i] == 0) start(d, i);
    }
  }
}

template <class Backend>
inline const std::pair<std::vector<int32_t>, int64_t>& EngineCore<Backend>::running_groups(uint8_t axes) {
  auto [it, fresh] = running_groups_.try_emplace(axes);
  if (fresh) {
    auto& [dense, n] = it->second;
    dense.assign(static_cast<size_t>(mesh_.num_groups(axes)), -1);
    for (uint32_t d = 0; d < devices_; ++d) {
      if (!active_[d]) continue;
      int32_t& g = dense[static_cast<size_t>(mesh_.group_index(d, axes))];
      if (g < 0) g = static_cast<int32_t>(n++);
    }
  }
  return it->second;
}

template <class Backend>
inline void EngineCore<Backend>::find_symmetry_if_asked(const ProgramSet& ps, const Topology& topo) {
  sym_.group = MeshSymmetry::none(mesh_);
  if (!opt_.symmetry) return;
  if (per_rank_) return;  // per-rank programs: every device its own
  if (!Backend::kWeighsLinks) {
    sym_.note = "none (this backend cannot lay a flow for its images)";
    return;
  }
  if (!opt_.active_devices.empty()) return;
  sym_ = find_symmetry(ps, mesh_, topo, opt_.collective, opt_.calibration, opt_.trace_devices);
  symmetric_ = !sym_.group.trivial(mesh_);
}

}  // namespace shardsim::detail
