#include "run_report.h"

#include <cstdio>

#include "shardsim/app/real_run.h"

namespace shardsim::cli {

int report_measured_run(const Scenario& s, const ProgramSet& ps, realexec::MeasuredRun run, const ReportOptions& opt) {
  add_send_flows(s, ps, run);
  const CriticalPathReport cp = measured_critical_path(s, ps, run);
  if (!opt.trace_file.empty()) write_real_run_trace(opt.trace_file, ps, run);
  std::fputs((opt.json ? real_run_json(ps, run, cp) : real_run_text(s, ps, run, cp, opt.trace_file)).c_str(), stdout);
  if (run.verify.mismatches > 0) {
    std::fprintf(stderr, "shardsim: error: verify failed: %lld mismatches; first: %s\n",
                 static_cast<long long>(run.verify.mismatches), run.verify.first_mismatch.c_str());
    return 1;
  }
  return 0;
}

}  // namespace shardsim::cli
