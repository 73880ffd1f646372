#include "shardsim/sim/step_bound.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "shardsim/sim/collective.h"
#include "shardsim/sim/compute_model.h"

namespace shardsim {

struct OpLowerBounds::Impl {
  Impl(const Mesh& mesh, const Topology& topo, const ChipSpec& chip, const EngineOptions& opt)
      : mesh_(mesh), topo_(topo), chip_(chip), opt_(opt), load_(static_cast<size_t>(topo.num_links()), 0.0) {}

  double duration(const Program& p, OpId i, DeviceId standing) {
    const Op& o = p.op(i);
    switch (o.kind) {
      case OpKind::kCompute:
        return sped_up(op_compute_time(o, chip_, opt_.calibration).seconds(),
                       opt_.compute_speedup[static_cast<size_t>(o.compute)]);
      case OpKind::kRecv:
        return 0;
      case OpKind::kSend:
        return transfer(p, o, standing);
      case OpKind::kCollective:
        return collective(p, o, standing);
    }
    return 0;
  }

 private:
  static double sped_up(double t, double k) { return k == 1 ? t : t / k; }

  double stream_speedup(const Program& p, const Op& o) const {
    double k = 1;
    for (const auto& [name, f] : opt_.stream_speedup) {
      if (p.stream_names()[o.stream] == name) k *= f;
    }
    return k;
  }

  double transfer(const Program& p, const Op& o, DeviceId src) {
    const double k = stream_speedup(p, o);
    const auto bytes = static_cast<double>(o.comm_bytes.value());
    if (opt_.calibration != nullptr) {
      if (const auto fit = opt_.calibration->fit("send-recv", 2))
        return sped_up(fit->latency_s + bytes / fit->bytes_per_s, k);
    }
    const int64_t n = mesh_.size(o.peer_axis);
    const int64_t c = mesh_.coord(src, o.peer_axis);
    const int64_t nc = ((c + o.peer) % n + n) % n;
    const auto dst = static_cast<DeviceId>(static_cast<int64_t>(src) + (nc - c) * mesh_.stride(o.peer_axis));
    if (dst == src) return 0;
    links_.clear();
    frac_.clear();
    topo_.route_split(src, dst, links_, frac_);
    double rate = 0, latency = 0;
    for (size_t j = 0; j < links_.size(); ++j) {
      const double cap = topo_.link(links_[j]).bandwidth.value() / (frac_.empty() ? 1.0 : frac_[j]);
      rate = j == 0 ? cap : std::min(rate, cap);
    }
    // The engine adds each distinct link's latency of route(), whatever
    // route_split spreads the bytes over.
    links_.clear();
    topo_.route(src, dst, links_);
    for (LinkId l : links_) latency += topo_.link(l).latency.seconds();
    return (rate > 0 ? bytes / k / rate : 0) + sped_up(latency, k);
  }

  double collective(const Program& p, const Op& o, DeviceId standing) {
    const double k = stream_speedup(p, o);
    const auto key = std::make_tuple(standing, o.collective, o.comm_bytes.value(), o.axes, k);
    if (const auto it = collective_cache_.find(key); it != collective_cache_.end()) return it->second;
    members_.clear();
    mesh_.group_members(standing, o.axes, members_);
    double t = 0;
    const auto fit = opt_.calibration != nullptr ? opt_.calibration->fit(std::string(to_string(o.collective)),
                                                                         static_cast<int64_t>(members_.size()))
                                                 : std::nullopt;
    if (fit) {
      t = sped_up(fit->latency_s + static_cast<double>(o.comm_bytes.value()) / fit->bytes_per_s, k);
    } else {
      const CollectivePlan plan = plan_collective(o.collective, o.comm_bytes, members_, topo_, opt_.collective);
      for (const CollectivePhase& ph : plan.phases) t += phase(ph, k);
    }
    collective_cache_.emplace(key, t);
    return t;
  }

  /// The most bytes any link carries in the phase over its capacity, plus
  /// the phase latency.
  double phase(const CollectivePhase& ph, double k) {
    touched_.clear();
    for (const FlowSpec& f : ph.flows) {
      links_.clear();
      frac_.clear();
      topo_.route_split(f.src, f.dst, links_, frac_);
      for (size_t j = 0; j < links_.size(); ++j) {
        const LinkId l = links_[j];
        if (load_[l] == 0) touched_.push_back(l);
        load_[l] += f.bytes / k * (frac_.empty() ? 1.0 : frac_[j]);
      }
    }
    double t = 0;
    for (LinkId l : touched_) {
      t = std::max(t, load_[l] / topo_.link(l).bandwidth.value());
      load_[l] = 0;
    }
    // The engine rounds the latency to picoseconds the same way.
    const SimTime lat = ph.latency;
    return t + (k == 1 ? lat.seconds() : SimTime::from_ps(std::llround(static_cast<double>(lat.ps()) / k)).seconds());
  }

