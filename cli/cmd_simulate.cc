#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/core/atomic_file.h"
#include "shardsim/viz/chrome_trace.h"
#include "shardsim/viz/result_json.h"
#include "shardsim/workloads/scenario.h"
#include "simgrid_client.h"
#include "step_runner.h"

namespace shardsim::cli {
namespace {

constexpr int64_t kShortcutDevices = 2048;

std::string gib(int64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / (1024.0 * 1024 * 1024));
  return buf;
}

void print_summary(const Scenario& s, const StepReport& r) {
  const Plan& p = s.plan;
  std::printf(
      "%s on %lld x %s (dp %lld, tp %lld, pp %lld, cp %lld, zero %d%s), %lld microbatches of %lld x %lld tokens\n",
      r.model.c_str(), static_cast<long long>(r.devices), r.chip.c_str(), static_cast<long long>(p.dp),
      static_cast<long long>(p.tp), static_cast<long long>(p.pp), static_cast<long long>(p.cp), p.zero,
      p.sequence_parallel ? ", sequence parallel" : "", static_cast<long long>(p.microbatches()),
      static_cast<long long>(p.microbatch_size), static_cast<long long>(p.seq_len));
  std::printf("  step time          %.4f s   (%.4g tokens/s)\n", r.step_time_s, r.tokens_per_s);
  std::printf("  MFU                %.1f %%    (HFU %.1f %%; per device %.1f model, %.1f hardware TFLOP/s)\n",
              100 * r.mfu, 100 * r.hfu, r.model_tflops_per_device, r.hardware_tflops_per_device);
  std::printf("  bound by           %s\n", r.binding.c_str());
  const auto& b = r.breakdown;
  auto pct = [&](double x) { return r.step_time_s > 0 ? 100 * x / r.step_time_s : 0.0; };
  std::printf(
      "  breakdown          compute %.4f s (%.1f%%), exposed comm %.4f s (%.1f%%), bubble %.4f s, other %.4f s\n",
      b.compute_s, pct(b.compute_s), b.exposed_comm_s, pct(b.exposed_comm_s), b.bubble_s, b.other_s);
  auto list = [](const std::vector<std::pair<std::string, double>>& items) {
    std::string out;
    for (const auto& [name, seconds] : items) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s%s %.4f s", out.empty() ? "" : ", ", name.c_str(), seconds);
      out += buf;
    }
    return out.empty() ? std::string("none") : out;
  };
  std::printf("  device %lld compute  %s\n", static_cast<long long>(r.critical_device),
              list(r.compute_by_kind_s).c_str());
  std::printf("  device %lld comm     %s (busy, overlapping)\n", static_cast<long long>(r.critical_device),
              list(r.comm_busy_by_stream_s).c_str());
  std::printf("  memory per device  %s of %s: %s\n", gib(r.memory.peak_bytes_per_device).c_str(),
              gib(r.memory.capacity_bytes).c_str(), r.memory.fits ? "fits" : "DOES NOT FIT");
  if (!r.memory.peak_at.empty()) std::printf("    peak at %s\n", r.memory.peak_at.c_str());
  if (!r.memory.fits) {
    auto comps = r.memory.components;
    std::sort(comps.begin(), comps.end(), [](const auto& x, const auto& y) { return x.bytes > y.bytes; });
    std::printf("    largest:");
    for (size_t i = 0; i < comps.size() && i < 3; ++i) {
      std::printf("%s %s %s", i ? "," : "", comps[i].name.c_str(), gib(comps[i].bytes).c_str());
    }
    std::printf("\n");
  }
  std::printf(
      "  simulation         %s: %llu events, %llu flows, %lld ops per device, %lld of %lld devices run, %.3f s wall\n",
      r.sim.backend.c_str(), static_cast<unsigned long long>(r.sim.events),
      static_cast<unsigned long long>(r.sim.flows), static_cast<long long>(r.sim.ops_per_device),
      static_cast<long long>(r.sim.simulated_devices), static_cast<long long>(r.devices), r.sim.wall_s);
}

}  // namespace

int cmd_simulate(const std::vector<std::string>& args) {
  std::string file, trace_file, trace_list = "0";
  std::vector<Override> sets;
  bool json = false, no_timing = false, trace_devices_given = false;
  std::string shortcut = "auto";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json")
      json = true;
    else if (a == "--no-timing")
      no_timing = true;
    else if (a == "--set")
      sets.push_back(parse_set(take_value(args, i)));
    else if (a.rfind("--set=", 0) == 0)
      sets.push_back(parse_set(a.substr(6)));
    else if (a == "--backend") {
      const std::string backend = take_value(args, i);
      if (backend != "native" && backend != "simgrid") {
        throw UsageError("--backend: expected native or simgrid, got \"" + backend + "\"");
      }
      sets.push_back(Override{"simulator.backend", backend});
    } else if (a == "--trace")
      trace_file = take_value(args, i);
    else if (a == "--replica-shortcut") {
      shortcut = take_value(args, i);
      if (shortcut != "on" && shortcut != "off" && shortcut != "auto") {
        throw UsageError("--replica-shortcut: expected on, off or auto, got \"" + shortcut + "\"");
      }
    } else if (a == "--trace-devices") {
      trace_list = take_value(args, i);
      trace_devices_given = true;
    } else {
      take_scenario_file("simulate", a, file);
    }
  }
  if (file.empty()) throw UsageError("simulate: expected a scenario file (shardsim --help)");
  if (trace_devices_given && trace_file.empty()) throw UsageError("--trace-devices: needs --trace FILE");
  const Scenario s = load_scenario(file, sets);
  const std::vector<uint32_t> traced = trace_file.empty()
                                           ? std::vector<uint32_t>{}
                                           : parse_device_list("--trace-devices", trace_list, s.cluster.devices);
  // auto: simulate one data-parallel replica from 2048 devices up.
  const bool use_shortcut = shortcut == "on" || (shortcut == "auto" && s.cluster.devices > kShortcutDevices);
  std::string backend;
  const Simulator simulator = simulator_for(s, sets, backend);
  StepRun run = run_training_step(s, traced, use_shortcut && s.plan.dp > 1, simulator, backend);
  if (no_timing) run.report.sim.wall_s = 0;
  if (!trace_file.empty()) {
    std::string err;
    if (!write_file_atomic(
            trace_file, [&](std::FILE* f) { return write_chrome_trace(f, run.programs, run.timeline); }, err)) {
      throw UsageError(err);
    }
  }
  if (json) {
    std::fputs(step_report_json(run.report).c_str(), stdout);
  } else {
    print_summary(s, run.report);
  }
  return 0;
}

}  // namespace shardsim::cli
