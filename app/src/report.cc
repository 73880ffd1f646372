#include "shardsim/app/report.h"

#include "shardsim/app/evidence.h"
#include "shardsim/app/step.h"
#include "shardsim/core/atomic_file.h"
#include "shardsim/core/error.h"
#include "shardsim/workloads/plan_space.h"

namespace shardsim {

std::vector<uint32_t> report_devices(const Scenario& s) {
  const Mesh mesh = build_mesh(s.plan);
  std::vector<uint32_t> out = {0};
  for (int64_t stage = 1; stage < s.plan.pp && out.size() < 4; ++stage) {
    // Spread the stages drawn over the pipeline: first, last and between.
    const int64_t want = s.plan.pp <= 4 ? stage : stage * (s.plan.pp - 1) / 3;
    for (int64_t d = 0; d < mesh.devices(); ++d) {
      if (mesh.coord(d, MeshAxis::kPp) == want && mesh.coord(d, MeshAxis::kDp) == 0 &&
          mesh.coord(d, MeshAxis::kTp) == 0 && mesh.coord(d, MeshAxis::kCp) == 0) {
        out.push_back(static_cast<uint32_t>(d));
        break;
      }
    }
  }
  return out;
}

std::string step_report_title(const Scenario& s) {
  return "shardsim report: " + s.model.name + " on " + std::to_string(s.cluster.devices) + " x " + s.cluster.chip.name;
}

void write_step_report(const Scenario& s, const std::string& out, const std::string& title,
                       std::vector<ReportPlanPoint> plans) {
  SimulateOptions opt;
  opt.trace_devices = report_devices(s);
  const StepRun run = simulate_step(s, opt);  // on the scenario's backend, `s` as held (a search's plan)
  HtmlReportInput in;
  in.title = title;
  in.plan_summary = describe_plan(s.plan);
  in.step = &run.report;
  in.programs = &run.programs;
  in.timeline = &run.timeline;
  in.peak_flops_per_s = s.cluster.chip.bf16_peak.value();
  in.hbm_bytes_per_s = s.cluster.chip.hbm_bandwidth.value();
  in.plans = std::move(plans);
  const Evidence e = find_evidence(s, embedded_accuracy_record(), "the accuracy record of this build");
  in.evidence_record = e.record;
  for (const EvidenceGroup& g : e.groups) {
    if (g.speed.n == 0) continue;  // a level's memory rows only: the table is about time
    in.evidence.push_back({g.label, evidence_side(g.split), g.speed.n, g.speed.mean(), g.speed.max, g.speed.bias(),
                           g.speed.high, g.level == e.closest});
  }
  std::string err;
  if (!write_file_atomic(out, html_report(in), err)) throw UsageError(err);
}

}  // namespace shardsim
