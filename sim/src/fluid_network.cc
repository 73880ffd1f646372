#include "shardsim/sim/fluid_network.h"

#include <algorithm>
#include <cmath>
#include <queue>

#include "shardsim/core/error.h"

namespace shardsim {

FluidNetwork::FluidNetwork(const Topology& topo) : topo_(topo) {
  const size_t n = topo.num_links();
  link_flows_.resize(n);
  capacity_.resize(n);
  link_bytes_.assign(n, 0.0);
  link_mark_.assign(n, 0);
  cap_left_.assign(n, 0.0);
  unfixed_.assign(n, 0);
  unfixed_weight_.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i) capacity_[i] = topo.link(static_cast<LinkId>(i)).bandwidth.value();
}

FlowId FluidNetwork::add(DeviceId src, DeviceId dst, double bytes, uint32_t owner, SimTime now) {
  SHARDSIM_ASSERT(src != dst, "a flow needs two devices");
  FlowId id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
    flow_mark_.push_back(0);
  }
  Flow& f = flows_[id];
  f.remaining = bytes;
  f.bytes = bytes;
  f.rate = 0;
  f.last = now;
  f.start = now;
  f.owner = owner;
  f.src = src;
  f.dst = dst;
  f.active = true;
  f.route.clear();
  f.frac.clear();
  if (quotient_rep_ != nullptr) {
    SHARDSIM_ASSERT(!topo_.splits_flows(), "a quotient network of split flows");
    route_scratch_.clear();
    topo_.route(src, dst, route_scratch_);
    for (LinkId l : route_scratch_) {
      const LinkId r = (*quotient_rep_)[l];
      if (r == Topology::kUnboundLink) continue;
      const auto it = std::find(f.route.begin(), f.route.end(), r);
      if (it != f.route.end()) {
        f.frac[static_cast<size_t>(it - f.route.begin())] += (*quotient_weight_)[l];
      } else {
        f.route.push_back(r);
        f.frac.push_back((*quotient_weight_)[l]);
      }
    }
    SHARDSIM_ASSERT(!f.route.empty(), "a quotient route with no link that can bind");
    if (std::all_of(f.frac.begin(), f.frac.end(), [](double x) { return x == 1.0; })) f.frac.clear();
  } else if (topo_.splits_flows()) {
    topo_.route_split(src, dst, f.route, f.frac);
    if (std::all_of(f.frac.begin(), f.frac.end(), [](double x) { return x == 1.0; })) f.frac.clear();
  } else {
    topo_.route(src, dst, f.route);
  }
  for (LinkId l : f.route) {
    link_flows_[l].push_back(id);
    dirty_links_.push_back(l);
  }
  ++active_;
  return id;
}

void FluidNetwork::finish(FlowId id) {
  Flow& f = flows_[id];
  SHARDSIM_ASSERT(f.active, "finishing an inactive flow");
  for (size_t i = 0; i < f.route.size(); ++i) {
    const LinkId l = f.route[i];
    link_bytes_[l] += f.frac.empty() ? f.bytes : f.bytes * f.frac[i];
    auto& v = link_flows_[l];
    auto it = std::find(v.begin(), v.end(), id);
    *it = v.back();
    v.pop_back();
    dirty_links_.push_back(l);
  }
  f.active = false;
  ++f.version;
  free_.push_back(id);
  --active_;
}

void FluidNetwork::heap_push(ShareKey k) {
  heap_.push_back(k);
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
}

FluidNetwork::ShareKey FluidNetwork::heap_pop() {
  std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
  const ShareKey k = heap_.back();
  heap_.pop_back();
  return k;
}

void FluidNetwork::advance(Flow& fl, SimTime now) {
  const double dt = (now - fl.last).seconds();
  fl.remaining = std::max(0.0, fl.remaining - fl.rate * dt);
  fl.last = now;
}

