// Predicted against measured: a simulated step (`shardsim simulate --json`)
// against a real run of the same scenario (`shardsim run --json`), step time
// compute time per op kind and the critical path's time by category. What `shardsim compare` and
// `shardsim.compare` call.
#pragma once

#include <string>
#include <vector>

namespace shardsim {

/// One compute op kind (those the prediction names: the measurement also
/// lists communication kinds, which overlap compute and are left out).
struct KindComparison {
  std::string kind;
  double predicted_s = 0;
  double measured_s = 0;  ///< 0 when the run has no such kind
  double error_frac = 0;  ///< (predicted − measured) / measured; NaN when nothing was measured
};

struct StepComparison {
  double predicted_step_time_s = 0;
  double measured_step_time_s = 0;
  double step_time_error_frac = 0;  ///< NaN when the measured step time is 0
  std::vector<KindComparison> compute_by_kind;
  /// The critical path's time by category ("compute: matmul", "tp comm:
  /// all-reduce", ...; `kind` holds it), when both outputs carry a computed
  /// path (/critical_path/by_category_s): the predicted categories in their
  /// order, then those only the run has. Each side sums to its step time.
  std::vector<KindComparison> critical_path;
};

/// Compares the two JSON texts; `predicted_file` and `measured_file` name
/// them in errors. Throws InputError (file, JSON path, what was expected)
/// when a text is not JSON or lacks /step_time_s, the prediction's
/// /critical_device/compute_by_kind_s or the run's /time_by_kind_s, or when
/// a /critical_path/by_category_s is not a list of {category, s}.
StepComparison compare_steps(const std::string& predicted_json, const std::string& predicted_file,
                             const std::string& measured_json, const std::string& measured_file);
/// The same, reading the two files.
StepComparison compare_step_files(const std::string& predicted_file, const std::string& measured_file);

/// `shardsim compare --json` (errors that cannot be computed are null) and
/// its table.
std::string comparison_json(const StepComparison& c);
std::string comparison_text(const StepComparison& c);
/// The HTML page of the comparison, titled `title`, written atomically;
/// throws UsageError when the file cannot be written.
void write_comparison_report(const StepComparison& c, const std::string& title, const std::string& file);

}  // namespace shardsim
