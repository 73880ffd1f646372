#include "run_report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "shardsim/core/atomic_file.h"
#include "shardsim/viz/chrome_trace.h"

namespace shardsim::cli {

int report_measured_run(const Scenario& s, const ProgramSet& ps, realexec::MeasuredRun run, const ReportOptions& opt) {
  const Mesh mesh = build_mesh(s.plan);
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
  if (!opt.trace_file.empty()) {
    std::string err;
    if (!write_file_atomic(
            opt.trace_file, [&](std::FILE* f) { return write_chrome_trace(f, ps, run.timeline); }, err)) {
      throw TraceWriteError(err);
    }
  }
  const double step_s = realexec::median(run.step_times_s);
  const auto by_kind = realexec::time_by_kind_s(ps, run.timeline);
  if (opt.json) {
    nlohmann::ordered_json j;
    j["backend"] = run.backend;
    if (!run.device.empty()) j["device"] = run.device;
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
    const std::string what =
        run.backend == "cuda" ? "GPU ranks (CUDA + cuBLAS + NCCL" + (run.device.empty() ? "" : ", " + run.device) + ")"
                              : "CPU ranks (MPI + OpenBLAS, bf16 run as fp32)";
    std::printf("%s on %lld %s: %zu steps after %d warm-up\n", s.model.name.c_str(), static_cast<long long>(run.ranks),
                what.c_str(), run.step_times_s.size(), run.warmup_steps);
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
    if (!opt.trace_file.empty()) std::printf("  trace              %s\n", opt.trace_file.c_str());
  }
  if (run.verify.mismatches > 0) {
    std::fprintf(stderr, "shardsim: error: verify failed: %lld mismatches; first: %s\n",
                 static_cast<long long>(run.verify.mismatches), run.verify.first_mismatch.c_str());
    return 1;
  }
  return 0;
}

}  // namespace shardsim::cli
