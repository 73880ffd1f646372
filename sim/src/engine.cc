// The native engine. Events are ordered by (integer picosecond time,
// insertion number), so runs are deterministic. Every device runs the same
// Program (SPMD); an op starts as soon as its dependencies end (the Program
// encodes stream order as dependencies). A compute op ends after its
// roofline time. A collective waits until every member of its group has
// reached it, then runs its plan's phases of flows on the FluidNetwork; all
// members end it together. Rates are recomputed once per simulated instant,
// after every event at that instant has been handled.
#include "shardsim/sim/engine.h"

#include <algorithm>
#include <queue>
#include <unordered_map>

#include "shardsim/core/error.h"
#include "shardsim/sim/collective.h"
#include "shardsim/sim/compute_model.h"
#include "shardsim/sim/fluid_network.h"

namespace shardsim {
namespace {

enum class EvType : uint8_t { kOpEnd, kFlowEnd, kPhaseEnd };

struct Event {
  uint32_t a;  // device | flow | run
  uint32_t b;  // op | version
  EvType type;
};

/// Pending events ordered by (time, insertion order). Devices that run the
/// same program finish the same ops at the same instants, so events are
/// kept in one FIFO bucket per distinct time and only the times go through a
/// heap: a bucket's events run in the order they were pushed, which is the
/// (time, insertion number) order.
class EventQueue {
 public:
  void push(int64_t time, Event e) {
    auto [it, fresh] = bucket_of_.try_emplace(time, 0);
    if (fresh) {
      if (free_.empty()) {
        it->second = static_cast<uint32_t>(buckets_.size());
        buckets_.emplace_back();
      } else {
        it->second = free_.back();
        free_.pop_back();
      }
      times_.push_back(time);
      std::push_heap(times_.begin(), times_.end(), std::greater<>());
    }
    buckets_[it->second].push_back(e);
  }
  bool empty() const { return times_.empty(); }
  /// Removes the earliest time and returns it with its bucket index. The
  /// bucket stays valid (and may grow) until release().
  std::pair<int64_t, uint32_t> pop_time() {
    std::pop_heap(times_.begin(), times_.end(), std::greater<>());
    const int64_t t = times_.back();
    times_.pop_back();
    const uint32_t b = bucket_of_.at(t);
    return {t, b};
  }
  const std::vector<Event>& bucket(uint32_t b) const { return buckets_[b]; }
  void release(int64_t time, uint32_t b) {
    bucket_of_.erase(time);
    buckets_[b].clear();
    free_.push_back(b);
  }

 private:
  std::vector<int64_t> times_;
  std::unordered_map<int64_t, uint32_t> bucket_of_;
  std::vector<std::vector<Event>> buckets_;
  std::vector<uint32_t> free_;
};

/// Plans depend only on the collective, its size and its group, so the
/// instances of one layer's collective across microbatches share a plan.
struct PlanKey {
  uint64_t bytes;
  uint32_t group;
  uint8_t axes;
  CollectiveKind kind;
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
};

struct CollectiveRun {
  OpId op = 0;
  const CachedPlan* cached = nullptr;
  size_t phase = 0;
  size_t pending = 0;
  bool in_use = false;
};

/// Per-device accounting of what its streams are doing, for the breakdown.
struct DeviceClock {
  SimTime last;
  SimTime compute;
  SimTime comm_only;
  SimTime end;
  int comm_active = 0;
  bool computing = false;
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

class Engine {
 public:
  Engine(const Program& p, const Mesh& mesh, const Topology& topo, const ChipSpec& chip, const EngineOptions& opt)
      : p_(p), mesh_(mesh), topo_(topo), opt_(opt), net_(topo) {
    const size_t n = p.size();
    devices_ = static_cast<uint32_t>(mesh.devices());
    SHARDSIM_ASSERT(mesh.devices() == topo.num_devices(), "mesh and topology disagree on the device count");
    duration_.resize(n);
    dep_count_.resize(n);
    coll_slot_.assign(n, 0);
    uint64_t slots = 0;
    for (OpId i = 0; i < n; ++i) {
      const Op& o = p.op(i);
      dep_count_[i] = static_cast<uint16_t>(p.deps(i).size());
      SHARDSIM_ASSERT(p.deps(i).size() < 65536, "too many dependencies");
      if (o.kind == OpKind::kCompute) duration_[i] = compute_time(o, chip);
      if (o.kind == OpKind::kCollective) {
        coll_slot_[i] = slots;
        slots += static_cast<uint64_t>(mesh.num_groups(o.axes));
      }
    }
    arrivals_.assign(slots, 0);
    remaining_.resize(static_cast<size_t>(devices_) * n);
    for (uint32_t d = 0; d < devices_; ++d) {
      std::copy(dep_count_.begin(), dep_count_.end(), remaining_.begin() + static_cast<std::ptrdiff_t>(d * n));
    }
    clocks_.resize(devices_);
    trace_index_.assign(devices_, -1);
    for (uint32_t d : opt.trace_devices) {
      if (d < devices_ && trace_index_[d] < 0) {
        trace_index_[d] = static_cast<int>(trace_starts_.size());
        trace_starts_.emplace_back(n);
        result_.timeline.devices.push_back(d);
      }
    }
    std::sort(result_.timeline.devices.begin(), result_.timeline.devices.end());
    active_.assign(devices_, opt.active_devices.empty() ? 1 : 0);
    for (uint32_t d : opt.active_devices) {
      if (d < devices_) active_[d] = 1;
    }
  }

