// shardsim run: execute a scenario's step for real (CPU backend: MPI ranks
// with OpenBLAS; CUDA backend: one GPU per rank) and report the measured
// step time and Timeline (app/real_run.h does the work).
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "commands.h"
#include "rank_programs.h"
#include "run_report.h"
#include "shardsim/app/real_run.h"
#include "shardsim/core/error.h"

namespace shardsim::cli {

namespace {

constexpr int kMaxRanks = 64;

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  std::string file, trace_file;
  std::vector<Override> sets;
  bool json = false;
  RealRunOptions opt;  // the defaults: cpu, one rank per device, 3 steps after 1 warm-up, 300 s
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--verify") {
      opt.verify = true;
    } else if (a == "--set") {
      sets.push_back(parse_set(take_value(args, i)));
    } else if (a == "--trace") {
      trace_file = take_value(args, i);
    } else if (a == "--backend") {
      opt.backend = take_value(args, i);
      if (opt.backend != "cpu" && opt.backend != "cuda") {
        throw UsageError("--backend: expected cpu or cuda, got \"" + opt.backend + "\"");
      }
    } else if (a == "--ranks") {
      opt.ranks = parse_int(a, take_value(args, i), 1, kMaxRanks);
    } else if (a == "--steps") {
      opt.steps = parse_int(a, take_value(args, i), 1, 1000);
    } else if (a == "--warmup") {
      opt.warmup = parse_int(a, take_value(args, i), 0, 1000);
    } else if (a == "--timeout-s") {
      opt.timeout_s = parse_seconds(a, take_value(args, i));
    } else {
      take_scenario_file("run", a, file);
    }
  }
  if (file.empty()) throw UsageError("run: expected a scenario file (shardsim run --help)");
  const bool cuda = opt.backend == "cuda";
  const std::string rank_name = cuda ? "shardsim-rank-cuda" : "shardsim-rank";
  if (cuda) cuda_rank_program(&opt.cuda_devices);
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) {
    // Started as one rank of `mpirun -n N shardsim run ...`: shardsim links
    // no MPI, so this process becomes shardsim-rank, whose rank 0 reports.
    // (mpirun supervises; --timeout-s and --ranks do not apply.)
    const std::string rank_exe = sibling(rank_name);
    if (rank_exe.empty()) {
      throw UsageError("--backend " + opt.backend + ": this shardsim was built without " + rank_name);
    }
    std::vector<std::string> argv = {
        rank_exe, file, "--steps", std::to_string(opt.steps), "--warmup", std::to_string(opt.warmup), "--report"};
    for (const Override& o : sets) argv.insert(argv.end(), {"--set", o.path + "=" + o.value});
    if (opt.verify) argv.push_back("--verify");
    if (json) argv.push_back("--json");
    if (!trace_file.empty()) argv.insert(argv.end(), {"--trace", trace_file});
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
    ::execv(rank_exe.c_str(), cargv.data());
    throw std::runtime_error("cannot run " + rank_exe);
  }
  opt.rank_exe = sibling(rank_name);
  RealRun r = run_real_step(file, sets, opt);
  ReportOptions ro;
  ro.json = json;
  ro.trace_file = trace_file;
  return report_measured_run(r.scenario, r.programs, std::move(r.run), ro);
}

}  // namespace shardsim::cli
