// The SimGrid backend (see simgrid_engine.h). What SimGrid 3.32 needs, as
// measured in shared/reference/simgrid-3.32-notes.md:
//  - One SimGrid host per device and one SHARED (one-way) SimGrid link per
//    topology link, in a zone whose routes are the topology's own, asked on
//    demand (TopologyZone), so both backends send every flow over the same
//    links and differ only in how bandwidth is shared.
//  - Comms are created only when a flow starts (3.32 scans its list of live
//    activities at every completion, so building the DAG up front is
//    quadratic); engine events become SimGrid timers, so SimGrid's clock
//    drives the step.
//  - CM02 with cross-traffic off, TCP-gamma off and zero link latencies (the
//    engine adds latencies itself, as the native backend does) makes a lone
//    transfer take exactly size / bandwidth and sharing plain max-min
//    (zero-latency flows all get sharing penalty 1).
//  - Comm references are held until completion and dropped only after the
//    completion callback returns (SimGrid still uses the comm then).
#include "shardsim/sim/simgrid_engine.h"

#include <xbt/log.h>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../src/engine_core.h"

namespace shardsim {
namespace {

namespace sg4 = simgrid::s4u;
namespace sgr = simgrid::kernel::routing;

/// A SimGrid zone whose hosts are the topology's devices (host i is device i)
/// and whose routes are the topology's routes, computed when SimGrid asks.
class TopologyZone : public sgr::NetZoneImpl {
 public:
  TopologyZone(const Topology& topo, bool with_latency)
      : NetZoneImpl("shardsim"), topo_(topo), with_latency_(with_latency) {}

  /// Creates the hosts and links; call once, before seal().
  std::vector<sg4::Host*> populate() {
    std::vector<sg4::Host*> hosts;
    hosts.reserve(static_cast<size_t>(topo_.num_devices()));
    for (int64_t d = 0; d < topo_.num_devices(); ++d) {
      hosts.push_back(get_iface()->create_host("d" + std::to_string(d), 1e12)->seal());
      SHARDSIM_ASSERT(hosts.back()->get_netpoint()->id() == static_cast<unsigned long>(d),
                      "SimGrid host ids follow device ids");
    }
    links_.reserve(topo_.num_links());
    for (LinkId l = 0; l < topo_.num_links(); ++l) {
      const LinkSpec& spec = topo_.link(l);
      sg4::Link* link = get_iface()->create_link("l" + std::to_string(l), spec.bandwidth.value());
      link->set_sharing_policy(sg4::Link::SharingPolicy::SHARED);
      link->set_latency(with_latency_ ? spec.latency.seconds() : 0.0);
      links_.push_back(link->seal());
    }
    return hosts;
  }

  void get_local_route(const sgr::NetPoint* src, const sgr::NetPoint* dst, sgr::Route* into, double* latency) override {
    route_.clear();
    topo_.route(static_cast<DeviceId>(src->id()), static_cast<DeviceId>(dst->id()), route_);
    in_route_.clear();
    for (LinkId l : route_) {
      in_route_.emplace_back(links_[l]);
      if (latency != nullptr && with_latency_) *latency += topo_.link(l).latency.seconds();
    }
    const auto impls = get_link_list_impl(in_route_, false);
    into->link_list_.insert(into->link_list_.end(), impls.begin(), impls.end());
  }

 private:
  const Topology& topo_;
  bool with_latency_;
  std::vector<sg4::Link*> links_;
  std::vector<LinkId> route_;
  std::vector<sg4::LinkInRoute> in_route_;
};

SimTime from_simgrid_clock(double seconds) {
  return SimTime::from_ps(std::llround(seconds * 1e12));
}

class SimgridEngine : public detail::EngineCore<SimgridEngine> {
 public:
  SimgridEngine(const ProgramSet& ps, const Mesh& mesh, const Topology& topo, const ChipSpec& chip,
                const EngineOptions& opt, const SimgridOptions& sg)
      : EngineCore(ps, mesh, topo, chip, opt), topo_(topo), lv08_(sg.lv08), link_bytes_(topo.num_links(), 0.0) {}
  /// SimGrid routes a flow over its own platform's links, each once: it
  /// cannot lay a flow on a quotient network, so every device runs here
  /// (or replica 0, with the replica shortcut).
  static constexpr bool kWeighsLinks = false;

