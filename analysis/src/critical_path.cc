// The critical path over the graph of what happened (critical_path.h).
//
// Vertices: every span of the timeline, plus one per collective run (the
// op on one group). Edges, each meaning "could not start before this ended":
// a program's dependencies (data and stream order) on one device; each
// member's arrival at a collective to the collective's run, whose end is
// the end every member's successors wait for; a send's transfer to the
// receive it was matched with (per channel in order, as the engine pairs
// them: the k-th transfer to arrive with the k-th receive posted).
//
// A vertex is ready when its last predecessor ended; its weight is end -
// ready (a compute op's run, a collective from its last arrival, a transfer;
// zero for an arrival and for a receive that only waited). The longest path
// to a vertex then ends exactly when the vertex ended, so the path that
// follows, from the last op back, each vertex's latest-ending predecessor
// is the critical path and its length the step time (the critical path of
// a trace as Meta's Holistic Trace Analysis defines it, over the whole
// dependency graph). Slack is the standard critical-path method's: how much
// later a vertex could end, the others' weights fixed, before the step does
// (Kelley and Walker 1959): length - ready - the longest path from the
// vertex to the end, over a topological order (Boost.Graph's).
#include "shardsim/analysis/critical_path.h"

#include <algorithm>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/topological_sort.hpp>
#include <iterator>
#include <map>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace shardsim {
namespace {

/// Compressed rows: 8 bytes a vertex and 8 an edge, for steps of millions
/// of op instances.
using Graph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, boost::no_property,
                                                 boost::no_property, uint32_t, uint32_t>;
constexpr size_t kNone = static_cast<size_t>(-1);

/// The device `delta` steps along `axis` from `d`, wrapping (the engine's
/// peer of a send or receive).
uint32_t peer_of(const Mesh& mesh, uint32_t d, MeshAxis axis, int delta) {
  const int64_t n = mesh.size(axis);
  const int64_t c = mesh.coord(d, axis);
  const int64_t nc = ((c + delta) % n + n) % n;
  return static_cast<uint32_t>(static_cast<int64_t>(d) + (nc - c) * mesh.stride(axis));
}

/// A send's or receive's peer (named outright in per-rank programs).
uint32_t peer_of(const Mesh& mesh, uint32_t d, const Op& o) {
  return o.peer_device >= 0 ? static_cast<uint32_t>(o.peer_device) : peer_of(mesh, d, o.peer_axis, o.peer);
}

/// Its channel's lane, as the engine pairs them: the tag (per rank), or
/// forward or not.
uint32_t lane_of(const Op& o) {
  return o.peer_device >= 0 ? o.tag : (o.pass == Pass::kForward ? 0u : 1u);
}

class PathBuilder {
 public:
  PathBuilder(const ProgramSet& ps, const Mesh& mesh, const Timeline& tl, TimelineClock clock, const MeshSymmetry& sym)
      : ps_(ps), mesh_(mesh), tl_(tl), clock_(clock), sym_(sym) {}

  CriticalPath run() {
    index_spans();
    add_vertices();
    add_edges();
    return solve();
  }

 private:
  const Program& program_of(const TimelineSpan& s) const {
    if (s.program >= ps_.stages.size() || s.op >= ps_.stages[s.program].size()) {
      throw std::logic_error("a timeline span names an op no program has");
    }
    return ps_.stages[s.program];
  }

  /// The span of op `op` on device `d`, or kNone.
  size_t span_of(uint32_t d, OpId op) const {
    if (d >= by_device_.size() || op >= by_device_[d].size()) return kNone;
    return by_device_[d][op] == kNoSpan ? kNone : by_device_[d][op];
  }

  void index_spans() {
    if (tl_.spans.size() >= kNoSpan) throw std::logic_error("a timeline of more than 2^32 spans");
    for (size_t i = 0; i < tl_.spans.size(); ++i) {
      const TimelineSpan& s = tl_.spans[i];
      if (s.device >= by_device_.size()) by_device_.resize(s.device + 1);
      std::vector<uint32_t>& ops = by_device_[s.device];
      if (ops.empty()) ops.assign(program_of(s).size(), kNoSpan);
      if (ops[s.op] != kNoSpan) throw std::logic_error("an op has two spans on one device");
      ops[s.op] = static_cast<uint32_t>(i);
    }
  }