  EngineResult run() {
    const size_t n = p_.size();
    for (uint32_t d = 0; d < devices_; ++d) {
      if (!active_[d]) continue;
      for (OpId i = 0; i < n; ++i) {
        if (dep_count_[i] == 0) start(d, i);
      }
    }
    std::vector<FluidNetwork::Finish> finishes;
    while (true) {
      // Rates change only where flows started or ended at this instant.
      if (net_.dirty()) {
        finishes.clear();
        net_.update(now_, finishes);
        for (const auto& f : finishes) push(f.at, EvType::kFlowEnd, f.flow, f.version);
      }
      if (queue_.empty()) break;
      const auto [t, b] = queue_.pop_time();
      now_ = SimTime::from_ps(t);
      // Handlers may append to this bucket (zero-time events): index, copy.
      for (size_t i = 0; i < queue_.bucket(b).size(); ++i) {
        const Event e = queue_.bucket(b)[i];
        ++result_.events;
        handle(e);
      }
      queue_.release(t, b);
    }
    finish_result();
    return std::move(result_);
  }

 private:
  void push(SimTime t, EvType type, uint32_t a, uint32_t b) { queue_.push(t.ps(), Event{a, b, type}); }

  void handle(const Event& e) {
    switch (e.type) {
      case EvType::kOpEnd:
        end_op(e.a, e.b);
        break;
      case EvType::kFlowEnd:
        if (net_.version(e.a) == e.b) flow_done(e.a);
        break;
      case EvType::kPhaseEnd:
        phase_end(e.a);
        break;
    }
  }

  void start(uint32_t d, OpId op) {
    const Op& o = p_.op(op);
    if (trace_index_[d] >= 0) trace_starts_[static_cast<size_t>(trace_index_[d])][op] = now_;
    if (o.kind == OpKind::kCompute) {
      DeviceClock& c = clocks_[d];
      c.advance(now_);
      c.computing = true;
      push(now_ + duration_[op], EvType::kOpEnd, d, op);
      return;
    }
    SHARDSIM_ASSERT(o.kind == OpKind::kCollective, "only compute and collective ops are lowered yet");
    const uint64_t slot = coll_slot_[op] + static_cast<uint64_t>(mesh_.group_index(d, o.axes));
    const auto size = static_cast<uint32_t>(mesh_.group_size(o.axes));
    if (++arrivals_[slot] < size) return;
    arrivals_[slot] = 0;  // ready for the next use of this op (never: ops run once)
    launch(d, op);
  }

  void launch(uint32_t any_member, OpId op) {
    const Op& o = p_.op(op);
    uint32_t id;
    if (!free_runs_.empty()) {
      id = free_runs_.back();
      free_runs_.pop_back();
    } else {
      id = static_cast<uint32_t>(runs_.size());
      runs_.emplace_back();
    }
    CollectiveRun& r = runs_[id];
    r.in_use = true;
    r.op = op;
    const PlanKey key{static_cast<uint64_t>(o.comm_bytes.value()),
                      static_cast<uint32_t>(mesh_.group_index(any_member, o.axes)), o.axes, o.collective};
    auto [it, fresh] = plans_.try_emplace(key);
    if (fresh) {
      mesh_.group_members(any_member, o.axes, it->second.members);
      it->second.plan =
          plan_collective(o.collective, o.comm_bytes, it->second.members, topo_, opt_.collective_base_latency);
    }
    r.cached = &it->second;
    r.phase = 0;
    for (DeviceId m : r.cached->members) {
      DeviceClock& c = clocks_[m];
      c.advance(now_);
      ++c.comm_active;
    }
    if (r.cached->plan.phases.empty()) {
      complete(id);
      return;
    }
    start_phase(id);
  }

