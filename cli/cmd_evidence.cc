// `shardsim evidence SCENARIO [--set PATH=VALUE]... [--record FILE] [--json]`:
// how shardsim did on the published runs most like SCENARIO (app/evidence.h
// does the work; the accuracy record embedded at build time unless --record).
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/app/accuracy.h"
#include "shardsim/app/evidence.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::cli {

int cmd_evidence(const std::vector<std::string>& args) {
  std::string file, record;
  std::vector<Override> sets;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--record") {
      record = take_value(args, i);
    } else if (a == "--set") {
      sets.push_back(parse_set(take_value(args, i)));
    } else if (a.rfind("--set=", 0) == 0) {
      sets.push_back(parse_set(a.substr(6)));
    } else {
      take_scenario_file("evidence", a, file);
    }
  }
  if (file.empty()) throw UsageError("evidence: expected a scenario file (shardsim evidence --help)");
  const Scenario s = load_scenario(file, sets);
  const Evidence e = record.empty()
                         ? find_evidence(s, embedded_accuracy_record(), "the accuracy record embedded at build time")
                         : find_evidence(s, read_accuracy_record(record), record);
  std::fputs((json ? evidence_json(e) : evidence_text(e)).c_str(), stdout);
  return 0;
}

}  // namespace shardsim::cli
