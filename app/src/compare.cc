#include "shardsim/app/compare.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "output.h"
#include "shardsim/core/error.h"
#include "shardsim/core/read_file.h"
#include "shardsim/viz/html_report.h"

namespace shardsim {
namespace {

using Json = nlohmann::json;

Json parse(const std::string& text, const std::string& file) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw InputError(file, "", std::string("not JSON: ") + e.what());
  }
}

double number_at(const Json& j, const std::string& file, const std::string& ptr) {
  const Json::json_pointer p(ptr);
  if (!j.contains(p) || !j.at(p).is_number()) {
    throw InputError(file, ptr, "expected a number (is this the --json output of the right command?)");
  }
  return j.at(p).get<double>();
}

/// The object of seconds per op kind at `ptr`, in key order.
std::vector<std::pair<std::string, double>> kinds_at(const Json& j, const std::string& file, const std::string& ptr) {
  const Json::json_pointer p(ptr);
  if (!j.contains(p) || !j.at(p).is_object()) throw InputError(file, ptr, "expected an object of seconds per op kind");
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [k, v] : j.at(p).items()) {
    if (!v.is_number()) throw InputError(file, ptr + "/" + k, "expected a number of seconds");
    out.emplace_back(k, v.get<double>());
  }
  return out;
}

/// The critical path's seconds by category, or nothing when the output has
/// no computed path (an older output, or one that skipped it).
std::vector<std::pair<std::string, double>> path_at(const Json& j, const std::string& file) {
  const std::string ptr = "/critical_path/by_category_s";
  const Json::json_pointer p(ptr);
  if (!j.contains(p)) return {};
  const Json& a = j.at(p);
  if (!a.is_array()) throw InputError(file, ptr, "expected a list of {category, s}");
  std::vector<std::pair<std::string, double>> out;
  for (size_t i = 0; i < a.size(); ++i) {
    const Json& e = a[i];
    if (!e.is_object() || !e.contains("category") || !e["category"].is_string() || !e.contains("s") ||
        !e["s"].is_number()) {
      throw InputError(file, ptr + "/" + std::to_string(i), "expected {\"category\": name, \"s\": seconds}");
    }
    out.emplace_back(e["category"].get<std::string>(), e["s"].get<double>());
  }
  return out;
}

/// (predicted − measured) / measured; NaN when nothing was measured.
double rel_error(double predicted, double measured) {
  return measured > 0 ? (predicted - measured) / measured : std::nan("");
}

nlohmann::ordered_json number_or_null(double v) {
  return std::isnan(v) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v);
}

/// Rows of a comparison as --json gives them, each named under `key`.
nlohmann::ordered_json rows_json(const std::vector<KindComparison>& rows, const char* key) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const KindComparison& k : rows) {
    out.push_back({{key, k.kind},
                   {"predicted_s", k.predicted_s},
                   {"measured_s", k.measured_s},
                   {"error_frac", number_or_null(k.error_frac)}});
  }
  return out;
}

/// A text table of `rows` under the heading `title`, its first column at
/// least `width` wide.
void append_table(std::string& out, const char* title, size_t width, const std::vector<KindComparison>& rows) {
  for (const KindComparison& k : rows) width = std::max(width, k.kind.size());
  const int w = static_cast<int>(width);
  detail::appendf(out, "%-*s %12s %12s %9s\n", w, title, "predicted_s", "measured_s", "error");
  for (const KindComparison& k : rows) {
    char err[32] = "      n/a";
    if (!std::isnan(k.error_frac)) std::snprintf(err, sizeof err, "%+8.1f%%", 100 * k.error_frac);
    detail::appendf(out, "%-*s %12.4f %12.4f %s\n", w, k.kind.c_str(), k.predicted_s, k.measured_s, err);
  }
}

}  // namespace

StepComparison compare_steps(const std::string& predicted_json, const std::string& predicted_file,
                             const std::string& measured_json, const std::string& measured_file) {
  const Json pj = parse(predicted_json, predicted_file), mj = parse(measured_json, measured_file);
  StepComparison c;
  c.predicted_step_time_s = number_at(pj, predicted_file, "/step_time_s");
  c.measured_step_time_s = number_at(mj, measured_file, "/step_time_s");
  c.step_time_error_frac = rel_error(c.predicted_step_time_s, c.measured_step_time_s);
  const auto predicted = kinds_at(pj, predicted_file, "/critical_device/compute_by_kind_s");
  const auto measured = kinds_at(mj, measured_file, "/time_by_kind_s");
  for (const auto& [kind, p] : predicted) {
    double m = 0;
    for (const auto& [mk, mv] : measured) {
      if (mk == kind) m = mv;
    }
    c.compute_by_kind.push_back({kind, p, m, rel_error(p, m)});
  }
  const auto pp = path_at(pj, predicted_file), mp = path_at(mj, measured_file);
  if (!pp.empty() && !mp.empty()) {
    auto seconds = [](const auto& list, const std::string& name) {
      for (const auto& [k, v] : list) {
        if (k == name) return v;
      }
      return -1.0;
    };
    for (const auto& [cat, p] : pp) {
      const double m = std::max(seconds(mp, cat), 0.0);
      c.critical_path.push_back({cat, p, m, rel_error(p, m)});
    }
    for (const auto& [cat, m] : mp) {
      if (seconds(pp, cat) < 0) c.critical_path.push_back({cat, 0, m, rel_error(0, m)});
    }
  }
  return c;
}

StepComparison compare_step_files(const std::string& predicted_file, const std::string& measured_file) {
  return compare_steps(read_file_text(predicted_file, "cannot read the file"), predicted_file,
                       read_file_text(measured_file, "cannot read the file"), measured_file);
}

std::string comparison_json(const StepComparison& c) {
  nlohmann::ordered_json out;
  out["predicted_step_time_s"] = c.predicted_step_time_s;
  out["measured_step_time_s"] = c.measured_step_time_s;
  out["step_time_error_frac"] = number_or_null(c.step_time_error_frac);
  out["compute_by_kind"] = rows_json(c.compute_by_kind, "kind");
  if (!c.critical_path.empty()) out["critical_path"] = rows_json(c.critical_path, "category");
  return out.dump(2) + "\n";
}

std::string comparison_text(const StepComparison& c) {
  std::string out;
  detail::appendf(out, "step time    predicted %.4f s, measured %.4f s, error %+.1f %%\n", c.predicted_step_time_s,
                  c.measured_step_time_s, 100 * c.step_time_error_frac);
  append_table(out, "kind", 12, c.compute_by_kind);
  if (!c.critical_path.empty()) append_table(out, "critical path", 13, c.critical_path);
  return out;
}

void write_comparison_report(const StepComparison& c, const std::string& title, const std::string& file) {
  HtmlReportInput in;
  in.title = title;
  in.predicted_step_s = c.predicted_step_time_s;
  in.measured_step_s = c.measured_step_time_s;
  for (const KindComparison& k : c.compute_by_kind) in.comparison.push_back({k.kind, k.predicted_s, k.measured_s});
  for (const KindComparison& k : c.critical_path) {
    in.path_comparison.push_back({k.kind, k.predicted_s, k.measured_s});
  }
  detail::write_output_file(file, html_report(in));
}

}  // namespace shardsim
