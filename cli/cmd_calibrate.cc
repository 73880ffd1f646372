// shardsim calibrate: run a backend's micro-benchmarks (CPU: MPI + OpenBLAS;
// CUDA: cuBLAS, own kernels, NCCL) on N ranks and write the measured profile
// (docs/realexec.md, Calibration); app/real_run.h writes its summary.
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "rank_programs.h"
#include "shardsim/app/real_run.h"
#include "shardsim/core/atomic_file.h"
#include "shardsim/realexec/launch.h"

namespace shardsim::cli {

int cmd_calibrate(const std::vector<std::string>& args) {
  std::string out_file, backend = "cpu";
  bool json = false, quick = false;
  int64_t ranks = 2;
  double timeout_s = 600;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--out") {
      out_file = take_value(args, i);
    } else if (a == "--backend") {
      backend = take_value(args, i);
      if (backend != "cpu" && backend != "cuda") {
        throw UsageError("--backend: expected cpu or cuda, got \"" + backend + "\"");
      }
    } else if (a == "--ranks") {
      ranks = parse_int(a, take_value(args, i), 1, 64);
    } else if (a == "--timeout-s") {
      timeout_s = parse_seconds(a, take_value(args, i));
    } else {
      throw UsageError("calibrate: unexpected argument " + a);
    }
  }
  if (out_file.empty() && !json) throw UsageError("calibrate: expected --out FILE (or --json)");
  realexec::LaunchRequest req;
  if (backend == "cuda") {
    int devices = 0;
    req.rank_exe = cuda_rank_program(&devices);
    if (ranks > devices) {
      throw UsageError("--backend cuda: " + std::to_string(ranks) + " ranks but this machine has " +
                       std::to_string(devices) + " CUDA devices (one rank per GPU)");
    }
  } else {
    req.rank_exe = sibling("shardsim-rank");
    if (req.rank_exe.empty()) {
      throw UsageError("--backend cpu: this shardsim was built without the CPU backend (shardsim-rank is missing)");
    }
  }
  req.ranks = static_cast<int>(ranks);
  req.timeout_s = timeout_s;
  req.rank_args = {"--calibrate"};
  if (quick) req.rank_args.push_back("--quick");
  const std::string text = realexec::launch_ranks(req, ProgramSet{});
  if (!out_file.empty()) {
    std::string err;
    if (!write_file_atomic(out_file, text, err)) throw UsageError(err);
  }
  std::fputs(json ? text.c_str() : calibration_profile_text(text, out_file, backend, ranks).c_str(), stdout);
  return 0;
}

}  // namespace shardsim::cli
