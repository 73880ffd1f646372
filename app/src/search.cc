#include "shardsim/app/search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>

#include "shardsim/app/layer_bound.h"
#include "shardsim/app/step.h"
#include "shardsim/core/error.h"
#include "shardsim/core/parallel.h"
#include "shardsim/sim/compute_model.h"
#include "shardsim/sim/step_bound.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/memory.h"

namespace shardsim {
namespace {

constexpr size_t kWave = 4;  // plans simulated per wave (fixed: keeps results independent of jobs)

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double objective_of(SearchObjective o, const StepReport& r, int64_t devices) {
  switch (o) {
    case SearchObjective::kMfu:
      return -r.mfu;
    case SearchObjective::kCost:
      return r.step_time_s * static_cast<double>(devices);
    case SearchObjective::kStepTime:
      break;
  }
  return r.step_time_s;
}

/// The objective's best possible value for a plan whose step takes at least
/// `bound_s` (MFU is model FLOPs over time: bounded by the same time).
double objective_bound(SearchObjective o, double bound_s, double model_flops, const ChipSpec& chip, int64_t devices) {
  switch (o) {
    case SearchObjective::kMfu:
      return -(model_flops / (bound_s * static_cast<double>(devices) * chip.bf16_peak.value()));
    case SearchObjective::kCost:
      return bound_s * static_cast<double>(devices);
    case SearchObjective::kStepTime:
      break;
  }
  return bound_s;
}

/// Tier 3, from the plan's lowered programs: the larger of two lower
/// bounds on its simulated step. The busiest stage's compute ops at their
/// roofline durations, as the engine times them (a device's compute stream
/// runs one op at a time), and, on the native backend, the longest path
/// through one device per stage with every op at a time no run beats
/// (step_time_lower_bound: collectives and transfers at their links'
/// capacities, alone, the pipeline's sends and receives paired), which
/// adds the bubble and the communication no overlap hides. Safe to call
/// from several threads (each call builds its own fabric: a graph fabric
/// caches routes as it walks them).
double program_bound_s(const Scenario& base, const Plan& plan, int64_t devices) {
  Scenario s = base;
  s.plan = plan;
  s.cluster.devices = devices;
  const ProgramSet programs = lower_training_step(s);
  int64_t most = 0;
  for (const Program& p : programs.stages) {
    int64_t ps = 0;
    for (const Op& o : p.ops()) {
      // The engine's own time for the op alone (calibrated when a profile
      // is in use): compute beside communication only slows it.
      if (o.kind == OpKind::kCompute) ps += op_compute_time(o, s.cluster.chip, s.cluster.calibration.get()).ps();
    }
    most = std::max(most, ps);
  }
  double bound = SimTime::from_ps(most).seconds();
  if (s.simulator.backend == SimulatorSpec::Backend::kNative) {
    const auto topo = build_topology(s.cluster);
    const EngineOptions opt = step_engine_options(s, {}, false);
    bound = std::max(bound, step_time_lower_bound(programs, build_mesh(plan), *topo, s.cluster.chip, opt).seconds());
  }
  return bound;
}

/// Tier 2 for every candidate, on `jobs` threads (a LayerBound each, over
/// contiguous shares: the values do not depend on the split). Raises each
/// candidate's lower bound where it is larger.
void apply_layer_bounds(const Scenario& base, std::vector<PlanCandidate>& cands, int jobs) {
  // On the native backend only: its durations are the native network's.
  if (base.simulator.backend != SimulatorSpec::Backend::kNative) return;
  const auto threads = static_cast<size_t>(jobs > 0 ? jobs : default_jobs());
  const size_t share = (cands.size() + threads - 1) / std::max<size_t>(threads, 1);
  parallel_for(threads, static_cast<int>(threads), [&](size_t t) {
    LayerBound bound(base);
    for (size_t k = t * share; k < std::min(cands.size(), (t + 1) * share); ++k) {
      const std::optional<double> b = bound(cands[k].plan, cands[k].devices);
      if (b) cands[k].lower_bound_s = std::max(cands[k].lower_bound_s, *b);
    }
  });
}

StepReport simulate_plan(const Scenario& base, const Plan& plan, int64_t devices) {
  Scenario s = base;
  s.plan = plan;
  s.cluster.devices = devices;
  SimulateOptions opt;
  opt.critical_path = CriticalPathMode::kOff;
  return simulate_step(s, opt).report;  // on the scenario's backend
}

}  // namespace

SearchResult search_plans(const Scenario& base, const std::vector<int64_t>& device_counts,
                          const SearchOptions& options) {
  if (base.workload.present) {
    throw InputError(base.file, "/workload",
                     "a trace workload has no model or plan to search over: search needs a scenario with a model "
                     "and a plan (export the trace from one, or search that scenario)");
  }
  SearchResult result;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<PlanCandidate> cands = enumerate_plans(base, device_counts, result.counts);
  result.candidates = static_cast<int64_t>(cands.size());
  result.enumerate_wall_s = seconds_since(t0);
  const double model_flops = closed_form_model_flops(base.model, base.plan);
  auto bound_of = [&](const PlanCandidate& c) {
    return objective_bound(options.objective, c.lower_bound_s, model_flops, base.cluster.chip, c.devices);
  };

  // Tier 2 for every candidate.
  const auto tb = std::chrono::steady_clock::now();
  const std::vector<double> tier1 = [&] {
    std::vector<double> b(cands.size());
    for (size_t i = 0; i < cands.size(); ++i) b[i] = cands[i].lower_bound_s;
    return b;
  }();
  apply_layer_bounds(base, cands, options.jobs);
  std::vector<double> tier2(cands.size());
  for (size_t i = 0; i < cands.size(); ++i) tier2[i] = cands[i].lower_bound_s;
  result.bound_wall_s = seconds_since(tb);
  const auto t1 = std::chrono::steady_clock::now();

  const WaveRunner run_wave = options.wave_runner
                                  ? options.wave_runner
                                  : WaveRunner([&](size_t n, const std::function<StepReport(size_t)>& simulate,
                                                   std::vector<StepReport>& reports) {
                                      parallel_for(n, options.jobs, [&](size_t k) { reports[k] = simulate(k); });
                                    });
  double best = std::numeric_limits<double>::infinity();
  auto add_row = [&](const Plan& plan, int64_t devices, StepReport report, double lb, double est, bool own) {
    SearchRow row{plan, devices, std::move(report), lb, est, own, 0};
    row.objective = objective_of(options.objective, row.report, devices);
    best = std::min(best, row.objective);
    result.rows.push_back(std::move(row));
  };
  // A plan found unable to beat the best: counted by the tier that showed it.
  auto count_pruned = [&](size_t i) {
    PlanCandidate c = cands[i];
    c.lower_bound_s = tier1[i];
    if (bound_of(c) >= best) {
      ++result.pruned_by_bound;
      return;
    }
    c.lower_bound_s = tier2[i];
    ++(bound_of(c) >= best ? result.pruned_by_layers : result.pruned_by_program);
  };

  // The scenario's own plan first, when it is valid and fits: the search
  // then never returns anything worse than what the user started from.
  int64_t own_index = -1;
  if (!check_plan(base.plan, base.model, base.cluster) && training_memory(base).fits) {
    for (size_t i = 0; i < cands.size(); ++i) {
      if (cands[i].devices == base.cluster.devices && cands[i].plan == base.plan) {
        own_index = static_cast<int64_t>(i);
      }
    }
    if (options.max_simulations > 0) {
      std::vector<StepReport> own(1);
      run_wave(
          1, [&](size_t) { return simulate_plan(base, base.plan, base.cluster.devices); }, own);
      add_row(base.plan, base.cluster.devices, std::move(own[0]),
              own_index >= 0 ? cands[static_cast<size_t>(own_index)].lower_bound_s : step_time_lower_bound_s(base),
              step_time_estimate_s(base), true);
    }
  }

  // Simulation order: by bound (the objective's), ties by estimate, then by
  // enumeration order. A bound that cannot beat the best prunes every plan
  // after it too.
  std::vector<size_t> order;
  order.reserve(cands.size());
  for (size_t i = 0; i < cands.size(); ++i) {
    if (static_cast<int64_t>(i) != own_index) order.push_back(i);
  }
  auto est_obj = [&](const PlanCandidate& c) {
    return objective_bound(options.objective, c.estimate_s, model_flops, base.cluster.chip, c.devices);
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double x = bound_of(cands[a]), y = bound_of(cands[b]);
    if (x != y) return x < y;
    return est_obj(cands[a]) < est_obj(cands[b]);
  });

