// The engine's logic, independent of how flows share the network: devices
// run their stage's Program; an op starts when its dependencies end; compute
// ops take their roofline time; collectives wait for every member, then run
// their plan's phases of flows; sends are eager. Backends (the native fluid
// model in engine.cc, SimGrid in sim/simgrid/) decide when flows finish and
// drive time. Private to sim/.
#pragma once

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "shardsim/core/error.h"
#include "shardsim/sim/collective.h"
#include "shardsim/sim/compute_model.h"
#include "shardsim/sim/engine.h"
#include "symmetry.h"

namespace shardsim::detail {

enum class EvType : uint8_t { kOpEnd, kFlowEnd, kPhaseEnd, kTransferEnd };

struct Event {
  uint32_t a;  // device | flow | run
  uint32_t b;  // op | version
  EvType type;
};

/// Plans depend only on the collective, its size and its group, so the
/// instances of one layer's collective across microbatches share a plan.
struct PlanKey {
  uint64_t bytes;
  uint32_t group;
  uint8_t axes;
  CollectiveKind kind;
  double speedup = 1;  ///< of the op's stream (EngineOptions::stream_speedup)
  bool operator==(const PlanKey&) const = default;
};
struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    uint64_t h = k.bytes * 0x9E3779B97F4A7C15ull;
    h ^= (static_cast<uint64_t>(k.group) << 16 | static_cast<uint64_t>(k.axes) << 8 | static_cast<uint64_t>(k.kind)) +
         0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};
struct CachedPlan {
  std::vector<DeviceId> members;
  CollectivePlan plan;
  /// Under the symmetry reduction, per phase the flows laid: one per orbit
  /// of the plan's flows (each stands for its images), from its canonical
  /// device. Empty without it (every flow is laid).
  std::vector<std::vector<FlowSpec>> orbit_flows;
};

struct CollectiveRun {
  OpId op = 0;
  int64_t instance = -1;  ///< per-rank programs: the instance (CollectiveInstances)
  const CachedPlan* cached = nullptr;
  size_t phase = 0;
  size_t pending = 0;
  SimTime start;  // when the last member arrived
};

/// Per-device accounting of what its streams are doing, for the breakdown.
struct DeviceClock {
  SimTime last;
  SimTime compute;
  SimTime comm_only;
  SimTime end;
  SimTime compute_start;  // of the compute op running now
  int comm_active = 0;
  int sm_comm_active = 0;  ///< of which hold the chip's comm_compute_units SMs
  int sm_few_active = 0;   ///< of which hold fewer (Op::sms; compute beside them slows less)
  /// The rate compute runs at now: 0 alone, 1 beside communication that
  /// holds a few SMs, 2 beside communication that holds the usual count.
  uint8_t level() const { return sm_comm_active > 0 ? 2 : sm_few_active > 0 ? 1 : 0; }
  /// A communication op starts (+1) or ends (-1).
  void hold_sms(const Op& o, int delta) {
    if (!o.holds_sms) return;
    (o.sms > 0 ? sm_few_active : sm_comm_active) += delta;
  }
  bool computing = false;
  /// Compute ops running now (usually one; one per compute stream): when
  /// each ends at the rate it runs at now, and whether that rate is the
  /// one beside communication (fewer SMs).
  struct Running {
    OpId op;
    SimTime end;
    uint8_t level;  ///< DeviceClock::level() when it last changed rate
  };
  std::vector<Running> running;
  void advance(SimTime now) {
    const SimTime dt = now - last;
    if (computing) {
      compute += dt;
    } else if (comm_active > 0) {
      comm_only += dt;
    }
    last = now;
  }
};

/// A point-to-point transfer in flight (pipeline activations, ring-attention
/// blocks); eager: the sender does not wait for the receiver to post its
/// receive.
struct Transfer {
  DeviceId src = 0;
  DeviceId dst = 0;
  OpId send_op = 0;
  uint32_t lane = 0;  ///< of its channel (EngineCore::lane)
  SimTime start;
};

/// Receives of one (receiver, sender, lane) channel, matched in order with
/// the sender's sends on it.
struct Channel {
  uint32_t arrived = 0;      ///< transfers delivered before their receive was posted
  std::deque<OpId> waiting;  ///< receives posted before their transfer arrived
};

