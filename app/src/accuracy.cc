#include "shardsim/app/accuracy.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "shardsim/core/atomic_file.h"
#include "shardsim/core/error.h"
#include "shardsim/core/read_file.h"

namespace shardsim {
namespace {

using OrderedJson = nlohmann::ordered_json;

/// Errors are recorded to 1e-6 (a ten-thousandth of a percentage point):
/// readable, and far below any tolerance.
double rounded(double x) {
  return std::round(x * 1e6) / 1e6;
}

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * x);
  return buf;
}

OrderedJson stats_json(const ValidationStats& st) {
  return OrderedJson{{"rows", st.n}, {"mean_abs_error", rounded(st.mean())}, {"max_abs_error", rounded(st.max)}};
}

std::string row_key(const std::string& scenario, const std::string& metric) {
  return scenario + " " + metric;
}

/// A field of the record, checked: `what` names the expectation in errors.
const nlohmann::json& field(const nlohmann::json& j, const char* key, const std::string& file, const std::string& ptr,
                            const char* what) {
  if (!j.is_object() || !j.contains(key)) throw InputError(file, ptr + "/" + key, std::string("expected ") + what);
  return j[key];
}

double number(const nlohmann::json& j, const char* key, const std::string& file, const std::string& ptr) {
  const auto& v = field(j, key, file, ptr, "a number");
  if (!v.is_number()) throw InputError(file, ptr + "/" + key, "expected a number");
  return v.get<double>();
}

}  // namespace

