// shardsim report: one self-contained HTML page about a scenario's step.
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/app/report.h"

namespace shardsim::cli {

int cmd_report(const std::vector<std::string>& args) {
  std::string file, out;
  std::vector<Override> sets;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--out") {
      out = take_value(args, i);
    } else if (a == "--set") {
      sets.push_back(parse_set(take_value(args, i)));
    } else {
      take_scenario_file("report", a, file);
    }
  }
  if (file.empty()) throw UsageError("report: expected a scenario file (shardsim report --help)");
  if (out.empty()) throw UsageError("report: expected --out FILE.html");
  const Scenario s = load_scenario(file, sets);
  write_step_report(s, out, step_report_title(s));
  std::printf("report written to %s\n", out.c_str());
  return 0;
}

}  // namespace shardsim::cli