  // Tier 3 values, computed ahead in parallel batches (a pure function of
  // the plan: decisions below stay in order and do not depend on threads).
  std::vector<double> program(cands.size(), -1.0);
  const size_t batch = 4 * static_cast<size_t>(options.jobs > 0 ? options.jobs : default_jobs());
  auto program_bound_of = [&](size_t next) {
    const size_t i = order[next];
    if (program[i] >= 0) return program[i];
    std::vector<size_t> todo;
    for (size_t k = next; k < order.size() && todo.size() < batch; ++k) {
      const size_t j = order[k];
      if (program[j] >= 0) continue;
      if (bound_of(cands[j]) >= best) break;  // pruned before tier 3 matters
      todo.push_back(j);
    }
    parallel_for(todo.size(), options.jobs, [&](size_t k) {
      program[todo[k]] = program_bound_s(base, cands[todo[k]].plan, cands[todo[k]].devices);
    });
    return program[i];
  };

  size_t next = 0;
  bool proven = false;
  while (next < order.size()) {
    // The next wave: candidates whose bounds can still beat the best.
    std::vector<size_t> wave;
    while (next < order.size() && wave.size() < kWave) {
      const size_t i = order[next];
      PlanCandidate& c = cands[i];
      if (bound_of(c) >= best) {
        proven = true;  // and so is every plan after it
        break;
      }
      if (static_cast<int64_t>(result.rows.size() + wave.size()) >= options.max_simulations) break;
      c.lower_bound_s = std::max(c.lower_bound_s, program_bound_of(next));
      ++next;
      if (bound_of(c) >= best) {
        count_pruned(i);
        continue;
      }
      wave.push_back(i);
    }
    if (wave.empty()) break;
    std::vector<StepReport> reports(wave.size());
    run_wave(
        wave.size(), [&](size_t k) { return simulate_plan(base, cands[wave[k]].plan, cands[wave[k]].devices); },
        reports);
    for (size_t k = 0; k < wave.size(); ++k) {
      const PlanCandidate& c = cands[wave[k]];
      add_row(c.plan, c.devices, std::move(reports[k]), c.lower_bound_s, c.estimate_s, false);
    }
    if (options.progress) {
      options.progress(static_cast<int64_t>(result.rows.size()), options.max_simulations, seconds_since(t1));
    }
    if (proven) break;
  }
  // Whatever is left was pruned (its bound cannot beat the best) or left
  // by the budget.
  for (; next < order.size(); ++next) {
    const size_t i = order[next];
    if (bound_of(cands[i]) >= best) {
      count_pruned(i);
    } else {
      ++result.left_by_budget;
    }
  }
  result.simulate_wall_s = seconds_since(t1);
  // Best first; equal objectives keep simulation order (deterministic).
  std::stable_sort(result.rows.begin(), result.rows.end(),
                   [](const SearchRow& a, const SearchRow& b) { return a.objective < b.objective; });
  return result;
}