  void add_vertices() {
    const size_t spans = tl_.spans.size();
    // One run per (program, collective op, group): keyed by the op's first
    // run + the group's index.
    std::vector<std::vector<size_t>> first_run(ps_.stages.size());
    size_t runs = 0;
    // Per rank: one run per collective instance.
    CollectiveInstances instances;
    if (ps_.per_rank()) instances = match_collectives(ps_);
    for (size_t p = 0; p < ps_.stages.size() && !ps_.per_rank(); ++p) {
      const Program& prog = ps_.stages[p];
      first_run[p].assign(prog.size(), kNone);
      for (OpId op = 0; op < prog.size(); ++op) {
        const Op& o = prog.op(op);
        if (o.kind != OpKind::kCollective) continue;
        first_run[p][op] = runs;
        runs += static_cast<size_t>(mesh_.num_groups(o.axes));
      }
    }
    // Runs numbered densely as first met (the groups that ran: with the
    // replica shortcut, a few of num_groups).
    std::unordered_map<size_t, size_t> run_vertex;
    end_.assign(spans, SimTime());
    end_vertex_.resize(spans);
    for (size_t i = 0; i < spans; ++i) {
      const TimelineSpan& s = tl_.spans[i];
      end_[i] = s.end;
      end_vertex_[i] = i;
      const Op& o = program_of(s).op(s.op);
      if (o.kind != OpKind::kCollective) continue;
      // Every member's successors wait for the run's end; each member's own
      // vertex is its arrival (its span's start: a member that came early
      // waited for the last, and that wait is the last one's path, not the
      // collective's).
      end_[i] = s.start;
      const size_t key = ps_.per_rank()
                             ? static_cast<size_t>(instances.of[s.program][s.op])
                             : first_run[s.program][s.op] + static_cast<size_t>(mesh_.group_index(s.device, o.axes));
      const auto [it, fresh] = run_vertex.try_emplace(key, end_.size());
      if (fresh) end_.push_back(SimTime());
      end_vertex_[i] = it->second;
      end_[it->second] = std::max(end_[it->second], s.end);
    }
    ready_.assign(end_.size(), SimTime());
    pred_.assign(end_.size(), kNone);
  }

  void edge(size_t from, size_t to) {
    edges_.emplace_back(static_cast<uint32_t>(from), static_cast<uint32_t>(to));
    // Ready when the last predecessor ended; ties keep the first added.
    if (pred_[to] == kNone || end_[from] > ready_[to]) {
      ready_[to] = std::max(ready_[to], end_[from]);
      pred_[to] = from;
    }
  }

  void add_edges() {
    using Channel = std::tuple<uint32_t, uint32_t, uint32_t>;  // sender, receiver, lane
    std::map<Channel, std::pair<std::vector<size_t>, std::vector<size_t>>> channels;
    for (size_t i = 0; i < tl_.spans.size(); ++i) {
      const TimelineSpan& s = tl_.spans[i];
      const Program& p = program_of(s);
      for (OpId dep : p.deps(s.op)) {
        const size_t j = span_of(s.device, dep);
        if (j == kNone) throw std::logic_error("a timeline span's dependency has no span: record every device");
        edge(end_vertex_[j], i);
      }
      const Op& o = p.op(s.op);
      if (o.kind == OpKind::kCollective) edge(i, end_vertex_[i]);
      if (o.kind == OpKind::kSend) {
        channels[{s.device, peer_of(mesh_, s.device, o), lane_of(o)}].first.push_back(i);
      } else if (o.kind == OpKind::kRecv) {
        channels[{peer_of(mesh_, s.device, o), s.device, lane_of(o)}].second.push_back(i);
      }
    }
    const auto& spans = tl_.spans;
    // Under the engine's symmetry reduction only canonical devices run: a
    // receive from a sender that did not run has, by symmetry, the
    // transfers of the sender's canonical device to the receiver moved
    // alike (they start and end together): pair them.
    for (auto& [channel, ends] : channels) {
      auto& [sends, recvs] = ends;
      if (!sends.empty() || recvs.empty()) continue;
      const auto [sender, receiver, lane] = channel;
      const auto canonical = static_cast<uint32_t>(sym_.canonical(mesh_, sender));
      if (canonical == sender) continue;
      const auto mirror =
          channels.find({canonical, static_cast<uint32_t>(mesh_.translate(receiver, sender, canonical)), lane});
      if (mirror == channels.end() || !mirror->second.second.empty()) continue;
      sends = std::move(mirror->second.first);
      mirror->second.first.clear();
    }
    for (auto& [channel, ends] : channels) {
      auto& [sends, recvs] = ends;
      if (sends.empty() || recvs.empty()) continue;  // a sender or receiver the timeline lacks
      std::sort(sends.begin(), sends.end(), [&](size_t a, size_t b) {
        return std::tie(spans[a].end, spans[a].start, spans[a].op) <
               std::tie(spans[b].end, spans[b].start, spans[b].op);
      });
      std::sort(recvs.begin(), recvs.end(), [&](size_t a, size_t b) {
        return std::tie(spans[a].start, spans[a].op) < std::tie(spans[b].start, spans[b].op);
      });
      if (sends.size() != recvs.size()) throw std::logic_error("a channel's sends and receives do not pair up");
      for (size_t k = 0; k < sends.size(); ++k) edge(sends[k], recvs[k]);
    }
  }

