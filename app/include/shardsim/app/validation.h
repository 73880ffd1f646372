// Predicted against published runs: `shardsim validate` over a directory of
// scenarios that carry published figures, with the statistics of an honest
// protocol (rows used during development or to fit a parameter reported
// apart from the held-out ones, per split, framework, chip and source).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "shardsim/core/step_report.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

struct ValidationRow {
  std::string scenario;  ///< file name, relative to the validated directory
  std::string row;       ///< the published row's id (modern set), or ""
  std::string split;     ///< "held_out", "development" or "in_sample"
  std::string source;    ///< the source's short id
  std::string framework;
  std::string chip;
  /// Training rows: the linear layers' GEMM format and its recipe ("bf16",
  /// "fp8 delayed", "fp8 mxfp8", "fp4 nvfp4", ...); "" for serving rows.
  std::string precision;
  std::string metric;
  double published = 0;
  double predicted = 0;
  double error = 0;          ///< (predicted - published) / published
  bool performance = false;  ///< a time or throughput metric (memory otherwise)
  bool fitted = false;       ///< the row was used to fit a named parameter
  bool fits = true;          ///< the scenario fits in memory (every published run did)
  bool serving = false;      ///< a serving benchmark's figure (framework is then the engine)
  bool calibrated = false;   ///< simulated with a measured calibration profile (cluster.calibration)
};

/// The metrics a scenario's "published" object may name:
///   step_time_s                 seconds per iteration
///   tokens_per_s_per_device     tokens of the step / (step time · devices)
///   megatron_tflops_per_gpu     Narayanan et al.'s F = 96·B·s·l·h²·(1 + s/(6h)
///                               + V/(16·l·h)) per iteration over (time · GPUs):
///                               the FLOP count their TFLOP/s column uses
///   activations_GiB             the activation component of peak memory
///   weights_and_optimizer_GiB   weights + gradients + optimizer state
///   peak_memory_GiB             what a caching allocator reserves at the peak
///                               (PyTorch's max_memory_reserved): the peak
///                               less the stack's fixed reservation
/// Throws InputError for an unknown metric.
std::vector<ValidationRow> validate_scenario(const Scenario& s, const StepReport& r);

struct ServeSummary;
/// A serving scenario's published figures against `shardsim serve`'s:
///   output_tokens_per_s_per_device, output_tokens_per_s, total_tokens_per_s
///   ttft_{mean,p50,p99}_s, tpot_{mean,p50,p99}_s, itl_{mean,p50,p99}_s,
///   e2e_mean_s, e2e_p50_s        (the definitions of app/serve.h)
/// Throws InputError for an unknown metric.
std::vector<ValidationRow> validate_serving(const Scenario& s, const ServeSummary& r);

/// A training plan's GEMM format and recipe as validation groups name it
/// ("bf16", "fp8 delayed", "fp8 mxfp8", "fp4 nvfp4", ...).
std::string precision_label(const Plan& p);

/// A published row the scenario generator could not express (the
/// directory's manifest.json lists them with the reason).
struct SkippedRow {
  std::string row, split, framework, chip, reason;
};

/// A row's signed direction, as ValidationStats sums it (below): predicted
/// speed over measured speed less 1 for time and throughput rows, the error
/// itself for memory rows.
double row_bias(const ValidationRow& r);

/// A group's |error| and its direction. `bias` is signed: for time and
/// throughput rows predicted speed over measured speed, less 1 (published /
/// predicted - 1 for a time, predicted / published - 1 for a rate), so
/// positive means predicted too fast; for memory rows the error itself,
/// positive meaning predicted too much. `high` counts the rows above 0.
struct ValidationStats {
  int n = 0;
  double sum = 0, max = 0;
  double bias_sum = 0;
  int high = 0;
  void add(double error, double bias);
  double mean() const { return n ? sum / n : 0; }
  double bias() const { return n ? bias_sum / n : 0; }
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  std::vector<SkippedRow> skipped;
  /// Time and throughput statistics by group: "all", "held_out",
  /// "development", "in_sample", "fitted", and "<split> / framework X",
  /// "<split> / chip X", "<split> / source X"; serving rows apart as
  /// "serving", "serving <split>", "serving <split> / framework <engine>",
  /// ... and "serving <split> / metric M".
  std::map<std::string, ValidationStats> performance;
  ValidationStats memory;
  /// Memory statistics by group, as performance's: "<split>", "<split> /
  /// framework X", "<split> / chip X", "<split> / source X".
  std::map<std::string, ValidationStats> memory_groups;
  /// Scenarios of published runs (a time, a throughput or a measured peak
  /// memory: they ran) that shardsim judges out of memory.
  int out_of_memory = 0;
  /// The same, by split.
  std::map<std::string, int> out_of_memory_by_split;
};

/// Loads every scenario with a "published" object under `dir` (recursively,
/// in sorted path order), simulates it (the replica shortcut whenever dp >
/// 1) on `threads` threads (<= 0: every core), and compares. With `check_only`, loads and
/// checks every scenario without simulating (rows stay empty). A non-empty
/// `split` simulates only the scenarios on that side of the protocol (while
/// developing: "development", so that held-out rows are not looked at).
/// `progress`
/// (may be empty) is told each finished file. Throws InputError for a bad
/// scenario or manifest.
ValidationReport validate_directory(const std::string& dir, int threads, bool check_only,
                                    const std::function<void(size_t done, size_t total)>& progress = {},
                                    const std::string& split = "");

/// The report as a table (the summary `shardsim validate` prints) and as
/// one JSON object.
std::string validation_table(const ValidationReport& r);
std::string validation_json(const ValidationReport& r);

}  // namespace shardsim