  void start_phase(uint32_t id) {
    CollectiveRun& r = runs_[id];
    const CollectivePhase& ph = r.cached->plan.phases[r.phase];
    r.pending = ph.flows.size();
    for (const FlowSpec& f : ph.flows) {
      net_.add(f.src, f.dst, f.bytes, id, now_);
      ++result_.flows;
    }
    if (r.pending == 0) push(now_ + ph.latency, EvType::kPhaseEnd, id, 0);
  }

  void flow_done(FlowId f) {
    const uint32_t id = net_.owner(f);
    CollectiveRun& r = runs_[id];
    const DeviceId src = net_.src(f);
    if (trace_index_[src] >= 0) {
      result_.timeline.flows.push_back(
          TimelineFlow{src, net_.dst(f), r.op, Bytes(static_cast<int64_t>(net_.bytes(f))), net_.start(f), now_});
    }
    result_.flow_byte_hops += net_.bytes(f) * static_cast<double>(net_.hops(f));
    net_.finish(f);
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
    for (DeviceId m : cached->members) {
      DeviceClock& c = clocks_[m];
      c.advance(now_);
      --c.comm_active;
    }
    r.in_use = false;
    free_runs_.push_back(id);
    for (DeviceId m : cached->members) end_op(m, op);
  }

  void end_op(uint32_t d, OpId op) {
    const Op& o = p_.op(op);
    DeviceClock& c = clocks_[d];
    if (o.kind == OpKind::kCompute) {
      c.advance(now_);
      c.computing = false;
    }
    c.end = std::max(c.end, now_);
    if (trace_index_[d] >= 0) {
      result_.timeline.spans.push_back(
          TimelineSpan{d, o.stream, op, trace_starts_[static_cast<size_t>(trace_index_[d])][op], now_});
    }
    uint16_t* rem = remaining_.data() + static_cast<size_t>(d) * p_.size();
    for (OpId s : p_.succs(op)) {
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
    for (uint32_t d = 0; d < devices_; ++d) {
      if (!active_[d]) continue;
      const size_t base = static_cast<size_t>(d) * p_.size();
      for (size_t i = 0; i < p_.size(); ++i) {
        SHARDSIM_ASSERT(remaining_[base + i] == 0, "an op never ran: deadlock");
      }
    }
    SHARDSIM_ASSERT(net_.active_flows() == 0, "flows left at the end");
    DeviceClock& c = clocks_[crit];
    c.advance(step);
    result_.step_time = step;
    result_.critical_device = crit;
    const double idle = (step - c.compute - c.comm_only).seconds();
    result_.breakdown.compute_s = c.compute.seconds();
    result_.breakdown.exposed_comm_s = c.comm_only.seconds();
    (opt_.pipelined ? result_.breakdown.bubble_s : result_.breakdown.other_s) = idle;
    result_.link_bytes = net_.link_bytes();
  }

  const Program& p_;
  const Mesh& mesh_;
  const Topology& topo_;
  const EngineOptions& opt_;
  FluidNetwork net_;
  uint32_t devices_ = 0;
  std::vector<SimTime> duration_;
  std::vector<uint16_t> dep_count_;
  std::vector<uint64_t> coll_slot_;
  std::vector<uint32_t> arrivals_;
  std::vector<uint16_t> remaining_;
  std::vector<DeviceClock> clocks_;
  std::vector<int> trace_index_;
  std::vector<std::vector<SimTime>> trace_starts_;
  std::vector<uint8_t> active_;
  std::unordered_map<PlanKey, CachedPlan, PlanKeyHash> plans_;
  std::vector<CollectiveRun> runs_;
  std::vector<uint32_t> free_runs_;
  EventQueue queue_;
  SimTime now_;
  EngineResult result_;
};

}  // namespace

EngineResult simulate(const Program& program, const Mesh& mesh, const Topology& topo, const ChipSpec& chip,
                      const EngineOptions& options) {
  return Engine(program, mesh, topo, chip, options).run();
}

}  // namespace shardsim

namespace shardsim {

EngineResult simulate_collective(CollectiveKind kind, Bytes size, const Mesh& mesh, uint8_t axes, const Topology& topo,
                                 const ChipSpec& chip, SimTime base_latency, bool all_groups) {
  ProgramBuilder b;
  b.add_stream("comm");
  Op o;
  o.kind = OpKind::kCollective;
  o.collective = kind;
  o.axes = axes;
  o.comm_bytes = size;
  o.name = b.intern(to_string(kind));
  b.add(o);
  const Program program = std::move(b).finish();
  EngineOptions opt;
  opt.collective_base_latency = base_latency;
  if (!all_groups) mesh.group_members(0, axes, opt.active_devices);
  return simulate(program, mesh, topo, chip, opt);
}

}  // namespace shardsim
