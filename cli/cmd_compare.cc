// shardsim compare: predicted (`shardsim simulate --json`) against measured
// (`shardsim run --json`) step time and compute time per op kind
// (app/compare.h does the work).
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/app/compare.h"

namespace shardsim::cli {

int cmd_compare(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  std::string report;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--report") {
      report = take_value(args, i);
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("compare: unknown option " + a);
    } else {
      files.push_back(a);
    }
  }
  if (files.size() != 2) throw UsageError("compare: expected PREDICTED.json MEASURED.json (shardsim compare --help)");
  const StepComparison c = compare_step_files(files[0], files[1]);
  if (!report.empty()) write_comparison_report(c, "shardsim compare: " + files[0] + " against " + files[1], report);
  std::fputs((json ? comparison_json(c) : comparison_text(c)).c_str(), stdout);
  return 0;
}

}  // namespace shardsim::cli
