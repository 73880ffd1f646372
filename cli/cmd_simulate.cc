// shardsim simulate: one step of a scenario (app/step.h does the work).
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/app/step.h"
#include "shardsim/viz/result_json.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::cli {

int cmd_simulate(const std::vector<std::string>& args) {
  std::string file, trace_file, trace_list = "0";
  std::vector<Override> sets;
  bool json = false, trace_devices_given = false, retime = false;
  SimulateOptions opt;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json")
      json = true;
    else if (a == "--no-timing")
      opt.timing = false;
    else if (a == "--critical-path") {
      const std::string v = take_value(args, i);
      if (v != "on" && v != "off" && v != "auto") {
        throw UsageError("--critical-path: expected on, off or auto, got \"" + v + "\"");
      }
      opt.critical_path = v == "on"    ? CriticalPathMode::kOn
                          : v == "off" ? CriticalPathMode::kOff
                                       : CriticalPathMode::kAuto;
    } else if (a == "--set")
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
      const std::string v = take_value(args, i);
      if (v != "on" && v != "off" && v != "auto") {
        throw UsageError("--replica-shortcut: expected on, off or auto, got \"" + v + "\"");
      }
      opt.replica_shortcut = v == "on"    ? ReplicaShortcut::kOn
                             : v == "off" ? ReplicaShortcut::kOff
                                          : ReplicaShortcut::kAuto;
    } else if (a == "--trace-devices") {
      trace_list = take_value(args, i);
      trace_devices_given = true;
    } else if (a == "--retime") {
      retime = true;
    } else {
      take_scenario_file("simulate", a, file);
    }
  }
  if (file.empty()) throw UsageError("simulate: expected a scenario file (shardsim simulate --help)");
  if (trace_devices_given && trace_file.empty()) throw UsageError("--trace-devices: needs --trace FILE");
  Scenario s = load_scenario(file, sets);
  if (retime) {
    if (!s.workload.present) throw UsageError("--retime: the scenario's workload is not a trace");
    sets.push_back(Override{"workload.retime", "true"});
    s = load_scenario(file, sets);
  }
  if (!trace_file.empty()) opt.trace_devices = parse_device_list("--trace-devices", trace_list, s.cluster.devices);
  const StepRun run = simulate_step(s, opt);
  if (!trace_file.empty()) write_step_trace(trace_file, run);
  std::fputs((json ? step_report_json(run.report) : step_summary_text(s, run.report)).c_str(), stdout);
  return 0;
}

}  // namespace shardsim::cli