  EngineResult run() {
    // Before the Engine: keeps SimGrid's configuration chatter off stderr.
    xbt_log_control_set("root.thresh:critical");
    sg4::Engine engine("shardsim");
    if (lv08_) {
      sg4::Engine::set_config("network/model:LV08");
    } else {
      sg4::Engine::set_config("network/model:CM02");
      sg4::Engine::set_config("network/crosstraffic", false);
      sg4::Engine::set_config("network/TCP-gamma", 1e18);
    }
    auto* zone = new TopologyZone(topo_, lv08_);  // owned by SimGrid's engine from here on
    hosts_ = zone->populate();
    zone->get_iface()->seal();
    engine.seal_platform();

    sg4::Activity::on_completion_cb([this](const sg4::Activity& a) { on_comm_done(a); });
    sg4::Engine::on_time_advance_cb([this](double) { graveyard_.clear(); });

    start_all();
    engine.run();
    graveyard_.clear();
    return take_result();
  }

  void schedule(SimTime t, detail::EvType type, uint32_t a, uint32_t b) {
    const detail::Event e{a, b, type};
    // A flow's end is SimGrid's clock rounded to a picosecond, which can lie
    // just below the clock: never ask SimGrid for a date in its past.
    const double date = std::max(static_cast<double>(t.ps()) * 1e-12, sg4::Engine::get_clock());
    simgrid::kernel::timer::Timer::set(date, [this, t, e] {
      now_ = t;
      handle(e);
    });
  }

  void add_flow(DeviceId src, DeviceId dst, double bytes, uint32_t owner) {
    uint32_t id;
    if (free_.empty()) {
      id = static_cast<uint32_t>(flows_.size());
      flows_.emplace_back();
    } else {
      id = free_.back();
      free_.pop_back();
    }
    Flow& f = flows_[id];
    f.done = DoneFlow{owner, src, dst, bytes, now_, 0};
    f.comm = sg4::Comm::sendto_async(hosts_[src], hosts_[dst], static_cast<uint64_t>(std::llround(bytes)));
    // SimGrid's per-activity slot is a void*: the flow's index travels in it.
    f.comm->set_data(reinterpret_cast<void*>(static_cast<uintptr_t>(id) + 1));  // NOLINT(performance-no-int-to-ptr)
    ++active_;
  }

  void flow_event(uint32_t, uint32_t) { SHARDSIM_ASSERT(false, "the SimGrid backend schedules no flow events"); }
  size_t active_flows() const { return active_; }
  const std::vector<double>& link_bytes() const { return link_bytes_; }

 private:
  struct Flow {
    sg4::CommPtr comm;
    DoneFlow done;
  };

  void on_comm_done(const sg4::Activity& a) {
    const auto tag = reinterpret_cast<uintptr_t>(a.get_data<void>());
    if (tag == 0) return;  // not one of ours
    ++result_.events;
    const auto id = static_cast<uint32_t>(tag - 1);
    Flow& f = flows_[id];
    // SimGrid still uses the comm after this callback: keep it alive until
    // the clock moves.
    graveyard_.push_back(std::move(f.comm));
    const DoneFlow done = f.done;
    free_.push_back(id);
    --active_;
    const SimTime t = from_simgrid_clock(sg4::Engine::get_clock());
    if (t > now_) now_ = t;
    route_.clear();
    topo_.route(done.src, done.dst, route_);
    for (LinkId l : route_) link_bytes_[l] += done.bytes;
    DoneFlow reported = done;
    reported.hops = static_cast<double>(route_.size());
    flow_done(reported);
  }

  const Topology& topo_;
  bool lv08_;
  std::vector<sg4::Host*> hosts_;
  std::vector<Flow> flows_;
  std::vector<uint32_t> free_;
  std::vector<sg4::CommPtr> graveyard_;
  std::vector<double> link_bytes_;
  std::vector<LinkId> route_;
  size_t active_ = 0;
};

}  // namespace

EngineResult simulate_simgrid(const ProgramSet& programs, const Mesh& mesh, const Topology& topo, const ChipSpec& chip,
                              const EngineOptions& options, const SimgridOptions& simgrid) {
  static std::atomic<bool> used{false};
  if (used.exchange(true)) throw std::logic_error("SimGrid can simulate only once per process");
  return SimgridEngine(programs, mesh, topo, chip, options, simgrid).run();
}

}  // namespace shardsim
