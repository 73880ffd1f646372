// The plan search's second bound (docs/search.md): a lower bound on a plan's
// step from its layers' own work and communication, without lowering the
// plan. One lowering of the whole model on one pipeline stage for one
// microbatch, shared by every plan with the same layer shapes (tp, cp,
// microbatch, recomputation, ep and everything the search does not change),
// gives each layer's forward and backward span on the compute stream: its
// compute ops at their roofline times and the stalls its own tensor-,
// context- and expert-parallel communication forces between them, timed on
// the candidate's mesh (sim/step_bound.h's op durations). The chunks of the
// plan's pipeline then add up to it (workloads/pipeline_bound.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "shardsim/core/program.h"
#include "shardsim/topology/topology.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

class LayerBound {
 public:
  /// The model, cluster and fixed plan fields come from `base`.
  explicit LayerBound(const Scenario& base);
  ~LayerBound();
  LayerBound(const LayerBound&) = delete;
  LayerBound& operator=(const LayerBound&) = delete;

  /// No simulated step of `plan` on `devices` devices ends sooner; nullopt
  /// where the bound does not apply (a plan the one-stage lowering cannot
  /// stand for). Not thread-safe: one per thread.
  std::optional<double> operator()(const Plan& plan, int64_t devices);

 private:
  const Scenario& base_;
  /// One-stage, one-microbatch programs by their plan's JSON (nullptr:
  /// that plan cannot be lowered).
  std::map<std::string, std::shared_ptr<const ProgramSet>> programs_;
  std::map<int64_t, std::unique_ptr<Topology>> topologies_;  ///< by device count
};

}  // namespace shardsim