void forget_wall_times(SearchResult& r) {
  r.enumerate_wall_s = r.bound_wall_s = r.simulate_wall_s = 0;
}

}  // namespace shardsim

namespace shardsim {

ServingSearchResult search_serving_plans(const Scenario& base, const ServingLimits& limits, int jobs) {
  ServingSearchResult res;
  const int64_t n = base.cluster.devices;
  const int64_t tp_limit = base.cluster.fabric == FabricKind::kTorus ? 16 : base.cluster.fat_tree.gpus_per_node;
  std::vector<Plan> plans;
  for (int64_t tp = 1; tp <= tp_limit && n % tp == 0; tp *= 2) {
    for (int64_t pp = 1; pp <= 8 && (n / tp) % pp == 0 && pp <= base.model.layers; pp *= 2) {
      const int64_t dp = n / (tp * pp);
      for (int64_t ep = 1; ep <= dp; ep *= 2) {
        if (ep > 1 && (!base.model.is_moe() || base.model.moe.experts % ep != 0 || dp % ep != 0)) break;
        ++res.enumerated;
        Plan p = base.plan;
        p.tp = tp;
        p.pp = pp;
        p.dp = dp;
        p.ep = ep;
        p.global_batch = p.microbatch_size * dp;
        // A draft model must fit the layout too; speculation on a pipeline
        // is not modelled (the loader refuses it).
        const bool speculative = base.serving.speculative_tokens > 0;
        if (check_plan(p, base.model, base.cluster) ||
            (base.serving.prefill_replicas > 0 && base.serving.prefill_replicas >= dp / ep) ||
            (speculative && (pp > 1 || (base.serving.draft_model.layers > 0 &&
                                        check_plan(p, base.serving.draft_model, base.cluster))))) {
          ++res.invalid;
          continue;
        }
        plans.push_back(p);
      }
    }
  }
  std::vector<std::optional<ServeSummary>> out(plans.size());
  std::atomic<int64_t> over{0};
  parallel_for(plans.size(), jobs, [&](size_t k) {
    Scenario s = base;
    s.plan = plans[k];
    try {
      out[k] = run_serving(s);
    } catch (const InputError&) {
      ++over;  // the weights leave no room for the KV cache the requests need
    }
  });
  res.over_memory = over;
  for (size_t k = 0; k < plans.size(); ++k) {
    if (!out[k]) continue;
    ServingRow row{plans[k], std::move(*out[k]), true};
    row.feasible = (limits.max_ttft_p99_s <= 0 || row.summary.ttft_s.p99 <= limits.max_ttft_p99_s) &&
                   (limits.max_tpot_p99_s <= 0 || row.summary.tpot_s.p99 <= limits.max_tpot_p99_s);
    res.rows.push_back(std::move(row));
  }
  std::stable_sort(res.rows.begin(), res.rows.end(), [](const ServingRow& a, const ServingRow& b) {
    if (a.feasible != b.feasible) return a.feasible;
    return a.summary.output_tokens_per_s_per_device > b.summary.output_tokens_per_s_per_device;
  });
  return res;
}

}  // namespace shardsim