  CriticalPath solve() {
    CriticalPath out;
    const size_t n = end_.size();
    std::vector<SimTime> weight(n);
    for (size_t v = 0; v < n; ++v) {
      if (end_[v] >= ready_[v]) {
        weight[v] = end_[v] - ready_[v];
      } else if (clock_ == TimelineClock::kSimulated) {
        throw std::logic_error("an op ended before its dependencies did");
      }
    }
    // The path ends at the vertex that ended last (ties: the first).
    size_t last = kNone;
    for (size_t v = 0; v < n; ++v) {
      if (last == kNone || end_[v] > end_[last]) last = v;
    }
    if (last == kNone) return out;
    out.length = end_[last];
    // Each op accounts for the stretch from its latest predecessor's end to
    // its own; `cursor` is where the op after it (in time) began. On one
    // clock every predecessor ends exactly there; measured clocks may put
    // it later, and the stretch is cut at the cursor so that the path's ops
    // still tile [0, length].
    SimTime cursor = out.length;
    for (size_t v = last; v != kNone; v = pred_[v]) {
      const SimTime end = std::min(end_[v], cursor);
      const SimTime start = std::min(ready_[v], end);
      cursor = start;
      if (start == end) continue;
      // A run is shown on the member whose arrival started it (its
      // predecessors are the members' arrivals).
      const TimelineSpan& s = tl_.spans[v < tl_.spans.size() ? v : pred_[v]];
      out.ops.push_back(PathOp{s.device, s.program, s.op, start, end});
    }
    std::reverse(out.ops.begin(), out.ops.end());
    // Longest path from each vertex to the end, over a topological order
    // (boost::topological_sort lists vertices sinks first; it throws
    // boost::not_a_dag on a cycle).
    if (n >= kNoSpan) throw std::logic_error("a step graph of more than 2^32 vertices");
    const Graph g(boost::edges_are_unsorted_multi_pass, edges_.begin(), edges_.end(), n);
    edges_ = {};
    std::vector<uint32_t> order;
    order.reserve(n);
    try {
      boost::topological_sort(g, std::back_inserter(order));
    } catch (const boost::not_a_dag&) {
      throw std::logic_error("the step's dependency graph has a cycle");
    }
    std::vector<SimTime> tail(n);
    for (uint32_t v : order) {
      SimTime longest;
      for (auto [e, e_end] = boost::out_edges(v, g); e != e_end; ++e) {
        longest = std::max(longest, tail[boost::target(*e, g)]);
      }
      tail[v] = weight[v] + longest;
    }
    out.slack.resize(tl_.spans.size());
    // (Never negative on one clock; measured clocks' skew is cut at zero.)
    for (size_t i = 0; i < tl_.spans.size(); ++i) {
      out.slack[i] = std::max(SimTime(), out.length - ready_[i] - tail[i]);
    }
    return out;
  }

