// shardsim search: which plan should I run?
#include <unistd.h>

#include <thread>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "rank_programs.h"
#include "shardsim/app/search.h"
#include "shardsim/core/error.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::cli {

int cmd_search(const std::vector<std::string>& args) {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) {
    // One rank of `mpirun -n N shardsim search ...`: shardsim links no MPI,
    // so this process becomes shardsim-search-rank (the same command, its
    // waves dealt out across the ranks; rank 0 prints and writes).
    const std::string exe = sibling("shardsim-search-rank");
    if (exe.empty()) {
      throw UsageError("search under mpirun: this shardsim was built without shardsim-search-rank (MPI missing)");
    }
    std::vector<std::string> argv = {exe};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::execv(exe.c_str(), cargv.data());
    throw std::runtime_error("cannot run " + exe);
  }
  return run_search(args, SearchHooks{});
}

int run_search(const std::vector<std::string>& args, const SearchHooks& hooks) {
  const bool lead = hooks.lead;
  std::string file, emit, report, objective = "step_time";
  std::vector<Override> sets;
  int64_t top = 10, devices = 0, budget = SearchOptions{}.max_simulations, jobs = 0;
  ServingLimits limits;
  bool json = false, no_timing = false;
  auto positive = [](const std::string& flag, const std::string& v, int64_t hi) {
    if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos || std::stoll(v) < 1 ||
        std::stoll(v) > hi) {
      throw UsageError(flag + ": expected an integer from 1 to " + std::to_string(hi) + ", got \"" + v + "\"");
    }
    return std::stoll(v);
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--no-timing") {
      no_timing = true;
    } else if (a == "--set") {
      sets.push_back(parse_set(take_value(args, i)));
    } else if (a == "--top") {
      top = positive(a, take_value(args, i), 1000000);
    } else if (a == "--devices") {
      devices = positive(a, take_value(args, i), int64_t{1} << 20);
    } else if (a == "--max-simulations") {
      budget = positive(a, take_value(args, i), 100000);
    } else if (a == "--jobs") {
      jobs = positive(a, take_value(args, i), 1024);
    } else if (a == "--objective") {
      objective = take_value(args, i);
      parse_search_objective(objective);  // a bad name fails before the scenario loads
    } else if (a == "--emit-best") {
      emit = take_value(args, i);
    } else if (a == "--max-ttft-p99-s" || a == "--max-tpot-p99-s") {
      const std::string v = take_value(args, i);
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(x > 0) || x > 1e6) {
        throw UsageError(a + ": expected a positive number of seconds, got \"" + v + "\"");
      }
      (a == "--max-ttft-p99-s" ? limits.max_ttft_p99_s : limits.max_tpot_p99_s) = x;
    } else if (a == "--report") {
      report = take_value(args, i);
    } else {
      take_scenario_file("search", a, file);
    }
  }
  if (file.empty()) throw UsageError("search: expected a scenario file (shardsim search --help)");
  if (devices > 0) sets.push_back({"cluster.devices", std::to_string(devices)});
  const Scenario base = load_scenario(file, sets);
  if (base.plan.inference()) {
    if (!base.serving.present) {
      throw InputError(file, "/serving",
                       "missing: searching an inference plan serves the scenario's request stream; add a serving "
                       "object (docs/inference.md)");
    }
    if (!report.empty()) throw UsageError("--report: the serving search has no HTML report yet; use --json");
    // Over MPI every rank runs the whole serving search (its simulations
    // are not dealt out yet); rank 0 prints.
    const ServingSearchResult res = search_serving_plans(base, limits, static_cast<int>(jobs));
    if (!lead) return 0;
    if (!emit.empty()) emit_best_plan(base, sets, res, emit);
    std::fputs(
        (json ? serving_search_json(base, res, limits, top) : serving_search_text(base, res, limits, top)).c_str(),
        stdout);
    return 0;
  }

  SearchOptions opt;
  opt.objective = parse_search_objective(objective);
  opt.max_simulations = budget;
  opt.jobs = static_cast<int>(jobs);
  if (hooks.make_runner) opt.wave_runner = hooks.make_runner(opt.jobs);
  if (lead && progress_wanted()) {
    opt.progress = [](int64_t done, int64_t budget_left, double s) {
      const double left = done > 0 ? s / static_cast<double>(done) * static_cast<double>(budget_left - done) : 0;
      std::fprintf(stderr, "\rsearch: simulated %lld of at most %lld plans, %.0f s, at most %.0f s left   ",
                   static_cast<long long>(done), static_cast<long long>(budget_left), s, std::max(0.0, left));
    };
  }
  SearchResult res = search_plans(base, search_device_counts(base, opt.objective), opt);
  if (opt.progress) std::fputs("\r\033[K", stderr);
  if (no_timing) forget_wall_times(res);
  if (!lead) return 0;
  if (!emit.empty()) emit_best_plan(base, sets, res, emit);
  if (!report.empty()) write_search_report(base, res, report);
  if (json) {
    std::fputs(search_json(base, res, opt.objective, top).c_str(), stdout);
    return 0;
  }
  std::fputs(search_text(base, res, opt.objective, top).c_str(), stdout);
  if (!emit.empty()) std::printf("\n  best plan written to %s\n", emit.c_str());
  if (!report.empty()) std::printf("  report written to %s\n", report.c_str());
  return 0;
}

}  // namespace shardsim::cli
