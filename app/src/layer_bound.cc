#include "shardsim/app/layer_bound.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "shardsim/app/step.h"
#include "shardsim/core/error.h"
#include "shardsim/sim/step_bound.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/pipeline_bound.h"

namespace shardsim {
namespace {

/// The plan whose one-stage program stands for `p`'s layers: one pipeline
/// stage and one microbatch; data parallelism only as wide as expert
/// parallelism needs (its data-parallel part under a folded layout), without ZeRO (its gathers and reductions are not
/// the layers' own and are left out of the bound); the rest as `p`.
Plan one_stage(const Plan& p) {
  Plan q = p;
  q.pp = 1;
  q.virtual_stages = 1;
  q.schedule = PipelineSchedule::kOneFOneB;
  q.layers_per_stage.clear();
  q.dp = p.ep / expert_fold(p);  // an expert group's data-parallel positions
  q.zero = 0;
  q.fsdp_shard_size = 0;
  q.global_batch = q.dp * p.microbatch_size;
  return q;
}

/// A layer's spans on the compute stream, seconds.
struct Spans {
  double fwd = 0;          ///< forward: first compute op's start to last compute op's end
  double bwd = 0;          ///< backward with its recomputation, the same way
  double bwd_to_grad = 0;  ///< backward: to the end of the op the next unit's backward starts from
};

bool backward_pass(Pass p) {
  return p == Pass::kBackward || p == Pass::kRecompute;
}

/// Each layer's spans and the head's and embedding's compute, from the
/// one-stage program, with ops timed by `time` (seconds of op i). A pass of
/// a layer is scheduled as soon as its ops allow, the edges from ops outside
/// it dropped: its compute ops run one after another (the stream's order),
/// and its own communication between them only adds.
class Profile {
 public:
  template <class Time>
  Profile(const Program& p, int64_t layers, Time&& time) : layers_(static_cast<size_t>(layers)) {
    const size_t n = p.size();
    std::vector<double> start(n, 0.0), end(n, 0.0);
    for (OpId i = 0; i < n; ++i) {
      const Op& o = p.op(i);
      if (o.pass == Pass::kOptimizer) continue;
      const bool back = backward_pass(o.pass);
      if (o.layer < 0) {
        if (o.kind == OpKind::kCompute) {
          const double t = time(i);
          (o.compute == ComputeKind::kEmbedding ? (back ? embed_bwd : embed_fwd) : (back ? head_bwd : head_fwd)) += t;
        }
        continue;
      }
      // Ready when the same layer's same pass's dependencies have ended.
      double ready = 0;
      for (OpId d : p.deps(i)) {
        const Op& x = p.op(d);
        if (x.layer == o.layer && backward_pass(x.pass) == back && x.pass != Pass::kOptimizer) {
          ready = std::max(ready, end[d]);
        }
      }
      start[i] = ready;
      end[i] = ready + time(i);
      if (o.kind != OpKind::kCompute) continue;
      Window& w = window(static_cast<size_t>(o.layer), back);
      w.first = std::min(w.first, start[i]);
      w.last = std::max(w.last, end[i]);
    }
    // The op each layer L's backward hands on: what the first backward op
    // of the unit below it (layer L-1, or the embedding for L = 0) depends on.
    std::vector<double> grad_end(layers_, -1.0);
    std::vector<uint8_t> seen(layers_, 0);  // per layer L: the unit below's first backward op met
    for (OpId i = 0; i < n; ++i) {
      const Op& o = p.op(i);
      if (!backward_pass(o.pass)) continue;
      const bool embedding = o.layer < 0 && o.kind == OpKind::kCompute && o.compute == ComputeKind::kEmbedding;
      if (o.layer < 0 && !embedding) continue;
      const size_t above = embedding ? 0 : static_cast<size_t>(o.layer) + 1;  // L, for this op's unit below it
      if (above >= layers_ || seen[above]) continue;
      seen[above] = 1;
      for (OpId d : p.deps(i)) {
        if (p.op(d).layer == static_cast<int32_t>(above) && backward_pass(p.op(d).pass)) {
          grad_end[above] = std::max(grad_end[above], end[d]);
        }
      }
    }
    spans_.resize(layers_);
    for (size_t l = 0; l < layers_; ++l) {
      const Window& f = fwd_[l];
      const Window& b = bwd_[l];
      spans_[l].fwd = f.last > f.first ? f.last - f.first : 0;
      spans_[l].bwd = b.last > b.first ? b.last - b.first : 0;
      // Not found: the next unit starts from no op of this layer (nothing
      // to count); the gradient's op can be no later than the backward's end.
      spans_[l].bwd_to_grad = grad_end[l] > b.first ? std::min(grad_end[l], b.last) - b.first : 0;
    }
  }

