// shardsim-rank: one MPI rank of a real run (`shardsim run` starts it under
// mpirun; `mpirun -n N shardsim-rank SCENARIO ...` works by hand too). Links
// MPI and OpenBLAS, never SimGrid. Built a second time as shardsim-rank-cuda
// (SHARDSIM_RANK_CUDA): the same program running the CUDA executor.
//
//   shardsim-rank SCENARIO [--set PATH=VALUE]... [--steps K] [--warmup K] [--verify]
//                 [--result FILE] [--progress-dir DIR]
//   shardsim-rank --calibrate [--quick] [--result FILE] [--progress-dir DIR]
// With --report (what `mpirun -n N shardsim run SCENARIO ...` becomes), rank
// 0 also prints the report and writes --trace FILE, as `shardsim run` does.
// Fault injection for tests: SHARDSIM_FAULT=kill:rank=R:op=N or
// delay:rank=R:op=N:s=S.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "args.h"
#include "run_report.h"
#include "shardsim/core/error.h"
#include "shardsim/realexec/calibrate.h"
#include "shardsim/realexec/rank.h"
#if SHARDSIM_RANK_CUDA
#include "shardsim/realexec/cuda_rank.h"
#endif
#include "shardsim/workloads/lower.h"

int main(int argc, char** argv) {
  using namespace shardsim;
  std::vector<std::string> args(argv + 1, argv + argc);
  realexec::RankOptions opt;
  std::string file;
  std::vector<Override> sets;
  bool calibrate = false, quick = false, report = false;
  cli::ReportOptions report_opt;
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--set") {
        sets.push_back(cli::parse_set(cli::take_value(args, i)));
      } else if (a == "--steps") {
        opt.steps = static_cast<int>(cli::parse_int(a, cli::take_value(args, i), 1, 1000));
      } else if (a == "--warmup") {
        opt.warmup_steps = static_cast<int>(cli::parse_int(a, cli::take_value(args, i), 0, 1000));
      } else if (a == "--calibrate") {
        calibrate = true;
      } else if (a == "--report") {
        report = true;
      } else if (a == "--json") {
        report_opt.json = true;
      } else if (a == "--trace") {
        report_opt.trace_file = cli::take_value(args, i);
      } else if (a == "--quick") {
        quick = true;
      } else if (a == "--verify") {
        opt.verify = true;
      } else if (a == "--result") {
        opt.result_file = cli::take_value(args, i);
      } else if (a == "--progress-dir") {
        opt.progress_dir = cli::take_value(args, i);
      } else {
        cli::take_scenario_file("", a, file);
      }
    }
    if (calibrate) {
      if (!file.empty()) throw cli::UsageError("--calibrate takes no scenario file");
      realexec::CalibrateOptions c;
      c.quick = quick;
      c.result_file = opt.result_file;
      c.progress_dir = opt.progress_dir;
#if SHARDSIM_RANK_CUDA
      return realexec::run_calibration_cuda(c);
#else
      return realexec::run_calibration(c);
#endif
    }
    if (file.empty()) throw cli::UsageError("expected a scenario file");
    const char* fault = std::getenv("SHARDSIM_FAULT");
    opt.fault = realexec::parse_fault(fault ? fault : "");
    const Scenario s = load_scenario(file, sets);
    realexec::MeasuredRun measured;
#if SHARDSIM_RANK_CUDA
    const int rc = realexec::run_rank_cuda(s, opt, report ? &measured : nullptr);
#else
    const int rc = realexec::run_rank(s, opt, report ? &measured : nullptr);
#endif
    if (rc != 0 || !report || measured.ranks == 0) return rc;  // not rank 0, or no report asked
    return cli::report_measured_run(s, lower_training_step(s), measured, report_opt);
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardsim-rank: error: %s\n", e.what());
    return 2;
  }
}
