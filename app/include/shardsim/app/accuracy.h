// Accuracy as a regression-tested property: a checked-in record of every
// validation row's error and of the aggregate statistics, and the check of
// a later validation run against it (`shardsim validate --record FILE` and
// `--against FILE`; CTest runs the check on examples/validation).
#pragma once

#include <string>
#include <vector>

#include "shardsim/app/validation.h"

namespace shardsim {

/// How much a later run may lose against the record before the check
/// fails: per row and for a group's max, in absolute error (0.005: half a
/// percentage point); for a group's mean, likewise.
struct AccuracyTolerance {
  double row_abs_error = 0.005;
  double mean_abs_error = 0.002;
  double max_abs_error = 0.005;
};

/// The record of `r`: every row's |error| and whether its scenario fits,
/// each group's row count, mean and max |error|, the memory statistics and
/// the count judged out of memory, with the tolerances (one JSON object,
/// rows in the report's order).
std::string accuracy_record_json(const ValidationReport& r, const AccuracyTolerance& tolerance = {});

/// Writes accuracy_record_json(r) to `file` whole (a temporary renamed into
/// place: never half a record); InputError naming the file when it cannot.
void write_accuracy_record(const ValidationReport& r, const std::string& file);
/// The text of the record `file`; InputError naming it when it cannot be read.
std::string read_accuracy_record(const std::string& file);

struct AccuracyCheck {
  /// What got worse beyond the tolerance, or changed shape (a row or a
  /// group gone or new): each fails the check.
  std::vector<std::string> regressions;
  /// What got better beyond the tolerance: the record can be tightened.
  std::vector<std::string> improvements;
  bool passed() const { return regressions.empty(); }
};

/// Compares `r` with the record in `record_text` (read from `file`, named
/// in errors). Throws InputError for a malformed record.
AccuracyCheck check_accuracy(const ValidationReport& r, const std::string& record_text, const std::string& file);

}  // namespace shardsim
