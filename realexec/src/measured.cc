#include "shardsim/realexec/measured.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace shardsim::realexec {

using Json = nlohmann::json;

std::string measured_run_json(const MeasuredRun& r) {
  Json j;
  j["backend"] = r.backend;
  j["device"] = r.device;
  j["ranks"] = r.ranks;
  j["warmup_steps"] = r.warmup_steps;
  j["step_times_s"] = r.step_times_s;
  j["trace_step"] = r.trace_step;
  Json spans = Json::array();
  for (const TimelineSpan& s : r.timeline.spans) {
    spans.push_back({s.device, s.program, s.stream, s.op, s.start.ps(), s.end.ps()});
  }
  j["spans"] = std::move(spans);
  j["verify"] = {{"enabled", r.verify.enabled},
                 {"kernels_checked", r.verify.kernels_checked},
                 {"collectives_checked", r.verify.collectives_checked},
                 {"transfers_checked", r.verify.transfers_checked},
                 {"mismatches", r.verify.mismatches},
                 {"first_mismatch", r.verify.first_mismatch}};
  return j.dump() + "\n";
}

MeasuredRun parse_measured_run(const std::string& text, const std::string& file) {
  try {
    const Json j = Json::parse(text);
    MeasuredRun r;
    r.backend = j.value("backend", std::string("cpu"));
    r.device = j.value("device", std::string());
    r.ranks = j.at("ranks").get<int>();
    r.warmup_steps = j.at("warmup_steps").get<int>();
    r.step_times_s = j.at("step_times_s").get<std::vector<double>>();
    r.trace_step = j.at("trace_step").get<int>();
    for (const Json& s : j.at("spans")) {
      TimelineSpan x;
      x.device = s.at(0).get<uint32_t>();
      x.program = s.at(1).get<uint32_t>();
      x.stream = s.at(2).get<StreamId>();
      x.op = s.at(3).get<OpId>();
      x.start = SimTime::from_ps(s.at(4).get<int64_t>());
      x.end = SimTime::from_ps(s.at(5).get<int64_t>());
      r.timeline.spans.push_back(x);
    }
    for (int d = 0; d < r.ranks; ++d) r.timeline.devices.push_back(static_cast<uint32_t>(d));
    const Json& v = j.at("verify");
    r.verify.enabled = v.at("enabled").get<bool>();
    r.verify.kernels_checked = v.at("kernels_checked").get<int64_t>();
    r.verify.collectives_checked = v.at("collectives_checked").get<int64_t>();
    r.verify.transfers_checked = v.at("transfers_checked").get<int64_t>();
    r.verify.mismatches = v.at("mismatches").get<int64_t>();
    r.verify.first_mismatch = v.at("first_mismatch").get<std::string>();
    return r;
  } catch (const Json::exception& e) {
    throw std::runtime_error(file + ": unreadable measured run: " + e.what());
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<std::pair<std::string, double>> time_by_kind_s(const ProgramSet& programs, const Timeline& t) {
  std::map<std::string, double> sum;
  for (const TimelineSpan& s : t.spans) {
    const Op& op = programs.stages.at(s.program).op(s.op);
    std::string kind;
    switch (op.kind) {
      case OpKind::kCompute:
        kind = std::string(to_string(op.compute));
        break;
      case OpKind::kCollective:
        kind = std::string(to_string(op.collective));
        break;
      case OpKind::kSend:
        kind = "send";
        break;
      case OpKind::kRecv:
        kind = "recv";
        break;
    }
    sum[kind] += (s.end - s.start).seconds();
  }
  const double ranks = std::max<size_t>(1, t.devices.size());
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [k, v] : sum) out.emplace_back(k, v / ranks);
  return out;
}

}  // namespace shardsim::realexec