std::string accuracy_record_json(const ValidationReport& r, const AccuracyTolerance& tol) {
  OrderedJson j;
  j["note"] =
      "shardsim validate's accuracy record: CTest fails when a row's or a group's |error| grows beyond the "
      "tolerance. Re-record (scripts/record_accuracy.sh) only with the reason in the commit message.";
  j["tolerance"] = {{"row_abs_error", tol.row_abs_error},
                    {"mean_abs_error", tol.mean_abs_error},
                    {"max_abs_error", tol.max_abs_error}};
  j["rows"] = OrderedJson::array();
  for (const auto& row : r.rows) {
    // The row's groups and direction ride along, so that tables of the
    // record (scripts/validation_tables.py) need no simulation.
    j["rows"].push_back({{"scenario", row.scenario},
                         {"metric", row.metric},
                         {"split", row.split},
                         {"kind", row.serving       ? "serving"
                                  : row.performance ? "time"
                                                    : "memory"},
                         {"source", row.source},
                         {"framework", row.framework},
                         {"chip", row.chip},
                         {"precision", row.precision},
                         {"calibrated", row.calibrated},
                         {"abs_error", rounded(std::fabs(row.error))},
                         {"bias", rounded(row_bias(row))},
                         {"fits", row.fits}});
  }
  j["performance"] = OrderedJson::object();
  for (const auto& [key, st] : r.performance) j["performance"][key] = stats_json(st);
  j["memory"] = stats_json(r.memory);
  j["memory_groups"] = OrderedJson::object();
  for (const auto& [key, st] : r.memory_groups) j["memory_groups"][key] = stats_json(st);
  j["out_of_memory"] = r.out_of_memory;
  j["out_of_memory_by_split"] = OrderedJson::object();
  for (const auto& [split, n] : r.out_of_memory_by_split) j["out_of_memory_by_split"][split] = n;
  return j.dump(1, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

AccuracyCheck check_accuracy(const ValidationReport& r, const std::string& text, const std::string& file) {
  const nlohmann::json rec = nlohmann::json::parse(text, nullptr, false);
  if (rec.is_discarded() || !rec.is_object()) throw InputError(file, "", "expected an accuracy record (a JSON object)");
  const auto& tj = field(rec, "tolerance", file, "", "the tolerances");
  const AccuracyTolerance tol{number(tj, "row_abs_error", file, "/tolerance"),
                              number(tj, "mean_abs_error", file, "/tolerance"),
                              number(tj, "max_abs_error", file, "/tolerance")};
  AccuracyCheck out;

  // Rows.
  std::map<std::string, const ValidationRow*> now;
  for (const auto& row : r.rows) now[row_key(row.scenario, row.metric)] = &row;
  const auto& rows = field(rec, "rows", file, "", "an array of rows");
  if (!rows.is_array()) throw InputError(file, "/rows", "expected an array of rows");
  std::map<std::string, bool> recorded;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string ptr = "/rows/" + std::to_string(i);
    const auto& sc = field(rows[i], "scenario", file, ptr, "a scenario path");
    const auto& me = field(rows[i], "metric", file, ptr, "a metric name");
    if (!sc.is_string() || !me.is_string()) throw InputError(file, ptr, "expected scenario and metric strings");
    const double was = number(rows[i], "abs_error", file, ptr);
    const auto& fits = field(rows[i], "fits", file, ptr, "a boolean");
    if (!fits.is_boolean()) throw InputError(file, ptr + "/fits", "expected a boolean");
    const std::string key = row_key(sc.get<std::string>(), me.get<std::string>());
    recorded[key] = true;
    const auto it = now.find(key);
    if (it == now.end()) {
      out.regressions.push_back(key + ": recorded, but no longer validated");
      continue;
    }
    const double is = std::fabs(it->second->error);
    if (is > was + tol.row_abs_error) {
      out.regressions.push_back(key + ": |error| " + percent(was) + " -> " + percent(is));
    } else if (is < was - tol.row_abs_error) {
      out.improvements.push_back(key + ": |error| " + percent(was) + " -> " + percent(is));
    }
    if (fits.get<bool>() && !it->second->fits) out.regressions.push_back(key + ": fitted in memory, now does not");
  }
  for (const auto& [key, row] : now) {
    if (!recorded.count(key)) out.regressions.push_back(key + ": validated but not in the record (re-record)");
  }

  // Groups.
  auto compare = [&](const std::string& name, const nlohmann::json& was, const ValidationStats& st,
                     const std::string& ptr) {
    const double n = number(was, "rows", file, ptr);
    const double mean = number(was, "mean_abs_error", file, ptr), max = number(was, "max_abs_error", file, ptr);
    if (static_cast<int>(n) != st.n) {
      out.regressions.push_back(name + ": " + std::to_string(static_cast<int>(n)) + " rows recorded, " +
                                std::to_string(st.n) + " now (re-record)");
      return;
    }
    if (st.mean() > mean + tol.mean_abs_error) {
      out.regressions.push_back(name + ": mean |error| " + percent(mean) + " -> " + percent(st.mean()));
    } else if (st.mean() < mean - tol.mean_abs_error) {
      out.improvements.push_back(name + ": mean |error| " + percent(mean) + " -> " + percent(st.mean()));
    }
    if (st.max > max + tol.max_abs_error) {
      out.regressions.push_back(name + ": max |error| " + percent(max) + " -> " + percent(st.max));
    }
  };
  // Each group of the record against the same group now: "what" names
  // them in messages, "key" is the record's field.
  auto groups = [&](const char* key, const char* what, const std::map<std::string, ValidationStats>& now_groups) {
    const auto& rec_groups = field(rec, key, file, "", "an object of groups");
    const std::string ptr = std::string("/") + key;
    if (!rec_groups.is_object()) throw InputError(file, ptr, "expected an object of groups");
    for (auto it = rec_groups.begin(); it != rec_groups.end(); ++it) {
      const auto found = now_groups.find(it.key());
      if (found == now_groups.end()) {
        out.regressions.push_back(std::string(what) + ", " + it.key() + ": recorded, but no longer validated");
        continue;
      }
      compare(std::string(what) + ", " + it.key(), it.value(), found->second, ptr + "/" + it.key());
    }
    for (const auto& [name, st] : now_groups) {
      if (!rec_groups.contains(name))
        out.regressions.push_back(std::string(what) + ", " + name + ": not in the record");
    }
  };
  groups("performance", "time and throughput", r.performance);
  compare("memory", field(rec, "memory", file, "", "the memory statistics"), r.memory, "/memory");
  groups("memory_groups", "memory", r.memory_groups);
  const double oom = number(rec, "out_of_memory", file, "");
  if (r.out_of_memory > static_cast<int>(oom)) {
    out.regressions.push_back("published runs judged out of memory: " + std::to_string(static_cast<int>(oom)) + " -> " +
                              std::to_string(r.out_of_memory));
  }
  const auto& oom_split = field(rec, "out_of_memory_by_split", file, "", "an object of counts by split");
  if (!oom_split.is_object())
    throw InputError(file, "/out_of_memory_by_split", "expected an object of counts by split");
  for (const auto& [split, n] : r.out_of_memory_by_split) {
    const double was =
        oom_split.contains(split) ? number(oom_split, split.c_str(), file, "/out_of_memory_by_split") : 0;
    if (n > static_cast<int>(was)) {
      out.regressions.push_back("published runs judged out of memory, " + split + ": " +
                                std::to_string(static_cast<int>(was)) + " -> " + std::to_string(n));
    }
  }
  return out;
}

void write_accuracy_record(const ValidationReport& r, const std::string& file) {
  std::string err;
  if (!write_file_atomic(file, accuracy_record_json(r), err)) {
    throw InputError(file, "", "cannot write the accuracy record (" + err + ")");
  }
}

std::string read_accuracy_record(const std::string& file) {
  return read_file_text(file, "cannot read the accuracy record");
}

}  // namespace shardsim