void FluidNetwork::update(SimTime now, std::vector<Finish>& out) {
  if (dirty_links_.empty()) return;
  // 1. The connected component(s) of links and flows reachable from the
  //    changed links.
  comp_links_.clear();
  comp_flows_.clear();
  for (LinkId l : dirty_links_) {
    if (!link_mark_[l]) {
      link_mark_[l] = 1;
      comp_links_.push_back(l);
    }
  }
  dirty_links_.clear();
  for (size_t i = 0; i < comp_links_.size(); ++i) {
    for (FlowId f : link_flows_[comp_links_[i]]) {
      if (flow_mark_[f]) continue;
      flow_mark_[f] = 1;
      comp_flows_.push_back(f);
      for (LinkId l : flows_[f].route) {
        if (!link_mark_[l]) {
          link_mark_[l] = 1;
          comp_links_.push_back(l);
        }
      }
    }
  }
  // 2. Bring their progress up to now at the old rates.
  for (FlowId f : comp_flows_) advance(flows_[f], now);
  // 3. Progressive filling: repeatedly saturate the link with the smallest
  //    fair share, fixing the rate of every flow still unfixed on it.
  heap_.clear();
  //    Fixing a flow at the smallest share s takes s from each of its other
  //    links, whose share c/n was at least s, so their share (c-s)/(n-1) can
  //    only grow. Heap keys are therefore lower bounds: a popped link whose
  //    share has grown is pushed back with its current share (lazy update).
  //    With split flows n is the sum of the unfixed flows' fractions x on
  //    the link, fixing one takes x·s, and (c-x·s)/(n-x) >= s still holds.
  for (LinkId l : comp_links_) {
    cap_left_[l] = capacity_[l];
    unfixed_[l] = static_cast<uint32_t>(link_flows_[l].size());
    unfixed_weight_[l] = static_cast<double>(unfixed_[l]);
  }
  for (FlowId f : comp_flows_) {
    const Flow& fl = flows_[f];
    for (size_t i = 0; i < fl.frac.size(); ++i) unfixed_weight_[fl.route[i]] -= 1.0 - fl.frac[i];
  }
  for (LinkId l : comp_links_) {
    if (unfixed_[l] > 0) heap_push({cap_left_[l] / unfixed_weight_[l], l});
  }
  for (FlowId f : comp_flows_) flow_mark_[f] = 2;  // 2: unfixed, 0: fixed
  while (!heap_.empty()) {
    const ShareKey k = heap_pop();
    if (unfixed_[k.link] == 0) continue;
    const double share = std::max(0.0, cap_left_[k.link]) / unfixed_weight_[k.link];
    if (share > k.share * (1 + 1e-12)) {
      heap_push({share, k.link});
      continue;
    }
    for (FlowId f : link_flows_[k.link]) {
      if (flow_mark_[f] != 2) continue;
      flow_mark_[f] = 0;
      Flow& fl = flows_[f];
      fl.rate = share;
      if (fl.frac.empty()) {
        for (LinkId l : fl.route) {
          cap_left_[l] -= share;
          unfixed_weight_[l] -= 1.0;
          --unfixed_[l];
        }
      } else {
        for (size_t i = 0; i < fl.route.size(); ++i) {
          const LinkId l = fl.route[i];
          cap_left_[l] -= share * fl.frac[i];
          unfixed_weight_[l] -= fl.frac[i];
          --unfixed_[l];
        }
      }
    }
  }
#if SHARDSIM_EXPENSIVE_CHECKS
  // Capacity: the rates on a link never exceed its bandwidth.
  for (LinkId l : comp_links_) {
    double sum = 0;
    for (FlowId f : link_flows_[l]) {
      const Flow& fl = flows_[f];
      double x = 1.0;
      for (size_t i = 0; i < fl.frac.size(); ++i) {
        if (fl.route[i] == l) x = fl.frac[i];
      }
      sum += fl.rate * x;
    }
    SHARDSIM_ASSERT(sum <= capacity_[l] * (1 + 1e-9), "link utilisation above 1");
  }
#endif
  // 4. New finish times.
  for (FlowId f : comp_flows_) {
    Flow& fl = flows_[f];
    flow_mark_[f] = 0;
    SHARDSIM_ASSERT(fl.rate > 0, "a flow got no bandwidth");
    ++fl.version;
    out.push_back({f, fl.version, now + to_sim_time(fl.remaining / fl.rate)});
  }
  for (LinkId l : comp_links_) link_mark_[l] = 0;
}

}  // namespace shardsim