constexpr uint32_t kP2pOwner = 0x80000000u;  // flow owner: a Transfer, not a collective run

/// The engine's logic, shared by its network backends. Backend (CRTP) supplies
///   void schedule(SimTime t, EvType type, uint32_t a, uint32_t b);  // an event at t
///   void add_flow(DeviceId src, DeviceId dst, double bytes, uint32_t owner);
///   void flow_event(uint32_t a, uint32_t b);   // a kFlowEnd event it scheduled
///   size_t active_flows() const;  std::vector<double> link_bytes() const;
///   static constexpr bool kWeighsLinks;  // can it lay flows on a quotient
///                                        // network (symmetry reduction)
/// and reports each finished flow with flow_done(). It drives time: it sets
/// now_ and calls handle() for each event, in (time, insertion) order.
template <class Backend>
class EngineCore {
 public:
  EngineCore(const ProgramSet& ps, const Mesh& mesh, const Topology& topo, const ChipSpec& chip,
             const EngineOptions& opt)
      : ps_(ps), mesh_(mesh), topo_(topo), opt_(opt), per_rank_(ps.per_rank()) {
    devices_ = static_cast<uint32_t>(mesh.devices());
    SHARDSIM_ASSERT(mesh.devices() == topo.num_devices(), "mesh and topology disagree on the device count");
    SHARDSIM_ASSERT(per_rank_ ? ps.program_of.size() == devices_
                              : static_cast<int64_t>(ps.stages.size()) == mesh.size(MeshAxis::kPp),
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
    replica_estimate_ = opt.replica_shortcut && !per_rank_ && mesh.size(MeshAxis::kDp) > 1 &&
                        sym_.group.step_of(mesh, MeshAxis::kDp) > 1;
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

  /// Starts every op without dependencies, devices in id order (or shuffled
  /// by options.start_order_seed).
  void start_all() {
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

  EngineResult take_result() {
    finish_result();
    return std::move(result_);
  }

  /// A finished flow, as its backend reports it.
  struct DoneFlow {
    uint32_t owner = 0;
    DeviceId src = 0, dst = 0;
    double bytes = 0;
    SimTime start;
    double hops = 0;  ///< links crossed, each by its fraction of the bytes
  };

 protected:
  Backend& self() {
    return static_cast<Backend&>(*this);
  }

  void handle(const Event& e) {
    ++result_.events;
    switch (e.type) {
      case EvType::kOpEnd:
        if (stale_compute_end(e.a, e.b)) break;
        end_op(e.a, e.b);
        break;
      case EvType::kFlowEnd:
        self().flow_event(e.a, e.b);
        break;
      case EvType::kPhaseEnd:
        phase_end(e.a);
        break;
      case EvType::kTransferEnd:
        transfer_end(e.a);
        break;
    }
  }

 protected:
  struct ProgramInfo {
    std::vector<SimTime> duration;
    std::vector<SimTime> beside_comm;  ///< duration beside communication; empty: no contention
    std::vector<SimTime> beside_few;   ///< beside communication holding Op::sms SMs; empty: none does
    /// The duration of op at a DeviceClock::level().
    SimTime at(OpId op, uint8_t level) const {
      if (level == 2 || (level == 1 && beside_few.empty())) return beside_comm[op];
      return level == 1 ? beside_few[op] : duration[op];
    }
    std::vector<uint16_t> dep_count;
    std::vector<uint64_t> coll_slot;
    /// Per collective op: its groups' dense indices (running_groups).
    std::vector<const std::vector<int32_t>*> coll_groups;
    std::vector<double> stream_speedup;  ///< by stream index (EngineOptions::stream_speedup)
  };
  const Program& program(uint32_t d) const {
    return ps_.stages[stage_of_[d]];
  }

  /// A slot of `pool`: a released one if any, else a new one.
  template <typename T>
  static uint32_t acquire(std::vector<T>& pool, std::vector<uint32_t>& released) {
    if (!released.empty()) {
      const uint32_t id = released.back();
      released.pop_back();
      return id;
    }
    pool.emplace_back();
    return static_cast<uint32_t>(pool.size() - 1);
  }

  /// t · num / den, rounded to the nearest picosecond (exact when num ==
  /// den).
  static SimTime scaled(SimTime t, SimTime num, SimTime den) {
    const __int128 x = static_cast<__int128>(t.ps()) * num.ps();
    return SimTime::from_ps(static_cast<int64_t>((x + den.ps() / 2) / den.ps()));
  }

  /// A duration k times shorter (what-if speed-ups; k == 1 leaves it exact).
  static SimTime sped_up(SimTime t, double k) {
    if (k == 1) return t;
    return SimTime::from_ps(static_cast<int64_t>(std::llround(static_cast<double>(t.ps()) / k)));
  }
  double stream_speedup(uint32_t d, const Op& o) const {
    return info_[stage_of_[d]].stream_speedup[o.stream];
  }

  void push(SimTime t, EvType type, uint32_t a, uint32_t b) {
    self().schedule(t, type, a, b);
  }

  std::optional<CalibrationProfile::Fit> calibrated(const std::string& kind, int64_t group) const {
    if (opt_.calibration == nullptr) return std::nullopt;
    return opt_.calibration->fit(kind, group);
  }

  /// The device `delta` steps away from d along `axis` (wrapping around).
  DeviceId peer_of(DeviceId d, MeshAxis axis, int delta) const {
    const int64_t n = mesh_.size(axis);
    const int64_t c = mesh_.coord(d, axis);
    const int64_t nc = ((c + delta) % n + n) % n;
    return static_cast<DeviceId>(static_cast<int64_t>(d) + (nc - c) * mesh_.stride(axis));
  }
  /// A send's or receive's peer: named outright (per rank), or steps
  /// along a mesh axis.
  DeviceId peer(DeviceId d, const Op& o) const {
    return o.peer_device >= 0 ? static_cast<DeviceId>(o.peer_device) : peer_of(d, o.peer_axis, o.peer);
  }
  /// The lane of a transfer's channel: its tag (per rank), or forward or
  /// not (a mesh's pipeline sends forward and back between one pair).
  static uint32_t lane(const Op& o) {
    return o.peer_device >= 0 ? o.tag : (o.pass == Pass::kForward ? 0u : 1u);
  }
  static uint64_t channel_key(DeviceId receiver, DeviceId sender, uint32_t lane) {
    return static_cast<uint64_t>(receiver) << 40 | static_cast<uint64_t>(sender) << 16 | (lane & 0xffffu);
  }

  /// Compute beside communication (compute_model.h): when a device's
  /// communication starts or stops while a compute op runs, the op's
  /// remaining work continues at the other rate. Its end moves; the event
  /// pushed for the old end is recognised as stale when it fires.
  void retime_compute(DeviceId d) {
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
  /// A compute op that runs on the SMs (MXUs): every one but a host copy,
  /// which the DMA engines run beside them.
  static bool on_sms(const Op& o) {
    return o.kind == OpKind::kCompute && o.compute != ComputeKind::kHostCopy;
  }
  /// Whether an op-end event is one of a compute op whose end has moved
  /// since it was pushed; the op's current end leaves the running list.
  bool stale_compute_end(DeviceId d, OpId op) {
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

  void start(uint32_t d, OpId op) {
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

  void send(uint32_t d, OpId op, const Op& o) {
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
      push(
          now_ + sped_up(to_sim_time(fit->latency_s + static_cast<double>(o.comm_bytes.value()) / fit->bytes_per_s), k),
          EvType::kTransferEnd, id, 0);
      return;
    }
    self().add_flow(d, dst, static_cast<double>(o.comm_bytes.value()) / k, kP2pOwner | id);
    ++result_.flows;
  }

  void transfer_end(uint32_t id) {
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

  /// For the groups of `axes`: each one's dense index among those with a
  /// running device (-1 for none), and how many those are.
  const std::pair<std::vector<int32_t>, int64_t>& running_groups(uint8_t axes) {
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

  /// The device that plays a transfer's receiving end: its peer, or under
  /// the symmetry reduction the canonical device of the peer's orbit, which
  /// receives an image of the transfer at the same time.
  DeviceId receiver_side(DeviceId dst) const {
    return symmetric_ ? static_cast<DeviceId>(sym_.group.canonical(mesh_, dst)) : dst;
  }

  /// EngineOptions::symmetry on a backend that can lay flows on a quotient
  /// network, every device running: the step's symmetry (sim/src/
  /// symmetry.h), with every traced device canonical; else the trivial group.
  void find_symmetry_if_asked(const ProgramSet& ps, const Topology& topo) {
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

  SimTime route_latency(DeviceId a, DeviceId b) {
    const uint64_t key = static_cast<uint64_t>(a) << 32 | b;
    auto [it, fresh] = route_latency_.try_emplace(key);
    if (fresh) {
      route_scratch_.clear();
      topo_.route(a, b, route_scratch_);
      for (LinkId l : route_scratch_) it->second += topo_.link(l).latency;
    }
    return it->second;
  }

  void launch(uint32_t any_member, OpId op) {
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
      push(
          now_ + sped_up(to_sim_time(fit->latency_s + static_cast<double>(o.comm_bytes.value()) / fit->bytes_per_s), k),
          EvType::kPhaseEnd, id, 0);
      return;
    }
    start_phase(id);
  }

  /// One flow per orbit of each phase's flows, moved to start at the
  /// canonical device. The group's own translations that the symmetry keeps
  /// (H_A: shifts along the group's axes) map a plan's flows onto each other
  /// (find_symmetry checked that they do) and move every device, so an
  /// orbit holds |H_A| flows of the plan, or a multiple of that where the
  /// plan repeats a flow (a two-member bidirectional ring): each flow
  /// moved to the canonical device is laid count / |H_A| times.
  std::vector<std::vector<FlowSpec>> orbit_flows(const CollectivePlan& plan, uint8_t axes) const {
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

  void start_phase(uint32_t id) {
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

  /// Called by the backend when a flow has delivered its bytes (at now_).
  void flow_done(const DoneFlow& f) {
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

  void phase_end(uint32_t id) {
    CollectiveRun& r = runs_[id];
    if (++r.phase < r.cached->plan.phases.size()) {
      start_phase(id);
      return;
    }
    complete(id);
  }

  void complete(uint32_t id) {
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

  void end_op(uint32_t d, OpId op) {
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

  void finish_result() {
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

  const ProgramSet& ps_;
  const Mesh& mesh_;
  const Topology& topo_;
  const EngineOptions& opt_;
  bool per_rank_ = false;          ///< ps_.per_rank(): programs per device, groups and peers named
  CollectiveInstances instances_;  ///< per rank: which collective ops meet
  uint32_t devices_ = 0;
  std::vector<ProgramInfo> info_;
  std::vector<uint32_t> stage_of_;
  std::vector<size_t> rem_offset_;
  std::vector<uint32_t> arrivals_;
  std::unordered_map<uint8_t, std::pair<std::vector<int32_t>, int64_t>> running_groups_;  ///< by axes
  std::vector<uint16_t> remaining_;
#if SHARDSIM_EXPENSIVE_CHECKS
  std::vector<uint8_t> ended_;  // per device and op
#endif
  std::vector<DeviceClock> clocks_;
  static constexpr size_t kComputeKinds = shardsim::kComputeKinds;
  size_t streams_ = 1;
  std::vector<SimTime> compute_by_kind_;  // [device][compute kind]
  std::vector<SimTime> beside_comm_;      // [device]: compute time added by communication beside it
  std::vector<SimTime> stream_busy_;      // [device][stream]: communication ops in flight
  StepSymmetry sym_;                      ///< the group whose canonical devices run (EngineOptions::symmetry)
  bool symmetric_ = false;                ///< sym_ is not trivial: flows are laid once per orbit
  bool replica_estimate_ = false;         ///< EngineOptions::replica_shortcut beyond the symmetry
  std::vector<int> trace_index_;          ///< devices whose spans are recorded
  std::vector<bool> flows_traced_;        ///< trace_devices: their flows too
  std::vector<std::vector<SimTime>> trace_starts_;
  std::vector<uint8_t> active_;
  std::unordered_map<PlanKey, CachedPlan, PlanKeyHash> plans_;
  std::vector<CollectiveRun> runs_;
  std::vector<uint32_t> free_runs_;
  std::vector<Transfer> transfers_;
  std::vector<uint32_t> free_transfers_;
  std::unordered_map<uint64_t, Channel> channels_;
  std::unordered_map<uint64_t, SimTime> route_latency_;
  std::vector<LinkId> route_scratch_;

 protected:
  SimTime now_;
  EngineResult result_;
};

}  // namespace shardsim::detail