  const ProgramSet& ps_;
  const Mesh& mesh_;
  const Timeline& tl_;
  TimelineClock clock_;
  MeshSymmetry sym_;
  static constexpr uint32_t kNoSpan = 0xffffffffu;
  std::vector<std::vector<uint32_t>> by_device_;  ///< device, op -> span
  std::vector<size_t> end_vertex_;                ///< per span: the vertex its successors wait for
  std::vector<SimTime> end_, ready_;
  std::vector<size_t> pred_;  ///< the predecessor that ended last
  std::vector<std::pair<uint32_t, uint32_t>> edges_;
};

}  // namespace

CriticalPath critical_path(const ProgramSet& programs, const Mesh& mesh, const Timeline& timeline, TimelineClock clock,
                           const MeshSymmetry* symmetry) {
  return PathBuilder(programs, mesh, timeline, clock, symmetry != nullptr ? *symmetry : MeshSymmetry::none(mesh)).run();
}

std::vector<TimelineSpan> path_spans(const ProgramSet& programs, const CriticalPath& path) {
  std::vector<TimelineSpan> out;
  out.reserve(path.ops.size());
  for (const PathOp& p : path.ops) {
    out.push_back({p.device, p.program, programs.stages.at(p.program).op(p.op).stream, p.op, p.start, p.end});
  }
  return out;
}

std::string path_category(const Program& program, OpId op) {
  const Op& o = program.op(op);
  switch (o.kind) {
    case OpKind::kCompute:
      // A host copy is its stream's (host d2h, host h2d), not the SMs'.
      if (o.compute == ComputeKind::kHostCopy) return program.stream_names()[o.stream] + ": host copy";
      return "compute: " + std::string(to_string(o.compute));
    case OpKind::kCollective:
      return program.stream_names()[o.stream] + ": " + std::string(to_string(o.collective));
    case OpKind::kSend:
    case OpKind::kRecv:
      break;
  }
  return program.stream_names()[o.stream] + ": transfer";
}

std::vector<std::pair<std::string, double>> path_time_by_category(const ProgramSet& programs,
                                                                  const CriticalPath& path) {
  std::map<std::string, SimTime> sums;
  for (const PathOp& p : path.ops) sums[path_category(programs.stages[p.program], p.op)] += p.end - p.start;
  std::vector<std::pair<std::string, double>> out;
  out.reserve(sums.size());
  for (const auto& [name, t] : sums) out.emplace_back(name, t.seconds());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

CriticalPathReport critical_path_report(const ProgramSet& programs, const CriticalPath& path, size_t top) {
  CriticalPathReport r;
  r.present = true;
  r.length_s = path.length.seconds();
  r.ops = static_cast<int64_t>(path.ops.size());
  r.by_category_s = path_time_by_category(programs, path);
  std::vector<uint32_t> devices;
  std::vector<CriticalPathReport::Segment> segments;
  for (const PathOp& p : path.ops) {
    devices.push_back(p.device);
    const Program& prog = programs.stages[p.program];
    const Op& o = prog.op(p.op);
    const bool sms = o.kind == OpKind::kCompute && o.compute != ComputeKind::kHostCopy;
    const std::string stream = sms ? "compute" : prog.stream_names()[o.stream];
    if (!segments.empty() && segments.back().device == p.device && segments.back().stream == stream) {
      CriticalPathReport::Segment& g = segments.back();
      g.last_op = prog.label(p.op);
      ++g.ops;
      g.end_s = p.end.seconds();
      continue;
    }
    segments.push_back({p.device, stream, prog.label(p.op), prog.label(p.op), 1, p.start.seconds(), p.end.seconds()});
  }
  std::sort(devices.begin(), devices.end());
  r.devices = std::unique(devices.begin(), devices.end()) - devices.begin();
  // The longest, shown in time order (ties: the earlier).
  std::vector<size_t> idx(segments.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return segments[a].end_s - segments[a].start_s > segments[b].end_s - segments[b].start_s;
  });
  idx.resize(std::min(idx.size(), top));
  std::sort(idx.begin(), idx.end());
  for (size_t i : idx) r.top_segments.push_back(segments[i]);
  return r;
}

}  // namespace shardsim
