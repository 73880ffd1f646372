// Flow-level network: flows share links by max-min fairness.
#pragma once

#include <cstdint>
#include <vector>

#include "shardsim/core/units.h"
#include "shardsim/topology/topology.h"

namespace shardsim {

using FlowId = uint32_t;

/// Active flows over a Topology's links. Rates follow max-min fairness
/// (progressive filling, Bertsekas & Gallager, "Data Networks", 6.5.2; a
/// flow split over several paths puts the fraction x_l of its rate r on
/// link l, and a link's constraint is sum of x_l·r <= bandwidth) and
/// are recomputed only for the connected component of flows and links that a
/// start or end touched, once per simulated instant (update()).
/// Invariant: after update(), the rates on every link sum to at most its
/// bandwidth.
class FluidNetwork {
 public:
  explicit FluidNetwork(const Topology& topo);

  /// Adds a flow at time `now` (routed by the topology); its rate is set by
  /// the next update(). A flow between a device and itself is not allowed.
  FlowId add(DeviceId src, DeviceId dst, double bytes, uint32_t owner, SimTime now);
  /// From now on, lay flows on a quotient network (the engine's symmetry
  /// reduction, sim/src/symmetry.h): each link of a route counts on
  /// `rep[l]` with weight `weight[l]` (a flow then stands for its images
  /// under a group, and a link for its orbit: the weight is how many group
  /// elements fix the link), merged where a route meets an orbit twice;
  /// links whose rep is Topology::kUnboundLink are left out. Both vectors
  /// must outlive the network.
  void use_quotient(const std::vector<LinkId>& rep, const std::vector<double>& weight) {
    quotient_rep_ = &rep;
    quotient_weight_ = &weight;
  }
  /// Removes a finished flow.
  void finish(FlowId f);

  struct Finish {
    FlowId flow;
    uint32_t version;
    SimTime at;
  };
  /// Recomputes the rates of changed components at `now` and appends the new
  /// finish time of every flow whose rate changed (older versions are stale).
  void update(SimTime now, std::vector<Finish>& out);
  bool dirty() const { return !dirty_links_.empty(); }

  uint32_t owner(FlowId f) const { return flows_[f].owner; }
  uint32_t version(FlowId f) const { return flows_[f].version; }
  DeviceId src(FlowId f) const { return flows_[f].src; }
  DeviceId dst(FlowId f) const { return flows_[f].dst; }
  SimTime start(FlowId f) const { return flows_[f].start; }
  double bytes(FlowId f) const { return flows_[f].bytes; }
  double rate(FlowId f) const { return flows_[f].rate; }
  /// Links crossed, each counted by its fraction of the flow's bytes (a
  /// flow split over equal-cost paths crosses more links, each with part).
  double hops(FlowId f) const {
    const Flow& fl = flows_[f];
    if (fl.frac.empty()) return static_cast<double>(fl.route.size());
    double h = 0;
    for (double x : fl.frac) h += x;
    return h;
  }
  /// Bytes carried by each link so far (for conservation checks).
  const std::vector<double>& link_bytes() const { return link_bytes_; }
  size_t active_flows() const { return active_; }

 private:
  struct Flow {
    double remaining = 0;
    double rate = 0;  // bytes per second
    double bytes = 0;
    SimTime last;  // when remaining was last brought up to date
    SimTime start;
    std::vector<LinkId> route;
    /// Per route link, the fraction of the flow it carries (Topology::
    /// route_split), or its weight on a quotient network (use_quotient);
    /// empty when every link carries the flow once.
    std::vector<double> frac;
    uint32_t owner = 0;
    uint32_t version = 0;
    DeviceId src = 0, dst = 0;
    bool active = false;
  };
  void advance(Flow& fl, SimTime now);
  /// A link's fair share when it was pushed (a lower bound of its share).
  struct ShareKey {
    double share;
    LinkId link;
    bool operator>(const ShareKey& o) const { return share != o.share ? share > o.share : link > o.link; }
  };
  void heap_push(ShareKey k);
  ShareKey heap_pop();
  std::vector<ShareKey> heap_;

  const Topology& topo_;
  const std::vector<LinkId>* quotient_rep_ = nullptr;  ///< use_quotient
  const std::vector<double>* quotient_weight_ = nullptr;
  std::vector<LinkId> route_scratch_;
  std::vector<Flow> flows_;
  std::vector<FlowId> free_;
  std::vector<std::vector<FlowId>> link_flows_;
  std::vector<double> capacity_;
  std::vector<double> link_bytes_;
  std::vector<LinkId> dirty_links_;
  std::vector<uint8_t> link_mark_;
  std::vector<uint8_t> flow_mark_;
  // Scratch for update().
  std::vector<LinkId> comp_links_;
  std::vector<FlowId> comp_flows_;
  std::vector<double> cap_left_;
  std::vector<uint32_t> unfixed_;       ///< per link: flows not yet fixed
  std::vector<double> unfixed_weight_;  ///< per link: their fractions' sum
  size_t active_ = 0;
};

}  // namespace shardsim
