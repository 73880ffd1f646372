// One self-contained HTML page (inline SVG, no script, no network) that
// shows a simulated step: the breakdown, a timeline of a few devices, memory
// over the step, a roofline of the ops and, for a search, the plans it
// simulated as step time against peak memory with the Pareto front, and how
// far off the predictions of the published runs most like it were.
#pragma once

#include <string>
#include <vector>

#include "shardsim/core/program.h"
#include "shardsim/core/step_report.h"
#include "shardsim/core/timeline.h"

namespace shardsim {

/// One simulated plan of a search.
struct ReportPlanPoint {
  std::string label;
  double step_time_s = 0;
  int64_t peak_bytes = 0;
  bool best = false;
  bool from_scenario = false;
};

/// One op kind of a predicted-against-measured comparison.
struct ReportComparisonRow {
  std::string kind;
  double predicted_s = 0;
  double measured_s = 0;
};

/// One level and side of the validation rows like the scenario
/// (app/evidence.h): how far off the predictions of those published runs were.
struct ReportEvidenceRow {
  std::string label;  ///< the keys the rows share, e.g. "megatron-core on h100-sxm, bf16"
  std::string side;   ///< "held out", "development" or "in sample"
  int rows = 0;
  double mean_abs_error = 0, max_abs_error = 0;
  double mean_bias = 0;  ///< predicted speed over measured, less 1
  int rows_fast = 0;
  bool closest = false;  ///< of the level that stands for the scenario
};

struct HtmlReportInput {
  std::string title;
  std::string plan_summary;  ///< one line describing the plan
  const StepReport* step = nullptr;
  const ProgramSet* programs = nullptr;
  const Timeline* timeline = nullptr;  ///< spans of the devices to draw
  double peak_flops_per_s = 0;         ///< the roof of the roofline (dense bf16)
  double hbm_bytes_per_s = 0;
  std::vector<ReportPlanPoint> plans;  ///< empty unless from a search
  /// `shardsim compare`: step times and compute time per op kind.
  double predicted_step_s = 0, measured_step_s = 0;
  std::vector<ReportComparisonRow> comparison;
  /// The critical path's time by category, predicted and measured (empty
  /// when either side has no path).
  std::vector<ReportComparisonRow> path_comparison;
  /// Where the evidence came from ("": no evidence section) and its rows
  /// (none: no published run shares the scenario's framework or chip).
  std::string evidence_record;
  std::vector<ReportEvidenceRow> evidence;
};

std::string html_report(const HtmlReportInput& in);

}  // namespace shardsim
