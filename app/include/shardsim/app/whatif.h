// What-if analysis: how much shorter would a step be if one part of it were
// k times faster? Each lever (a kind of compute, a communication stream, a
// kind of fabric link) is sped up alone by re-simulating the scenario with
// simulator.speedup set (workloads/scenario.h, Speedups), and the levers are
// ranked by the step time they save: the "what to optimise, what to buy"
// table of Daydream-style studies (Zhu et al., USENIX ATC 2020), here from
// full re-simulation, so overlap, contention and a new critical path are all
// accounted for. What `shardsim whatif` and `shardsim.whatif` call.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shardsim/core/step_report.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

struct WhatIfOptions {
  /// Levers and factors to try, each alone and all together. Empty: every
  /// lever of the step (levers_of), each alone at `factor`.
  std::vector<std::pair<std::string, double>> speedups;
  double factor = 2;
  int threads = 0;  ///< simulations at once (<= 0: every core)
};

struct WhatIfLever {
  std::string lever;  ///< "matmul", "stream:dp gather", "net:nic"; "together" for the combination
  double factor = 1;  ///< for "together", 0 (the levers' own factors apply)
  double step_time_s = 0;
  double gain_s = 0;  ///< base step time - this step time (negative: slower)
  /// The base step's critical-path time on the lever's ops, as a fraction of
  /// the step; speeding them up by k saves about share·(1 - 1/k) of the step
  /// when nothing else becomes critical and nothing contends. Empty for
  /// fabric levers (their time is inside every communication op) or when
  /// the path was not computed.
  std::optional<double> path_share;
};

struct WhatIfResult {
  std::string scenario;
  std::string config_hash;
  double base_step_time_s = 0;
  CriticalPathReport base_path;
  std::vector<WhatIfLever> levers;      ///< largest gain first (ties: lever name)
  std::optional<WhatIfLever> together;  ///< every WhatIfOptions::speedups lever at once
};

/// Every lever a step of `s` has: the compute kinds its programs run, its
/// communication streams that carry collectives or transfers ("stream:NAME"),
/// and the kinds of link of its fabric ("net:nvlink", ...), in that order.
std::vector<std::string> levers_of(const Scenario& s);

/// Simulates `s` as it is and once per lever. Throws InputError on a bad
/// lever or factor (named at /simulator/speedup/LEVER).
WhatIfResult what_if(const Scenario& s, const WhatIfOptions& options);

/// The table `shardsim whatif` prints.
std::string whatif_text(const WhatIfResult& r);
/// The same as JSON: base step time, the base critical path's categories,
/// and the levers with their step times, gains and path shares.
std::string whatif_json(const WhatIfResult& r);

}  // namespace shardsim
