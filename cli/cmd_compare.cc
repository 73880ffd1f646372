// shardsim compare: predicted (`shardsim simulate --json`) against measured
// (`shardsim run --json`) step time and compute time per op kind.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/core/atomic_file.h"
#include "shardsim/core/error.h"
#include "shardsim/viz/html_report.h"

namespace shardsim::cli {
namespace {

using Json = nlohmann::json;

Json read_json(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file, "", "cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return Json::parse(ss.str());
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

std::map<std::string, double> kinds_at(const Json& j, const std::string& file, const std::string& ptr) {
  const Json::json_pointer p(ptr);
  if (!j.contains(p) || !j.at(p).is_object()) throw InputError(file, ptr, "expected an object of seconds per op kind");
  std::map<std::string, double> out;
  for (const auto& [k, v] : j.at(p).items()) {
    if (!v.is_number()) throw InputError(file, ptr + "/" + k, "expected a number of seconds");
    out[k] = v.get<double>();
  }
  return out;
}

/// (predicted − measured) / measured; NaN when nothing was measured.
double rel_error(double predicted, double measured) {
  return measured > 0 ? (predicted - measured) / measured : std::nan("");
}

}  // namespace

int cmd_compare(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  std::string report;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--report") {
      report = take_value(args, i);
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("compare: unknown option " + a);
    } else {
      files.push_back(a);
    }
  }
  if (files.size() != 2) throw UsageError("compare: expected PREDICTED.json MEASURED.json (shardsim --help)");
  const Json pj = read_json(files[0]), mj = read_json(files[1]);
  const double pred = number_at(pj, files[0], "/step_time_s");
  const double meas = number_at(mj, files[1], "/step_time_s");
  const auto pk = kinds_at(pj, files[0], "/critical_device/compute_by_kind_s");
  const auto mk = kinds_at(mj, files[1], "/time_by_kind_s");
  // Compute kinds: those the prediction names (the measurement also lists
  // communication kinds, which overlap compute and are left out).
  std::vector<std::string> kinds;
  for (const auto& [k, v] : pk) kinds.push_back(k);
  if (!report.empty()) {
    HtmlReportInput in;
    in.title = "shardsim compare: " + files[0] + " against " + files[1];
    in.predicted_step_s = pred;
    in.measured_step_s = meas;
    for (const std::string& k : kinds) in.comparison.push_back({k, pk.at(k), mk.count(k) ? mk.at(k) : 0.0});
    std::string err;
    if (!write_file_atomic(report, html_report(in), err)) throw UsageError(err);
  }
  if (json) {
    nlohmann::ordered_json out;
    out["predicted_step_time_s"] = pred;
    out["measured_step_time_s"] = meas;
    out["step_time_error_frac"] = rel_error(pred, meas);
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const std::string& k : kinds) {
      const double m = mk.count(k) ? mk.at(k) : 0.0;
      const double e = rel_error(pk.at(k), m);
      rows.push_back({{"kind", k},
                      {"predicted_s", pk.at(k)},
                      {"measured_s", m},
                      {"error_frac", std::isnan(e) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e)}});
    }
    out["compute_by_kind"] = rows;
    if (std::isnan(rel_error(pred, meas))) out["step_time_error_frac"] = nullptr;
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("step time    predicted %.4f s, measured %.4f s, error %+.1f %%\n", pred, meas,
              100 * rel_error(pred, meas));
  std::printf("%-12s %12s %12s %9s\n", "kind", "predicted_s", "measured_s", "error");
  for (const std::string& k : kinds) {
    const double m = mk.count(k) ? mk.at(k) : 0.0;
    const double e = rel_error(pk.at(k), m);
    char err[32] = "      n/a";
    if (!std::isnan(e)) std::snprintf(err, sizeof err, "%+8.1f%%", 100 * e);
    std::printf("%-12s %12.4f %12.4f %s\n", k.c_str(), pk.at(k), m, err);
  }
  return 0;
}

}  // namespace shardsim::cli