  const Mesh& mesh_;
  const Topology& topo_;
  const ChipSpec& chip_;
  const EngineOptions& opt_;
  std::vector<double> load_;
  std::vector<LinkId> touched_, links_;
  std::vector<double> frac_;
  std::vector<uint32_t> members_;
  std::map<std::tuple<DeviceId, CollectiveKind, int64_t, uint8_t, double>, double> collective_cache_;
};

OpLowerBounds::OpLowerBounds(const Mesh& mesh, const Topology& topo, const ChipSpec& chip, const EngineOptions& options)
    : impl_(std::make_unique<Impl>(mesh, topo, chip, options)) {}
OpLowerBounds::~OpLowerBounds() = default;
double OpLowerBounds::seconds(const Program& p, OpId op, DeviceId standing) {
  return impl_->duration(p, op, standing);
}

namespace {

class Bounder {
 public:
  Bounder(const ProgramSet& ps, const Mesh& mesh, const Topology& topo, const ChipSpec& chip, const EngineOptions& opt)
      : ps_(ps), mesh_(mesh), ops_(mesh, topo, chip, opt) {}

  double run() {
    const size_t stages = ps_.stages.size();
    offset_.assign(stages + 1, 0);
    for (size_t s = 0; s < stages; ++s) offset_[s + 1] = offset_[s] + ps_.stages[s].size();
    const size_t n = offset_[stages];
    pair_from_.assign(n, kNoPair);
    pair_channels();
    // Kahn's order over every stage's ops and the send -> receive pairs.
    std::vector<uint32_t> indeg(n, 0);
    for (size_t s = 0; s < stages; ++s) {
      const Program& p = ps_.stages[s];
      for (OpId i = 0; i < p.size(); ++i) indeg[offset_[s] + i] = static_cast<uint32_t>(p.deps(i).size());
    }
    std::vector<std::vector<size_t>> pair_succ(n);
    for (size_t v = 0; v < n; ++v) {
      if (pair_from_[v] != kNoPair) {
        ++indeg[v];
        pair_succ[pair_from_[v]].push_back(v);
      }
    }
    std::vector<double> ready(n, 0.0), end(n, 0.0);
    std::vector<size_t> queue;
    queue.reserve(n);
    for (size_t v = 0; v < n; ++v) {
      if (indeg[v] == 0) queue.push_back(v);
    }
    double last = 0;
    for (size_t head = 0; head < queue.size(); ++head) {
      const size_t v = queue[head];
      const auto s = static_cast<size_t>(std::upper_bound(offset_.begin(), offset_.end(), v) - offset_.begin() - 1);
      const auto op = static_cast<OpId>(v - offset_[s]);
      const Program& p = ps_.stages[s];
      end[v] = ready[v] + ops_.seconds(p, op, standing(s));
      last = std::max(last, end[v]);
      auto release = [&](size_t w, double t) {
        ready[w] = std::max(ready[w], t);
        if (--indeg[w] == 0) queue.push_back(w);
      };
      for (OpId succ : p.succs(op)) release(offset_[s] + succ, end[v]);
      // A paired receive ends no sooner than its send.
      for (size_t w : pair_succ[v]) release(w, end[v]);
    }
    // Every op is reached unless the pairs and the programs conflict (they
    // cannot in a run that ends); then the bound falls back to what it has.
    return last;
  }

 private:
  static constexpr size_t kNoPair = static_cast<size_t>(-1);

  /// The standing device of stage s: pipeline coordinate s, the others 0.
  DeviceId standing(size_t s) const {
    return static_cast<DeviceId>(static_cast<int64_t>(s) * mesh_.stride(MeshAxis::kPp));
  }

  /// Pairs the k-th receive from the neighbouring stage with the k-th send
  /// to it, per (sender stage, receiver stage, pass), where each side keeps
  /// to one stream (the engine then matches them in that order).
  void pair_channels() {
    struct Side {
      std::vector<size_t> ops;
      int stream = -1;
      bool one_stream = true;
    };
    std::map<std::tuple<size_t, size_t, int>, std::pair<Side, Side>> channels;
    const auto stages = static_cast<int64_t>(ps_.stages.size());
    for (size_t s = 0; s < ps_.stages.size(); ++s) {
      const Program& p = ps_.stages[s];
      for (OpId i = 0; i < p.size(); ++i) {
        const Op& o = p.op(i);
        if ((o.kind != OpKind::kSend && o.kind != OpKind::kRecv) || o.peer_axis != MeshAxis::kPp) continue;
        const auto peer = static_cast<size_t>(((static_cast<int64_t>(s) + o.peer) % stages + stages) % stages);
        const bool send = o.kind == OpKind::kSend;
        auto& ch = channels[{send ? s : peer, send ? peer : s, o.pass == Pass::kForward ? 0 : 1}];
        Side& side = send ? ch.first : ch.second;
        side.ops.push_back(offset_[s] + i);
        if (side.stream >= 0 && side.stream != o.stream) side.one_stream = false;
        side.stream = o.stream;
      }
    }
    for (auto& [key, ch] : channels) {
      auto& [sends, recvs] = ch;
      if (!sends.one_stream || !recvs.one_stream || sends.ops.size() != recvs.ops.size()) continue;
      for (size_t k = 0; k < sends.ops.size(); ++k) pair_from_[recvs.ops[k]] = sends.ops[k];
    }
  }

  const ProgramSet& ps_;
  const Mesh& mesh_;
  OpLowerBounds ops_;
  std::vector<size_t> offset_;
  std::vector<size_t> pair_from_;
};

}  // namespace

SimTime step_time_lower_bound(const ProgramSet& ps, const Mesh& mesh, const Topology& topo, const ChipSpec& chip,
                              const EngineOptions& options) {
  const double s = Bounder(ps, mesh, topo, chip, options).run();
  return SimTime::from_ps(static_cast<int64_t>(std::floor(s * (1 - 1e-9) * 1e12)));
}

}  // namespace shardsim
