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

int64_t parse_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < lo || x > hi) {
    throw UsageError(flag + ": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                     ", got \"" + v + "\"");
  }
  return x;
}
double parse_seconds(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(x > 0) || x > 86400) {
    throw UsageError(flag + ": expected seconds in (0, 86400], got \"" + v + "\"");
  }
  return x;
}

/// The executable next to this one, or "" if there is none.
std::string sibling(const std::string& name) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path p = self.parent_path() / name;
  return fs::exists(p, ec) ? p.string() : "";
}

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

/// Refuses scenarios too large to run for real, before any process starts.
void check_size(const Scenario& s, const ProgramSet& ps) {
  const Mesh mesh = build_mesh(s.plan);
  realexec::KernelContext ctx;
  ctx.head_dim = s.model.head_dim;
  for (size_t stage = 0; stage < ps.stages.size(); ++stage) {
    const auto f = realexec::rank_footprint(ps.stages[stage], ctx, [&](uint8_t axes) { return mesh.group_size(axes); });
    if (f.total_bytes() > realexec::kMaxRankBytes) {
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "a real run of stage %zu needs %.2f GiB per rank, more than the %.0f GiB cap; use a smaller model, "
                    "seq_len or microbatch_size",
                    stage, static_cast<double>(f.total_bytes()) / (1 << 30),
                    static_cast<double>(realexec::kMaxRankBytes) / (1 << 30));
      throw InputError(s.file, "", buf);
    }
  }
}

