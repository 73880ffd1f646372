// Queries on a lowered Program shared by the stack-mechanism tests
// (stack_test.cc, stack_precision_test.cc).
#pragma once

#include <cstdint>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "shardsim/app/step.h"
#include "shardsim/core/program.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::testing {

inline Program stage0(const Scenario& s) {
  return std::move(lower_training_step(s).stages[0]);
}

inline double step_time(const Scenario& s) {
  return run_training_step(s, {}).report.step_time_s;
}

/// Ids of the ops named `name` (all layers, microbatches and passes).
inline std::vector<OpId> named(const Program& p, std::string_view name) {
  std::vector<OpId> out;
  for (OpId i = 0; i < p.size(); ++i) {
    if (p.name(p.op(i)) == name) out.push_back(i);
  }
  return out;
}

/// Ids of the ops named `name` of one layer, microbatch and pass.
inline std::vector<OpId> named(const Program& p, std::string_view name, int32_t layer, int32_t mb, Pass pass) {
  std::vector<OpId> out;
  for (OpId i : named(p, name)) {
    const Op& o = p.op(i);
    if (o.layer == layer && o.microbatch == mb && o.pass == pass) out.push_back(i);
  }
  return out;
}

inline int64_t comm_bytes(const Program& p, const std::vector<OpId>& ids) {
  int64_t b = 0;
  for (OpId i : ids) b += p.op(i).comm_bytes.value();
  return b;
}

/// Every op `id` depends on, directly or through others.
inline std::set<OpId> ancestors(const Program& p, OpId id) {
  std::set<OpId> seen;
  std::vector<OpId> todo{id};
  while (!todo.empty()) {
    const OpId x = todo.back();
    todo.pop_back();
    for (OpId d : p.deps(x)) {
      if (seen.insert(d).second) todo.push_back(d);
    }
  }
  return seen;
}

/// The last compute-stream op of the backward pass.
inline OpId last_backward_compute(const Program& p) {
  OpId last = kNoOp;
  for (OpId i = 0; i < p.size(); ++i) {
    const Op& o = p.op(i);
    if (o.kind == OpKind::kCompute && o.stream == TrainStreams::kCompute && o.pass == Pass::kBackward) last = i;
  }
  return last;
}

}  // namespace shardsim::testing
