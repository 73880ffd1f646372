#include "shardsim/app/evidence.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "accuracy_record_data.h"
#include "output.h"
#include "shardsim/core/error.h"
#include "shardsim/workloads/framework.h"

namespace shardsim {
namespace {

using detail::appendf;

/// One row of the record, as far as the evidence needs it.
struct RecordRow {
  std::string scenario, metric, split, kind, framework, chip, precision;
  double abs_error = 0, bias = 0;
  bool fits = true;
  bool calibrated = false;
};

std::vector<RecordRow> read_rows(std::string_view text, const std::string& file) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw InputError(file, "", "expected an accuracy record (a JSON object)");
  if (!j.contains("rows") || !j["rows"].is_array()) throw InputError(file, "/rows", "expected an array of rows");
  std::vector<RecordRow> rows;
  rows.reserve(j["rows"].size());
  for (size_t i = 0; i < j["rows"].size(); ++i) {
    const auto& r = j["rows"][i];
    const std::string at = "/rows/" + std::to_string(i);
    if (!r.is_object()) throw InputError(file, at, "expected an object");
    auto text_field = [&](const char* key) {
      if (!r.contains(key) || !r[key].is_string()) throw InputError(file, at + "/" + key, "expected a string");
      return r[key].get<std::string>();
    };
    auto number = [&](const char* key) {
      if (!r.contains(key) || !r[key].is_number()) throw InputError(file, at + "/" + key, "expected a number");
      return r[key].get<double>();
    };
    RecordRow row;
    row.scenario = text_field("scenario");
    row.metric = text_field("metric");
    row.split = text_field("split");
    row.kind = text_field("kind");
    if (row.kind != "time" && row.kind != "memory" && row.kind != "serving") {
      throw InputError(file, at + "/kind", "expected \"time\", \"memory\" or \"serving\", got \"" + row.kind + "\"");
    }
    row.framework = text_field("framework");
    row.chip = text_field("chip");
    row.precision = text_field("precision");
    row.abs_error = number("abs_error");
    row.bias = number("bias");
    if (!(row.abs_error >= 0)) throw InputError(file, at + "/abs_error", "expected a number >= 0");
    if (!r.contains("fits") || !r["fits"].is_boolean()) throw InputError(file, at + "/fits", "expected true or false");
    row.fits = r["fits"].get<bool>();
    // Optional: records written before it was added hold no calibrated rows.
    if (r.contains("calibrated")) {
      if (!r["calibrated"].is_boolean()) throw InputError(file, at + "/calibrated", "expected true or false");
      row.calibrated = r["calibrated"].get<bool>();
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

/// A level of likeness: which of the scenario's keys a row must share. The
/// third key is the GEMM precision of a training row, the metric family of
/// a serving row (a serve reports every family, and the engines' rows
/// differ by family more than by anything else).
struct Level {
  const char* training;
  const char* serving;
  bool framework, chip, third;
};
constexpr std::array<Level, 4> kLevels = {{
    {"framework, chip and precision", "engine, chip and metric", true, true, true},
    {"framework and chip", "engine and chip", true, true, false},
    {"framework", "engine", true, false, false},
    {"chip", "chip", false, true, false},
}};
constexpr std::array<const char*, 3> kSplits = {"held_out", "development", "in_sample"};
constexpr std::array<const char*, 4> kMetricFamilies = {"throughput", "time to first token", "time per output token",
                                                        "end-to-end latency"};

/// The family of a serving metric (app/validation.h, validate_serving).
std::string metric_family(const std::string& metric) {
  auto starts = [&](const char* p) { return metric.rfind(p, 0) == 0; };
  if (starts("ttft")) return kMetricFamilies[1];
  if (starts("tpot") || starts("itl")) return kMetricFamilies[2];
  if (starts("e2e")) return kMetricFamilies[3];
  return kMetricFamilies[0];
}
/// The keys a group shares; `third` is the precision or the metric family.
std::string level_label(const Evidence& e, const Level& l, const std::string& third) {
  const bool serving = e.family == "serving";
  std::string label;
  if (l.framework && l.chip) {
    label = e.framework + " on " + e.chip + (l.third ? ", " + third : "");
  } else if (l.framework) {
    label = e.framework + ", any chip";
  } else {
    label = e.chip + (serving ? ", any engine" : ", any framework");
  }
  return e.calibrated ? label + ", calibrated" : label;
}

/// `part` of `whole` in whole percent, rounded (as docs/validation.md's tables).
int share(int part, int whole) {
  return static_cast<int>(std::lround(100.0 * part / whole));
}

std::string percent(double x) {
  std::string s;
  appendf(s, "%.1f%%", 100 * x);
  return s;
}

std::string signed_percent(double x) {
  std::string s;
  appendf(s, "%+.1f%%", 100 * x);
  return s;
}

/// Errors are reported to 1e-6, as the record holds them.
double rounded(double x) {
  return std::round(x * 1e6) / 1e6;
}

}  // namespace

std::string evidence_side(const std::string& split) {
  if (split == "held_out") return "held out";
  if (split == "in_sample") return "in sample";
  return split;
}

std::string_view embedded_accuracy_record() {
  return {detail::kAccuracyRecord, sizeof detail::kAccuracyRecord - 1};
}

Evidence find_evidence(const Scenario& s, std::string_view record_text, const std::string& record_name) {
  const std::vector<RecordRow> rows = read_rows(record_text, record_name);
  Evidence e;
  e.scenario = s.file;
  e.record = record_name;
  e.family = s.plan.inference() || s.serving.present ? "serving" : "training";
  const bool serving = e.family == "serving";
  e.framework = serving ? s.serving.engine : std::string(to_string(s.plan.framework));
  e.chip = s.cluster.chip.name;
  e.precision = serving ? "" : precision_label(s.plan);
  e.calibrated = s.cluster.calibration != nullptr;
  for (const Level& level : kLevels) {
    // The third key's values: the scenario's precision, or every metric
    // family (a serve reports them all); none below the first level.
    std::vector<std::string> thirds = {""};
    if (level.third) {
      thirds = serving ? std::vector<std::string>(kMetricFamilies.begin(), kMetricFamilies.end())
                       : std::vector<std::string>{e.precision};
    }
    int level_rows = 0;
    for (const std::string& third : thirds) {
      for (const char* split : kSplits) {
        EvidenceGroup g;
        g.level = serving ? level.serving : level.training;
        g.label = level_label(e, level, third);
        g.split = split;
        std::set<std::string> ran, overflowed;
        for (const RecordRow& r : rows) {
          // A row simulated with a measured profile checks the engine given
          // measured rates, not the presets: it stands only for scenarios
          // that carry one too, and the other way round.
          if (r.split != split || (r.kind == "serving") != serving || r.calibrated != e.calibrated) continue;
          if ((level.framework && r.framework != e.framework) || (level.chip && r.chip != e.chip)) continue;
          if (level.third && (serving ? metric_family(r.metric) : r.precision) != third) continue;
          if (r.kind == "memory") {
            g.memory.add(r.abs_error, r.bias);
          } else {
            g.speed.add(r.abs_error, r.bias);
          }
          // A row that measured a time, a throughput or a peak memory comes
          // from a run that ran: it must fit (validation.cc, summarise).
          if (r.kind != "memory" || r.metric == "peak_memory_GiB") {
            ran.insert(r.scenario);
            if (!r.fits) overflowed.insert(r.scenario);
          }
        }
        g.runs = static_cast<int>(ran.size());
        g.out_of_memory = static_cast<int>(overflowed.size());
        if (g.speed.n == 0 && g.memory.n == 0) continue;
        level_rows += g.speed.n;
        e.groups.push_back(std::move(g));
      }
    }
    if (e.closest.empty() && level_rows >= kEvidenceMinRows) e.closest = serving ? level.serving : level.training;
  }
  return e;
}

std::string evidence_text(const Evidence& e) {
  std::string out;
  appendf(out, "evidence for %s: %s (%s%s)\n", e.scenario.c_str(),
          (e.framework + " on " + e.chip + (e.precision.empty() ? "" : ", " + e.precision)).c_str(), e.family.c_str(),
          e.calibrated ? ", with a calibration profile" : "");
  appendf(out, "  how shardsim did on the published runs like it (%s)\n", e.record.c_str());
  if (e.groups.empty()) {
    out += "  no row of the record shares this scenario's framework or chip: the prediction is unvalidated\n";
    return out;
  }
  int width = 12;  // "rows like it"
  for (const EvidenceGroup& g : e.groups) width = std::max(width, static_cast<int>(g.label.size()));
  appendf(out, "  %-*s  %-12s %5s %13s %8s %19s %14s  %s\n", width, "rows like it", "side", "rows", "mean |error|",
          "max", "speed (share fast)", "out of memory", "peak memory: rows, mean |error|, signed");
  std::string last_label;
  for (const EvidenceGroup& g : e.groups) {
    const std::string label = g.label == last_label ? "" : g.label;
    last_label = g.label;
    std::string speed = "-", mean = "-", max = "-", rows = "0";
    if (g.speed.n > 0) {
      rows = std::to_string(g.speed.n);
      mean = percent(g.speed.mean());
      max = percent(g.speed.max);
      speed = signed_percent(g.speed.bias()) + " (" + std::to_string(share(g.speed.high, g.speed.n)) + "%)";
    }
    const std::string oom = std::to_string(g.out_of_memory) + " of " + std::to_string(g.runs);
    std::string memory = "-";
    if (g.memory.n > 0) {
      memory = std::to_string(g.memory.n) + ", " + percent(g.memory.mean()) + ", " + signed_percent(g.memory.bias());
    }
    appendf(out, "  %-*s  %-12s %5s %13s %8s %19s %14s  %s\n", width, label.c_str(), evidence_side(g.split).c_str(),
            rows.c_str(), mean.c_str(), max.c_str(), speed.c_str(), oom.c_str(), memory.c_str());
  }
  if (e.closest.empty()) {
    appendf(out, "  closest: no level holds %d time or throughput rows: too little evidence to bound the error\n",
            kEvidenceMinRows);
    return out;
  }
  bool first = true;
  for (const EvidenceGroup& g : e.groups) {
    if (g.level != e.closest || g.speed.n == 0) continue;
    appendf(out, "  %s %s, %d %s row%s: predictions %s off on average (max %s), too fast on %d (mean speed %s)\n",
            first ? "closest:" : "        ", g.label.c_str(), g.speed.n, evidence_side(g.split).c_str(),
            g.speed.n == 1 ? "" : "s", percent(g.speed.mean()).c_str(), percent(g.speed.max).c_str(), g.speed.high,
            signed_percent(g.speed.bias()).c_str());
    first = false;
  }
  out += "  held-out rows were never tuned on; development and in-sample rows were (docs/validation.md)\n";
  return out;
}

std::string evidence_json(const Evidence& e) {
  using OrderedJson = nlohmann::ordered_json;
  OrderedJson j;
  j["scenario"] = e.scenario;
  j["family"] = e.family;
  j["framework"] = e.framework;
  j["chip"] = e.chip;
  j["precision"] = e.precision;
  j["calibrated"] = e.calibrated;
  j["record"] = e.record;
  j["groups"] = OrderedJson::array();
  for (const EvidenceGroup& g : e.groups) {
    j["groups"].push_back({{"level", g.level},
                           {"label", g.label},
                           {"split", g.split},
                           {"rows", g.speed.n},
                           {"mean_abs_error", rounded(g.speed.mean())},
                           {"max_abs_error", rounded(g.speed.max)},
                           {"mean_bias", rounded(g.speed.bias())},
                           {"rows_high", g.speed.high},
                           {"runs", g.runs},
                           {"out_of_memory", g.out_of_memory},
                           {"memory_rows", g.memory.n},
                           {"memory_mean_abs_error", rounded(g.memory.mean())},
                           {"memory_max_abs_error", rounded(g.memory.max)},
                           {"memory_mean_bias", rounded(g.memory.bias())}});
  }
  j["closest"] = e.closest.empty() ? OrderedJson(nullptr) : OrderedJson(e.closest);
  return j.dump(1, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

}  // namespace shardsim
