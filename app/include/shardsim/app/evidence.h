// How far to trust one prediction: what the accuracy record says about the
// published runs most like a scenario. The record
// (examples/validation/accuracy.json, `shardsim validate --record`) holds
// every validation row's |error| and direction with its framework, chip,
// GEMM precision and side of the protocol; `shardsim evidence` picks the
// rows that share the scenario's software stack, chip and precision, then
// fewer of them, and reports each side apart (docs/validation.md, "How far
// to trust one prediction").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "shardsim/app/validation.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim {

/// The record's rows at one level of likeness, on one side of the protocol.
struct EvidenceGroup {
  /// "framework, chip and precision", "framework and chip", "framework" or
  /// "chip"; for a serving scenario "engine, chip and metric" (one group per
  /// family of metrics: throughput, time to first token, time per output
  /// token, end-to-end latency), "engine and chip", "engine", "chip".
  std::string level;
  std::string label;  ///< the keys it matched, e.g. "megatron-core on gb200, bf16"
  std::string split;  ///< "held_out", "development" or "in_sample"
  /// Step time and throughput rows (serving: every metric); the bias is
  /// predicted speed over measured speed less 1 (positive: too fast).
  ValidationStats speed;
  /// Peak-memory rows; the bias is the signed error (positive: too much).
  ValidationStats memory;
  int runs = 0;           ///< scenarios with a time or throughput row: runs that ran
  int out_of_memory = 0;  ///< of those, the ones shardsim judged out of memory
};

/// The fewest speed rows a level needs to stand for a scenario.
inline constexpr int kEvidenceMinRows = 3;

struct Evidence {
  std::string scenario;   ///< the scenario's file, for the header
  std::string family;     ///< "training" or "serving" (an inference step is served)
  std::string framework;  ///< the plan's framework, or the serving engine
  std::string chip;
  std::string precision;  ///< precision_label(plan) for training, "" for serving
  /// With a measured calibration profile (cluster.calibration): only rows
  /// simulated with one stand for it, and only it for them.
  bool calibrated = false;
  std::string record;  ///< where the record came from
  /// From the most specific level to the least; each level's sides in the
  /// order held_out, development, in_sample; only groups with rows.
  std::vector<EvidenceGroup> groups;
  /// The level that stands for the scenario: the most specific one whose
  /// sides hold at least kEvidenceMinRows speed rows together ("" when none
  /// does); each of its sides is reported apart.
  std::string closest;
};

/// The evidence for `s` in the record `record_text`; `record_name` names it
/// in errors and in the output. Throws InputError (naming `record_name` and
/// the JSON path) for a malformed record.
Evidence find_evidence(const Scenario& s, std::string_view record_text, const std::string& record_name);

/// The accuracy record as it was when this build was made.
std::string_view embedded_accuracy_record();

/// A split as the output names it: "held out", "development", "in sample".
std::string evidence_side(const std::string& split);

/// The evidence as the table `shardsim evidence` prints, and as one JSON
/// object (`--json`).
std::string evidence_text(const Evidence& e);
std::string evidence_json(const Evidence& e);

}  // namespace shardsim
