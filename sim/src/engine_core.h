// The engine's logic, independent of how flows share the network: devices
// run their stage's Program; an op starts when its dependencies end; compute
// ops take their roofline time; collectives wait for every member, then run
// their plan's phases of flows; sends are eager. Backends (the native fluid
// model in engine.cc, SimGrid in sim/simgrid/) decide when flows finish and
// drive time. Private to sim/.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine_records.h"
#include "shardsim/core/error.h"
#include "shardsim/sim/collective.h"
#include "shardsim/sim/compute_model.h"
#include "shardsim/sim/engine.h"
#include "symmetry.h"

namespace shardsim::detail {

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
             const EngineOptions& opt);

  /// Starts every op without dependencies, devices in id order (or shuffled
  /// by options.start_order_seed).
  void start_all();

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
  Backend& self() { return static_cast<Backend&>(*this); }

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
  const Program& program(uint32_t d) const { return ps_.stages[stage_of_[d]]; }

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
  double stream_speedup(uint32_t d, const Op& o) const { return info_[stage_of_[d]].stream_speedup[o.stream]; }

  void push(SimTime t, EvType type, uint32_t a, uint32_t b) { self().schedule(t, type, a, b); }

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
  static uint32_t lane(const Op& o) { return o.peer_device >= 0 ? o.tag : (o.pass == Pass::kForward ? 0u : 1u); }
  static uint64_t channel_key(DeviceId receiver, DeviceId sender, uint32_t lane) {
    return static_cast<uint64_t>(receiver) << 40 | static_cast<uint64_t>(sender) << 16 | (lane & 0xffffu);
  }

  /// Compute beside communication (compute_model.h): when a device's
  /// communication starts or stops while a compute op runs, the op's
  /// remaining work continues at the other rate. Its end moves; the event
  /// pushed for the old end is recognised as stale when it fires.
  void retime_compute(DeviceId d);
  /// A compute op that runs on the SMs (MXUs): every one but a host copy,
  /// which the DMA engines run beside them.
  static bool on_sms(const Op& o) { return o.kind == OpKind::kCompute && o.compute != ComputeKind::kHostCopy; }
  /// Whether an op-end event is one of a compute op whose end has moved
  /// since it was pushed; the op's current end leaves the running list.
  bool stale_compute_end(DeviceId d, OpId op);

  void start(uint32_t d, OpId op);

  void send(uint32_t d, OpId op, const Op& o);

  void transfer_end(uint32_t id);

  /// For the groups of `axes`: each one's dense index among those with a
  /// running device (-1 for none), and how many those are.
  const std::pair<std::vector<int32_t>, int64_t>& running_groups(uint8_t axes);

  /// The device that plays a transfer's receiving end: its peer, or under
  /// the symmetry reduction the canonical device of the peer's orbit, which
  /// receives an image of the transfer at the same time.
  DeviceId receiver_side(DeviceId dst) const {
    return symmetric_ ? static_cast<DeviceId>(sym_.group.canonical(mesh_, dst)) : dst;
  }

  /// EngineOptions::symmetry on a backend that can lay flows on a quotient
  /// network, every device running: the step's symmetry (sim/src/
  /// symmetry.h), with every traced device canonical; else the trivial group.
  void find_symmetry_if_asked(const ProgramSet& ps, const Topology& topo);

  SimTime route_latency(DeviceId a, DeviceId b);

  void launch(uint32_t any_member, OpId op);

  /// One flow per orbit of each phase's flows, moved to start at the
  /// canonical device. The group's own translations that the symmetry keeps
  /// (H_A: shifts along the group's axes) map a plan's flows onto each other
  /// (find_symmetry checked that they do) and move every device, so an
  /// orbit holds |H_A| flows of the plan, or a multiple of that where the
  /// plan repeats a flow (a two-member bidirectional ring): each flow
  /// moved to the canonical device is laid count / |H_A| times.
  std::vector<std::vector<FlowSpec>> orbit_flows(const CollectivePlan& plan, uint8_t axes) const;

  void start_phase(uint32_t id);

  /// Called by the backend when a flow has delivered its bytes (at now_).
  void flow_done(const DoneFlow& f);

  void phase_end(uint32_t id);

  void complete(uint32_t id);

  void end_op(uint32_t d, OpId op);

  void finish_result();

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

// The member functions, by what they do.
#include "engine_collectives.h"
#include "engine_ops.h"
#include "engine_result.h"
#include "engine_setup.h"
