// shardsim serve: a request stream on serving replicas (continuous batching,
// paged KV cache), each iteration timed by the simulator (app/serve.h).
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/app/serve.h"

namespace shardsim::cli {

int cmd_serve(const std::vector<std::string>& args) {
  std::string file, trace;
  std::vector<Override> sets;
  bool json = false, no_timing = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--no-timing") {
      no_timing = true;
    } else if (a == "--set") {
      sets.push_back(parse_set(take_value(args, i)));
    } else if (a == "--trace") {
      trace = take_value(args, i);
    } else {
      take_scenario_file("serve", a, file);
    }
  }
  if (file.empty()) throw UsageError("serve: expected a scenario file (shardsim serve --help)");
  const Scenario s = load_scenario(file, sets);
  ServeSummary sum = run_serving(s);
  if (no_timing) sum.wall_s = 0;
  if (!trace.empty()) write_serve_trace(trace, sum);
  std::fputs((json ? serve_json(s, sum) : serve_summary_text(s, sum)).c_str(), stdout);
  return 0;
}

}  // namespace shardsim::cli