/// --backend cuda: the CUDA executor is not built; say precisely why the run
/// cannot happen (no probe, no device, or no executor) and exit 2.
[[noreturn]] void refuse_cuda() {
  const std::string probe = sibling("shardsim-cuda-probe");
  if (probe.empty()) {
    throw UsageError(
        "--backend cuda: this shardsim was built without CUDA (nvcc not found at configure time, or "
        "SHARDSIM_WITH_CUDA=OFF); use --backend cpu");
  }
  std::string line;
  if (std::FILE* p = ::popen(("'" + probe + "' 2>&1").c_str(), "r")) {
    char buf[512];
    if (std::fgets(buf, sizeof buf, p)) line = buf;
    ::pclose(p);
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("devices 0", 0) == 0 || line.rfind("devices ", 0) != 0) {
    const std::string why = line.rfind("devices 0: ", 0) == 0 ? line.substr(11) : line;
    throw UsageError("--backend cuda: no usable CUDA device (" + (why.empty() ? "probe failed" : why) +
                     "); use --backend cpu");
  }
  throw UsageError("--backend cuda: a CUDA device is present (" + line +
                   ") but the CUDA executor is not implemented yet (docs/realexec.md); use --backend cpu");
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
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("run: unknown option " + a);
    } else if (file.empty()) {
      file = a;
    } else {
      throw UsageError("run: one scenario file expected, got a second: " + a);
    }
  }
  if (file.empty()) throw UsageError("run: expected a scenario file (shardsim --help)");
  if (backend == "cuda") refuse_cuda();
  const Scenario s = load_scenario(file, sets);
  if (ranks < 0) ranks = s.cluster.devices;
  if (ranks != s.cluster.devices) {
    throw UsageError("--ranks " + std::to_string(ranks) + ": the scenario has " + std::to_string(s.cluster.devices) +
                     " devices (cluster.devices); a real run needs one rank each");
  }
  const ProgramSet ps = lower_training_step(s);
  check_size(s, ps);
  realexec::LaunchRequest req;
  req.rank_exe = sibling("shardsim-rank");
  if (req.rank_exe.empty()) {
    throw UsageError(
        "--backend cpu: this shardsim was built without the CPU backend (shardsim-rank is missing; "
        "configure with MPI and OpenBLAS installed, see scripts/setup.sh)");
  }
  if (!on_path(req.mpirun)) throw UsageError("--backend cpu: mpirun not found on PATH (install openmpi-bin)");
  req.ranks = static_cast<int>(ranks);
  req.timeout_s = timeout_s;
  req.rank_args = {fs::absolute(file).string(), "--steps", std::to_string(steps), "--warmup", std::to_string(warmup)};
  for (const Override& o : sets) req.rank_args.insert(req.rank_args.end(), {"--set", o.path + "=" + o.value});
  if (verify) req.rank_args.push_back("--verify");
  const Mesh mesh = build_mesh(s.plan);
  for (int r = 0; r < req.ranks; ++r) req.stage_of_rank.push_back(static_cast<int>(mesh.coord(r, MeshAxis::kPp)));

  realexec::MeasuredRun run = realexec::launch_real_run(req, ps);
  // Flow arrows of the trace: each send, from its rank to its peer, over the
  // send's span (the simulator draws transfers the same way).
  for (const TimelineSpan& sp : run.timeline.spans) {
    const Op& o = ps.stages.at(sp.program).op(sp.op);
    if (o.kind != OpKind::kSend) continue;
    const int64_t n = mesh.size(o.peer_axis), c = mesh.coord(sp.device, o.peer_axis);
    const int64_t peer = sp.device + ((((c + o.peer) % n) + n) % n - c) * mesh.stride(o.peer_axis);
    run.timeline.flows.push_back(
        {sp.device, static_cast<uint32_t>(peer), sp.program, sp.op, o.comm_bytes, sp.start, sp.end});
  }
  if (!trace_file.empty()) {
    std::string err;
    if (!write_file_atomic(
            trace_file, [&](std::FILE* f) { return write_chrome_trace(f, ps, run.timeline); }, err)) {
      throw UsageError(err);
    }
  }
  const double step_s = realexec::median(run.step_times_s);
  const auto by_kind = realexec::time_by_kind_s(ps, run.timeline);
  if (json) {
    nlohmann::ordered_json j;
    j["backend"] = backend;
    j["ranks"] = run.ranks;
    j["steps"] = run.step_times_s.size();
    j["warmup_steps"] = run.warmup_steps;
    j["step_time_s"] = step_s;
    j["step_times_s"] = run.step_times_s;
    nlohmann::ordered_json k = nlohmann::ordered_json::object();
    for (const auto& [name, sec] : by_kind) k[name] = sec;
    j["time_by_kind_s"] = k;
    j["verify"] = {{"enabled", run.verify.enabled},
                   {"kernels_checked", run.verify.kernels_checked},
                   {"collectives_checked", run.verify.collectives_checked},
                   {"transfers_checked", run.verify.transfers_checked},
                   {"mismatches", run.verify.mismatches}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    double lo = step_s, hi = step_s;
    for (double t : run.step_times_s) {
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    std::printf("%s on %lld CPU ranks (MPI + OpenBLAS, bf16 run as fp32): %zu steps after %d warm-up\n",
                s.model.name.c_str(), static_cast<long long>(ranks), run.step_times_s.size(), run.warmup_steps);
    std::printf("  step time          %.4f s median (min %.4f, max %.4f)\n", step_s, lo, hi);
    std::string kinds;
    for (const auto& [name, sec] : by_kind) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s%s %.4f s", kinds.empty() ? "" : ", ", name.c_str(), sec);
      kinds += buf;
    }
    std::printf("  time by kind       %s (per rank, last step; communication overlaps compute)\n", kinds.c_str());
    if (run.verify.enabled) {
      std::printf("  verify             %s: %lld kernel checks, %lld collectives, %lld transfers checked\n",
                  run.verify.mismatches == 0 ? "passed" : "FAILED", static_cast<long long>(run.verify.kernels_checked),
                  static_cast<long long>(run.verify.collectives_checked),
                  static_cast<long long>(run.verify.transfers_checked));
    }
    if (!trace_file.empty()) std::printf("  trace              %s\n", trace_file.c_str());
  }
  if (run.verify.mismatches > 0) {
    std::fprintf(stderr, "shardsim: error: verify failed: %lld mismatches; first: %s\n",
                 static_cast<long long>(run.verify.mismatches), run.verify.first_mismatch.c_str());
    return 1;
  }
  return 0;
}

}  // namespace shardsim::cli
