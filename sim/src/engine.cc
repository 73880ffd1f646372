// The native backend of the engine (engine_core.h holds the logic): events
// are ordered by (integer picosecond time, insertion number), so runs are
// deterministic, and flows share links by max-min fairness in the
// FluidNetwork, whose rates are recomputed once per simulated instant, after
// every event at that instant has been handled.
#include "shardsim/sim/engine.h"

#include <algorithm>
#include <queue>
#include <unordered_map>

#include "engine_core.h"
#include "shardsim/sim/fluid_network.h"

namespace shardsim {
namespace {

using detail::Event;
using detail::EvType;

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

/// The native backend: its own event queue and the max-min FluidNetwork.
/// Rates are recomputed once per simulated instant, after every event at
/// that instant has been handled.
class NativeEngine : public detail::EngineCore<NativeEngine> {
 public:
  NativeEngine(const ProgramSet& ps, const Mesh& mesh, const Topology& topo, const ChipSpec& chip,
               const EngineOptions& opt)
      : EngineCore(ps, mesh, topo, chip, opt), net_(topo) {
    if (symmetric_) net_.use_quotient(sym_.link_rep, sym_.link_fixers);
  }
  static constexpr bool kWeighsLinks = true;

  EngineResult run() {
    start_all();
    std::vector<FluidNetwork::Finish> finishes;
    while (true) {
      // Rates change only where flows started or ended at this instant.
      if (net_.dirty()) {
        finishes.clear();
        net_.update(now_, finishes);
        for (const auto& f : finishes) schedule(f.at, EvType::kFlowEnd, f.flow, f.version);
      }
      if (queue_.empty()) break;
      const auto [t, b] = queue_.pop_time();
      now_ = SimTime::from_ps(t);
      // Handlers may append to this bucket (zero-time events): index, copy.
      for (size_t i = 0; i < queue_.bucket(b).size(); ++i) {
        const Event e = queue_.bucket(b)[i];
        handle(e);
      }
      queue_.release(t, b);
    }
    return take_result();
  }

  void schedule(SimTime t, EvType type, uint32_t a, uint32_t b) { queue_.push(t.ps(), Event{a, b, type}); }
  void add_flow(DeviceId src, DeviceId dst, double bytes, uint32_t owner) { net_.add(src, dst, bytes, owner, now_); }
  void flow_event(uint32_t flow, uint32_t version) {
    if (net_.version(flow) != version) return;  // its rate changed since
    const DoneFlow done{net_.owner(flow), net_.src(flow),   net_.dst(flow),
                        net_.bytes(flow), net_.start(flow), net_.hops(flow)};
    net_.finish(flow);
    flow_done(done);
  }
  size_t active_flows() const { return net_.active_flows(); }
  const std::vector<double>& link_bytes() const { return net_.link_bytes(); }

 private:
  FluidNetwork net_;
  EventQueue queue_;
};

}  // namespace

EngineResult simulate(const ProgramSet& programs, const Mesh& mesh, const Topology& topo, const ChipSpec& chip,
                      const EngineOptions& options) {
  return NativeEngine(programs, mesh, topo, chip, options).run();
}
}  // namespace shardsim

namespace shardsim {

ProgramSet lone_collective_program(CollectiveKind kind, Bytes size, uint8_t axes) {
  ProgramBuilder b;
  b.add_stream("comm");
  Op o;
  o.kind = OpKind::kCollective;
  o.collective = kind;
  o.axes = axes;
  o.comm_bytes = size;
  o.name = b.intern(to_string(kind));
  b.add(o);
  ProgramSet programs;
  programs.stages.push_back(std::move(b).finish());
  return programs;
}

EngineResult simulate_collective(CollectiveKind kind, Bytes size, const Mesh& mesh, uint8_t axes, const Topology& topo,
                                 const ChipSpec& chip, const CollectiveCosts& costs, bool all_groups) {
  const ProgramSet programs = lone_collective_program(kind, size, axes);
  EngineOptions opt;
  opt.collective = costs;
  if (!all_groups) mesh.group_members(0, axes, opt.active_devices);
  return simulate(programs, mesh, topo, chip, opt);
}

}  // namespace shardsim