  const Spans& layer(int64_t l) const { return spans_[static_cast<size_t>(l)]; }
  double embed_fwd = 0, embed_bwd = 0, head_fwd = 0, head_bwd = 0;

 private:
  struct Window {
    double first = std::numeric_limits<double>::infinity();
    double last = 0;
  };
  Window& window(size_t layer, bool back) { return (back ? bwd_ : fwd_)[layer]; }
  size_t layers_;
  std::vector<Window> fwd_ = std::vector<Window>(layers_), bwd_ = std::vector<Window>(layers_);
  std::vector<Spans> spans_;
};

}  // namespace

LayerBound::LayerBound(const Scenario& base) : base_(base) {}
LayerBound::~LayerBound() = default;

std::optional<double> LayerBound::operator()(const Plan& plan, int64_t devices) {
  // Policies that recompute some layers only (by position in a chunk) have
  // spans that one stage cannot stand for.
  if (plan.recompute_layers > 0 || plan.recompute_every > 0) return std::nullopt;
  const Plan q = one_stage(plan);
  auto [it, fresh] = programs_.try_emplace(plan_json(q));
  if (fresh) {
    Scenario mini = base_;
    mini.plan = q;
    mini.cluster.devices = q.devices();
    try {
      it->second = std::make_shared<const ProgramSet>(lower_training_step(mini));
    } catch (const InputError&) {
      it->second = nullptr;
    }
  }
  if (it->second == nullptr) return std::nullopt;
  const Program& program = it->second->stages.front();

  // The candidate's own mesh and fabric time the communication: each op at
  // the least over the pipeline stages' standing devices (every stage runs
  // the layers of its chunks).
  Scenario s = base_;
  s.plan = plan;
  s.cluster.devices = devices;
  auto [t, built] = topologies_.try_emplace(devices);
  if (built) t->second = build_topology(s.cluster);
  const Mesh mesh = build_mesh(plan);
  const EngineOptions opt = step_engine_options(s, {}, false);
  OpLowerBounds ops(mesh, *t->second, s.cluster.chip, opt);
  auto time = [&](OpId i) {
    if (program.op(i).kind == OpKind::kCompute) return ops.seconds(program, i, 0);
    double least = std::numeric_limits<double>::infinity();
    for (int64_t st = 0; st < plan.pp; ++st) {
      least = std::min(least, ops.seconds(program, i, static_cast<DeviceId>(st * mesh.stride(MeshAxis::kPp))));
    }
    return least;
  };
  const Profile prof(program, s.model.layers, time);

  const ChunkLayout layout = chunk_layout(s.model, plan);
  const int64_t chunks = plan.chunks();
  std::vector<std::vector<ChunkWork>> work(static_cast<size_t>(plan.pp),
                                           std::vector<ChunkWork>(static_cast<size_t>(plan.virtual_stages)));
  for (int64_t g = 0; g < chunks; ++g) {
    ChunkWork& w = work[static_cast<size_t>(g % plan.pp)][static_cast<size_t>(g / plan.pp)];
    const int64_t first = layout.first[static_cast<size_t>(g)];
    const int64_t count = layout.count[static_cast<size_t>(g)];
    const bool head = g == chunks - 1;
    for (int64_t l = first; l < first + count; ++l) {
      w.fwd += prof.layer(l).fwd;
      w.bwd += prof.layer(l).bwd;
    }
    if (g == 0) {
      w.fwd += prof.embed_fwd;
      w.bwd += prof.embed_bwd;
    }
    if (head) {
      w.fwd += prof.head_fwd;
      w.bwd += prof.head_bwd;
    }
    w.fwd_send = w.fwd;
    // Backward: the head first, then the layers from the last; the send
    // waits for the first layer's input gradient (chunk 0 sends nothing).
    w.bwd_send = w.bwd;
    if (g > 0 && count > 0) w.bwd_send = w.bwd - prof.layer(first).bwd + prof.layer(first).bwd_to_grad;
  }
  return pipeline_lower_bound(plan, work);
}

}  // namespace shardsim
