#include "shardsim/app/real_run.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "output.h"
#include "shardsim/analysis/critical_path.h"
#include "shardsim/core/error.h"
#include "shardsim/realexec/launch.h"
#include "shardsim/realexec/op_sizing.h"
#include "shardsim/viz/chrome_trace.h"
#include "shardsim/viz/result_json.h"
#include "shardsim/workloads/lower.h"

namespace shardsim {
namespace {

/// Whether `exe` is an executable path, or a name found on PATH.
bool on_path(const std::string& exe) {
  if (exe.find('/') != std::string::npos) return ::access(exe.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  const std::string p = path ? path : "";
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
/// more than `cap_bytes` per rank (realexec/op_sizing.h rank_footprint).
void check_size(const Scenario& s, const ProgramSet& ps, int64_t cap_bytes) {
  const Mesh mesh = build_mesh(s.plan);
  realexec::KernelContext ctx;
  ctx.head_dim = s.model.head_dim;
  for (size_t stage = 0; stage < ps.stages.size(); ++stage) {
    const auto f = realexec::rank_footprint(ps.stages[stage], ctx, [&](uint8_t axes) { return mesh.group_size(axes); });
    if (f.total_bytes() > cap_bytes) {
      std::string msg;
      detail::appendf(msg,
                      "a real run of stage %zu needs %.2f GiB per rank, more than the %.0f GiB cap; use a smaller "
                      "model, seq_len or microbatch_size",
                      stage, static_cast<double>(f.total_bytes()) / (1 << 30),
                      static_cast<double>(cap_bytes) / (1 << 30));
      throw InputError(s.file, "", msg);
    }
  }
}

}  // namespace

RealRun run_real_step(const std::string& file, const std::vector<Override>& overrides, const RealRunOptions& opt) {
  const bool cuda = opt.backend == "cuda";
  if (opt.backend != "cpu" && !cuda) throw UsageError("--backend: expected cpu or cuda, got \"" + opt.backend + "\"");
  RealRun out;
  out.scenario = load_scenario(file, overrides);
  const Scenario& s = out.scenario;
  const int64_t ranks = opt.ranks < 0 ? s.cluster.devices : opt.ranks;
  if (ranks != s.cluster.devices) {
    throw UsageError("--ranks " + std::to_string(ranks) + ": the scenario has " + std::to_string(s.cluster.devices) +
                     " devices (cluster.devices); a real run needs one rank each");
  }
  if (cuda && ranks > opt.cuda_devices) {
    throw UsageError("--backend cuda: " + std::to_string(ranks) + " ranks but this machine has " +
                     std::to_string(opt.cuda_devices) + " CUDA devices (one rank per GPU)");
  }
  if (s.plan.p2p_blocking && s.plan.pp > 1) {
    // A real send completes only when its receive is posted: two stages
    // each blocking their compute stream on a send to the other would wait
    // forever (Megatron paired them with batch_isend_irecv).
    throw InputError(s.file, "/plan/p2p_blocking",
                     "real runs need pipeline transfers on their own streams (two blocking sends would wait on each "
                     "other); set it false");
  }
  if (s.model.is_mla()) {
    // The real kernels run attention with one head width for q, k and v.
    throw InputError(s.file, "/model/mla",
                     "real runs do not execute multi-head latent attention (its query-key and value heads differ "
                     "in width); simulate it, or run the model without mla");
  }
  out.programs = lower_training_step(s);
  check_size(s, out.programs, cuda ? realexec::kMaxRankBytesCuda : realexec::kMaxRankBytes);
  if (opt.rank_exe.empty()) {
    throw UsageError(cuda ? "--backend cuda: this shardsim was built without the CUDA backend (shardsim-rank-cuda is "
                            "missing; configure with the CUDA toolkit, NCCL and MPI installed)"
                          : "--backend cpu: this shardsim was built without the CPU backend (shardsim-rank is "
                            "missing; configure with MPI and OpenBLAS installed, see scripts/setup.sh)");
  }
  if (!on_path(opt.mpirun)) {
    throw UsageError("--backend " + opt.backend + ": " + opt.mpirun + " not found on PATH (install openmpi-bin)");
  }
  realexec::LaunchRequest req;
  req.mpirun = opt.mpirun;
  req.rank_exe = opt.rank_exe;
  req.ranks = static_cast<int>(ranks);
  req.timeout_s = opt.timeout_s;
  req.rank_args = {std::filesystem::absolute(file).string(), "--steps", std::to_string(opt.steps), "--warmup",
                   std::to_string(opt.warmup)};
  for (const Override& o : overrides) req.rank_args.insert(req.rank_args.end(), {"--set", o.path + "=" + o.value});
  if (opt.verify) req.rank_args.push_back("--verify");
  const Mesh mesh = build_mesh(s.plan);
  for (int r = 0; r < req.ranks; ++r) req.stage_of_rank.push_back(static_cast<int>(mesh.coord(r, MeshAxis::kPp)));
  out.run = realexec::launch_real_run(req, out.programs);
  return out;
}

void add_send_flows(const Scenario& s, const ProgramSet& ps, realexec::MeasuredRun& run) {
  const Mesh mesh = build_mesh(s.plan);
  for (const TimelineSpan& sp : run.timeline.spans) {
    const Op& o = ps.stages.at(sp.program).op(sp.op);
    if (o.kind != OpKind::kSend) continue;
    const int64_t n = mesh.size(o.peer_axis), c = mesh.coord(sp.device, o.peer_axis);
    const int64_t peer = sp.device + ((((c + o.peer) % n) + n) % n - c) * mesh.stride(o.peer_axis);
    run.timeline.flows.push_back(
        {sp.device, static_cast<uint32_t>(peer), sp.program, sp.op, o.comm_bytes, sp.start, sp.end});
  }
}

CriticalPathReport measured_critical_path(const Scenario& s, const ProgramSet& ps, realexec::MeasuredRun& run) {
  CriticalPathReport r;
  try {
    const CriticalPath path = critical_path(ps, build_mesh(s.plan), run.timeline, TimelineClock::kMeasured);
    run.timeline.critical_path = path_spans(ps, path);
    r = critical_path_report(ps, path);
  } catch (const std::logic_error& e) {
    r.skipped = std::string("the measured spans do not follow the programs (") + e.what() + ")";
  }
  return r;
}

std::string real_run_json(const ProgramSet& ps, const realexec::MeasuredRun& run, const CriticalPathReport& cp) {
  nlohmann::ordered_json j;
  j["backend"] = run.backend;
  if (!run.device.empty()) j["device"] = run.device;
  j["ranks"] = run.ranks;
  j["steps"] = run.step_times_s.size();
  j["warmup_steps"] = run.warmup_steps;
  j["step_time_s"] = realexec::median(run.step_times_s);
  j["step_times_s"] = run.step_times_s;
  nlohmann::ordered_json k = nlohmann::ordered_json::object();
  for (const auto& [name, sec] : realexec::time_by_kind_s(ps, run.timeline)) k[name] = sec;
  j["time_by_kind_s"] = k;
  if (cp.present || !cp.skipped.empty()) j["critical_path"] = nlohmann::ordered_json::parse(critical_path_json(cp));
  j["verify"] = {{"enabled", run.verify.enabled},
                 {"kernels_checked", run.verify.kernels_checked},
                 {"collectives_checked", run.verify.collectives_checked},
                 {"transfers_checked", run.verify.transfers_checked},
                 {"mismatches", run.verify.mismatches}};
  return j.dump(2) + "\n";
}

std::string real_run_text(const Scenario& s, const ProgramSet& ps, const realexec::MeasuredRun& run,
                          const CriticalPathReport& cp, const std::string& trace_file) {
  const double step_s = realexec::median(run.step_times_s);
  double lo = step_s, hi = step_s;
  for (double t : run.step_times_s) {
    lo = std::min(lo, t);
    hi = std::max(hi, t);
  }
  const std::string what = run.backend == "cuda"
                               ? "GPU ranks (CUDA + cuBLAS + NCCL" + (run.device.empty() ? "" : ", " + run.device) + ")"
                               : "CPU ranks (MPI + OpenBLAS, bf16 run as fp32)";
  std::string out;
  detail::appendf(out, "%s on %lld %s: %zu steps after %d warm-up\n", s.model.name.c_str(),
                  static_cast<long long>(run.ranks), what.c_str(), run.step_times_s.size(), run.warmup_steps);
  detail::appendf(out, "  step time          %.4f s median (min %.4f, max %.4f)\n", step_s, lo, hi);
  std::string kinds;
  for (const auto& [name, sec] : realexec::time_by_kind_s(ps, run.timeline)) {
    detail::appendf(kinds, "%s%s %.4f s", kinds.empty() ? "" : ", ", name.c_str(), sec);
  }
  detail::appendf(out, "  time by kind       %s (per rank, last step; communication overlaps compute)\n",
                  kinds.c_str());
  out += detail::critical_path_line(cp);
  if (run.verify.enabled) {
    detail::appendf(
        out, "  verify             %s: %lld kernel checks, %lld collectives, %lld transfers checked\n",
        run.verify.mismatches == 0 ? "passed" : "FAILED", static_cast<long long>(run.verify.kernels_checked),
        static_cast<long long>(run.verify.collectives_checked), static_cast<long long>(run.verify.transfers_checked));
  }
  if (!trace_file.empty()) detail::appendf(out, "  trace              %s\n", trace_file.c_str());
  return out;
}

void write_real_run_trace(const std::string& file, const ProgramSet& ps, const realexec::MeasuredRun& run) {
  detail::write_output_file(file, [&](std::FILE* f) { return write_chrome_trace(f, ps, run.timeline); });
}

std::string calibration_profile_text(const std::string& profile_json, const std::string& file,
                                     const std::string& backend, int64_t ranks) {
  using Json = nlohmann::json;
  std::string out;
  try {
    const Json p = Json::parse(profile_json);
    detail::appendf(out, "%s backend profile, %lld ranks%s\n", backend == "cuda" ? "CUDA" : "CPU",
                    static_cast<long long>(ranks), file.empty() ? "" : (" -> " + file).c_str());
    const Json& c = p.at("compute");
    for (const char* key : {"matmul", "matmul_fp8"}) {
      if (!c.contains(key)) continue;
      for (const Json& m : c.at(key)) {
        detail::appendf(out, "  matmul %4lld^3 %-4s   %6.1f GFLOP/s\n", m.at("m").get<long long>(),
                        std::string(key) == "matmul" ? "" : "fp8", m.at("flops_per_s").get<double>() * 1e-9);
      }
    }
    detail::appendf(out, "  attention (causal)   %6.1f GFLOP/s\n",
                    c.at("attention").at("flops_per_s").get<double>() * 1e-9);
    detail::appendf(out, "  memory (stream)      %6.2f GB/s\n", c.at("memory").at("GBps").get<double>());
    detail::appendf(out, "  cross-entropy        %6.1f M values/s\n",
                    c.at("loss").at("values_per_s").get<double>() * 1e-6);
    for (const Json& k : p.at("collectives")) {
      const Json& bw = k.at("bandwidth_GBps");
      std::string bw_text = "n/a";
      if (bw.is_number()) {
        bw_text.clear();
        detail::appendf(bw_text, "%.2f", bw.get<double>());
      }
      detail::appendf(out, "  %-15s group %2d: latency %7.1f us, bandwidth %s GB/s\n",
                      k.at("kind").get<std::string>().c_str(), k.at("group").get<int>(),
                      k.at("latency_us").get<double>(), bw_text.c_str());
    }
  } catch (const Json::exception& e) {
    throw InputError(file.empty() ? "calibration profile" : file, "",
                     std::string("not a calibration profile: ") + e.what());
  }
  return out;
}

}  // namespace shardsim
