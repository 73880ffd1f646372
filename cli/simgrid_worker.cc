// shardsim-simgrid-worker: simulates one step on the SimGrid backend and
// writes the encoded EngineResult to stdout. SimGrid's engine can run once
// per process, so the shardsim CLI starts one worker per simulation
// (app/src/simgrid_client.cc); lowering is deterministic, so the worker
// re-lowers the scenario it is handed (the caller's Scenario::json, in a
// file) instead of receiving the Program, or reads its trace workload.
//
//   shardsim-simgrid-worker SCENARIO_JSON [--name NAME] [--trace-devices LIST]
//                           [--replica-shortcut on|off] [--all-spans]
#include <cstdio>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "args.h"
#include "shardsim/app/step.h"
#include "shardsim/app/workload.h"
#include "shardsim/core/error.h"
#include "shardsim/sim/result_codec.h"
#include "shardsim/sim/simgrid_engine.h"
#include "shardsim/workloads/scenario.h"

int main(int argc, char** argv) {
  using namespace shardsim;
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    std::string file, name, trace_list;
    bool shortcut = false;
    bool all_spans = false;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--name") {
        name = cli::take_value(args, i);
      } else if (args[i] == "--trace-devices") {
        trace_list = cli::take_value(args, i);
      } else if (args[i] == "--all-spans") {
        all_spans = true;
      } else if (args[i] == "--replica-shortcut") {
        shortcut = cli::take_value(args, i) == "on";
      } else if (file.empty() && !args[i].empty() && args[i][0] != '-') {
        file = args[i];
      } else {
        throw cli::UsageError("shardsim-simgrid-worker: unexpected argument " + args[i]);
      }
    }
    if (file.empty()) throw cli::UsageError("shardsim-simgrid-worker: expected a scenario file");
    // The scenario as the caller holds it (scenario_json), named as the
    // caller names it in messages.
    std::ifstream in(file, std::ios::binary);
    if (!in) throw cli::UsageError("shardsim-simgrid-worker: cannot read " + file);
    std::ostringstream text;
    text << in.rdbuf();
    const Scenario s = parse_scenario(text.str(), name.empty() ? file : name);
    const std::vector<uint32_t> traced = trace_list.empty()
                                             ? std::vector<uint32_t>{}
                                             : cli::parse_device_list("--trace-devices", trace_list, s.cluster.devices);
    // The step's programs: lowered, or read from its trace workload.
    const StepPrograms sp = step_programs(s);
    const auto topo = build_topology(s.cluster);
    SimgridOptions sg;
    sg.lv08 = s.simulator.simgrid_model == SimulatorSpec::SimgridModel::kLv08;
    EngineOptions opt = step_engine_options(s, traced, shortcut);
    opt.spans_of_every_device = all_spans;
    EngineResult r;
    try {
      r = simulate_simgrid(sp.programs, sp.mesh, *topo, s.cluster.chip, opt, sg);
    } catch (const Deadlock& d) {
      throw deadlock_error(s, sp, d);
    }
    const std::string bytes = encode_engine_result(r);
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0) {
      std::fprintf(stderr, "shardsim-simgrid-worker: cannot write the result\n");
      return 1;
    }
    return 0;
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const cli::UsageError& e) {
    std::fprintf(stderr, "shardsim: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardsim-simgrid-worker: error: %s\n", e.what());
    return 1;
  }
}
