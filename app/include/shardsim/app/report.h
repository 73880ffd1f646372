// Writes the HTML report of a scenario's step (and of a search's plans).
#pragma once

#include <string>
#include <vector>

#include "shardsim/viz/html_report.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

/// Devices the report draws: device 0 and the first device of each further
/// pipeline stage (data-parallel replica 0), at most four.
std::vector<uint32_t> report_devices(const Scenario& s);

/// The page's title for a scenario's step: "shardsim report: MODEL on N x CHIP".
std::string step_report_title(const Scenario& s);

/// Simulates `s` with its report devices traced and writes the page to
/// `out` atomically. Throws UsageError when the file cannot be written.
void write_step_report(const Scenario& s, const std::string& out, const std::string& title,
                       std::vector<ReportPlanPoint> plans = {});

}  // namespace shardsim
