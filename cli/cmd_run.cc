// shardsim run: execute a scenario's step for real (CPU backend: MPI ranks
// with OpenBLAS) and report the measured step time and Timeline.
#include <stdio.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "rank_programs.h"
#include "run_report.h"
#include "shardsim/core/atomic_file.h"
#include "shardsim/core/error.h"
#include "shardsim/realexec/launch.h"
#include "shardsim/realexec/measured.h"
#include "shardsim/realexec/op_sizing.h"
#include "shardsim/viz/chrome_trace.h"
#include "shardsim/workloads/lower.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxRanks = 64;

bool on_path(const std::string& exe) {
  if (exe.find('/') != std::string::npos) return ::access(exe.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  size_t pos = 0;
  while (pos <= p.size()) {
    const size_t end = std::min(p.find(':', pos), p.size());
    const std::string dir = p.substr(pos, end - pos);
    if (!dir.empty() && ::access((dir + "/" + exe).c_str(), X_OK) == 0) return true;
    pos = end + 1;
  }
  return false;
}

/// Refuses scenarios too large to run for real, before any process starts:
/// more than `cap_bytes` per rank.
void check_size(const Scenario& s, const ProgramSet& ps, int64_t cap_bytes) {
  const Mesh mesh = build_mesh(s.plan);
  realexec::KernelContext ctx;
  ctx.head_dim = s.model.head_dim;
  for (size_t stage = 0; stage < ps.stages.size(); ++stage) {
    const auto f = realexec::rank_footprint(ps.stages[stage], ctx, [&](uint8_t axes) { return mesh.group_size(axes); });
    if (f.total_bytes() > cap_bytes) {
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "a real run of stage %zu needs %.2f GiB per rank, more than the %.0f GiB cap; use a smaller model, "
                    "seq_len or microbatch_size",
                    stage, static_cast<double>(f.total_bytes()) / (1 << 30),
                    static_cast<double>(cap_bytes) / (1 << 30));
      throw InputError(s.file, "", buf);
    }
  }
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  std::string file, trace_file, backend = "cpu";
  std::vector<Override> sets;
  bool json = false, verify = false;
  int64_t ranks = -1, steps = 3, warmup = 1;
  double timeout_s = 300;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--verify") {
      verify = true;
    } else if (a == "--set") {
      sets.push_back(parse_set(take_value(args, i)));
    } else if (a == "--trace") {
      trace_file = take_value(args, i);
    } else if (a == "--backend") {
      backend = take_value(args, i);
      if (backend != "cpu" && backend != "cuda") {
        throw UsageError("--backend: expected cpu or cuda, got \"" + backend + "\"");
      }
    } else if (a == "--ranks") {
      ranks = parse_int(a, take_value(args, i), 1, kMaxRanks);
    } else if (a == "--steps") {
      steps = parse_int(a, take_value(args, i), 1, 1000);
    } else if (a == "--warmup") {
      warmup = parse_int(a, take_value(args, i), 0, 1000);
    } else if (a == "--timeout-s") {
      timeout_s = parse_seconds(a, take_value(args, i));
    } else {
      take_scenario_file("run", a, file);
    }
  }
  if (file.empty()) throw UsageError("run: expected a scenario file (shardsim --help)");
  const bool cuda = backend == "cuda";
  const std::string rank_name = cuda ? "shardsim-rank-cuda" : "shardsim-rank";
  int cuda_devices = 0;
  if (cuda) cuda_rank_program(&cuda_devices);
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) {
    // Started as one rank of `mpirun -n N shardsim run ...`: shardsim links
    // no MPI, so this process becomes shardsim-rank, whose rank 0 reports.
    // (mpirun supervises; --timeout-s and --ranks do not apply.)
    const std::string rank_exe = sibling(rank_name);
    if (rank_exe.empty()) throw UsageError("--backend " + backend + ": this shardsim was built without " + rank_name);
    std::vector<std::string> argv = {
        rank_exe, file, "--steps", std::to_string(steps), "--warmup", std::to_string(warmup), "--report"};
    for (const Override& o : sets) argv.insert(argv.end(), {"--set", o.path + "=" + o.value});
    if (verify) argv.push_back("--verify");
    if (json) argv.push_back("--json");
    if (!trace_file.empty()) argv.insert(argv.end(), {"--trace", trace_file});
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
    ::execv(rank_exe.c_str(), cargv.data());
    throw std::runtime_error("cannot run " + rank_exe);
  }
  const Scenario s = load_scenario(file, sets);
  if (ranks < 0) ranks = s.cluster.devices;
  if (ranks != s.cluster.devices) {
    throw UsageError("--ranks " + std::to_string(ranks) + ": the scenario has " + std::to_string(s.cluster.devices) +
                     " devices (cluster.devices); a real run needs one rank each");
  }
  if (cuda && ranks > cuda_devices) {
    throw UsageError("--backend cuda: " + std::to_string(ranks) + " ranks but this machine has " +
                     std::to_string(cuda_devices) + " CUDA devices (one rank per GPU)");
  }
  if (s.plan.p2p_blocking && s.plan.pp > 1) {
    // A real send completes only when its receive is posted: two stages
    // each blocking their compute stream on a send to the other would wait
    // forever (Megatron paired them with batch_isend_irecv).
    throw InputError(s.file, "/plan/p2p_blocking",
                     "real runs need pipeline transfers on their own streams (two blocking sends would wait on each "
                     "other); set it false");
  }
  const ProgramSet ps = lower_training_step(s);
  check_size(s, ps, cuda ? realexec::kMaxRankBytesCuda : realexec::kMaxRankBytes);
  realexec::LaunchRequest req;
  req.rank_exe = sibling(rank_name);
  if (req.rank_exe.empty()) {
    throw UsageError(
        "--backend cpu: this shardsim was built without the CPU backend (shardsim-rank is missing; "
        "configure with MPI and OpenBLAS installed, see scripts/setup.sh)");
  }
  if (!on_path(req.mpirun)) {
    throw UsageError("--backend " + backend + ": mpirun not found on PATH (install openmpi-bin)");
  }
  req.ranks = static_cast<int>(ranks);
  req.timeout_s = timeout_s;
  req.rank_args = {fs::absolute(file).string(), "--steps", std::to_string(steps), "--warmup", std::to_string(warmup)};
  for (const Override& o : sets) req.rank_args.insert(req.rank_args.end(), {"--set", o.path + "=" + o.value});
  if (verify) req.rank_args.push_back("--verify");
  const Mesh mesh = build_mesh(s.plan);
  for (int r = 0; r < req.ranks; ++r) req.stage_of_rank.push_back(static_cast<int>(mesh.coord(r, MeshAxis::kPp)));

  const realexec::MeasuredRun run = realexec::launch_real_run(req, ps);
  ReportOptions ro;
  ro.json = json;
  ro.trace_file = trace_file;
  try {
    return report_measured_run(s, ps, run, ro);
  } catch (const TraceWriteError& e) {
    throw UsageError(e.what());
  }
}

}  // namespace shardsim::cli
