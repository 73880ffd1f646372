// _shardsim: the Python face of the application library (app/). Every
// function takes a scenario as a path or as JSON text, with overrides as
// (path, JSON text) pairs, releases the GIL while the library works, and
// returns the library's JSON text; the pure-Python layer (shardsim/__init__.py)
// turns dicts into text and text into dicts. InputError becomes
// shardsim.ScenarioError (a ValueError with .file and .path), UsageError a
// ValueError, each with the CLI's one line.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "shardsim/app/accuracy.h"
#include "shardsim/app/chakra.h"
#include "shardsim/app/collective.h"
#include "shardsim/app/compare.h"
#include "shardsim/app/evidence.h"
#include "shardsim/app/fabric.h"
#include "shardsim/app/report.h"
#include "shardsim/app/search.h"
#include "shardsim/app/serve.h"
#include "shardsim/app/step.h"
#include "shardsim/app/sweep.h"
#include "shardsim/app/validation.h"
#include "shardsim/app/whatif.h"
#include "shardsim/core/atomic_file.h"
#include "shardsim/core/error.h"
#include "shardsim/viz/result_json.h"
#include "shardsim/workloads/presets.h"
#include "shardsim/workloads/scenario.h"

namespace py = pybind11;
using namespace shardsim;

namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

std::vector<Override> overrides_of(const Pairs& pairs) {
  std::vector<Override> out;
  for (const auto& [path, value] : pairs) out.push_back({path, value});
  return out;
}

/// A scenario given as a path (is_path) or as JSON text named "<dict>".
Scenario load(const std::string& scenario, bool is_path, const Pairs& overrides) {
  return is_path ? load_scenario(scenario, overrides_of(overrides))
                 : parse_scenario(scenario, "<dict>", overrides_of(overrides));
}

ReplicaShortcut shortcut_of(const std::string& s) {
  if (s == "auto") return ReplicaShortcut::kAuto;
  if (s == "on") return ReplicaShortcut::kOn;
  if (s == "off") return ReplicaShortcut::kOff;
  throw UsageError("replica_shortcut: expected on, off or auto, got \"" + s + "\"");
}

std::string py_simulate(const std::string& scenario, bool is_path, const Pairs& overrides, const std::string& trace,
                        const std::vector<uint32_t>& trace_devices, const std::string& replica_shortcut, bool timing) {
  py::gil_scoped_release release;
  const Scenario s = load(scenario, is_path, overrides);
  SimulateOptions opt;
  opt.replica_shortcut = shortcut_of(replica_shortcut);
  opt.timing = timing;
  if (!trace.empty()) {
    opt.trace_devices = trace_devices.empty() ? std::vector<uint32_t>{0} : trace_devices;
    for (uint32_t d : opt.trace_devices) {
      if (d >= s.cluster.devices) {
        throw UsageError("trace_devices: device " + std::to_string(d) + " is not below the cluster's " +
                         std::to_string(s.cluster.devices) + " devices");
      }
    }
  }
  const StepRun run = simulate_step(s, opt);
  if (!trace.empty()) write_step_trace(trace, run);
  return step_report_json(run.report);
}

std::string py_export_chakra(const std::string& scenario, bool is_path, const Pairs& overrides, const std::string& out,
                             const std::string& prefix) {
  py::gil_scoped_release release;
  const Scenario s = load(scenario, is_path, overrides);
  ChakraExportOptions opt;
  opt.prefix = prefix;
  return chakra_export_summary_json(export_chakra(s, out, opt));
}

std::string py_serve(const std::string& scenario, bool is_path, const Pairs& overrides, const std::string& trace,
                     bool timing) {
  py::gil_scoped_release release;
  const Scenario s = load(scenario, is_path, overrides);
  ServeSummary sum = run_serving(s);
  if (!timing) sum.wall_s = 0;
  if (!trace.empty()) write_serve_trace(trace, sum);
  return serve_json(s, sum);
}

std::string py_search(const std::string& scenario, bool is_path, const Pairs& overrides, const std::string& objective,
                      int64_t max_simulations, int jobs, int64_t top, double max_ttft_p99_s, double max_tpot_p99_s,
                      bool timing) {
  py::gil_scoped_release release;
  // -1: the library's default (Python's None).
  if (max_simulations == -1) max_simulations = SearchOptions{}.max_simulations;
  if (max_simulations < 1) throw UsageError("max_simulations: expected at least 1");
  if (top < 1) throw UsageError("top: expected at least 1");
  const Scenario base = load(scenario, is_path, overrides);
  if (base.plan.inference()) {
    if (!base.serving.present) {
      throw InputError(base.file, "/serving",
                       "missing: searching an inference plan serves the scenario's request stream; add a serving "
                       "object (docs/inference.md)");
    }
    const ServingLimits limits{max_ttft_p99_s, max_tpot_p99_s};
    return serving_search_json(base, search_serving_plans(base, limits, jobs), limits, top);
  }
  SearchOptions opt;
  opt.objective = parse_search_objective(objective);
  opt.max_simulations = max_simulations;
  opt.jobs = jobs;
  SearchResult res = search_plans(base, search_device_counts(base, opt.objective), opt);
  if (!timing) forget_wall_times(res);
  return search_json(base, res, opt.objective, top);
}

std::string py_collective(const std::string& cluster, int kind, const Pairs& overrides, const std::string& op,
                          const std::vector<int64_t>& sizes, const std::string& group, bool concurrent, bool sweep,
                          bool nccl_table) {
  py::gil_scoped_release release;
  CollectiveRequest req{op, sizes, group, concurrent, sweep, nccl_table};
  // kind 0: a path or preset name; 1: scenario JSON text; 2: cluster JSON text.
  if (kind == 0) return collective_json(time_collective(cluster, overrides_of(overrides), req));
  if (kind == 1) {
    const Scenario s = parse_scenario(cluster, "<dict>", overrides_of(overrides));
    return collective_json(time_collective(s.cluster, &s.plan, req));
  }
  return collective_json(time_collective(parse_cluster_text(cluster, "<dict>", overrides_of(overrides)), nullptr, req));
}

std::string py_validate(const std::string& dir, const std::string& split, int threads) {
  py::gil_scoped_release release;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw UsageError("validate: " + dir + " is not a directory");
  if (!split.empty() && split != "held_out" && split != "development" && split != "in_sample") {
    throw UsageError("split: expected held_out, development or in_sample, got " + split);
  }
  return validation_json(validate_directory(dir, threads, false, {}, split));
}

std::string py_sweep(const std::string& scenario, bool is_path, const Pairs& overrides,
                     const std::vector<Pairs>& points, int jobs) {
  py::gil_scoped_release release;
  std::string text = scenario, name = "<dict>";
  if (is_path) {
    text = load_scenario(scenario).json;  // the file as read; overrides apply per point
    name = scenario;
  }
  std::vector<std::vector<Override>> grid;
  for (const Pairs& p : points) grid.push_back(overrides_of(p));
  return sweep_json(sweep_steps(text, name, overrides_of(overrides), grid, jobs));
}

std::string py_whatif(const std::string& scenario, bool is_path, const Pairs& overrides,
                      const std::vector<std::pair<std::string, double>>& speedups, double factor, int jobs) {
  py::gil_scoped_release release;
  WhatIfOptions opt;
  opt.speedups = speedups;
  opt.factor = factor;
  opt.threads = jobs;
  return whatif_json(what_if(load(scenario, is_path, overrides), opt));
}

/// `fabric` as collective() takes a cluster (kind 0: a path or preset
/// name, where a graph file is also taken; 1: scenario JSON text; 2:
/// cluster JSON text); writes the graph as DOT and GraphML where asked.
std::string py_topology(const std::string& fabric, int kind, const Pairs& overrides, const std::string& dot,
                        const std::string& graphml) {
  py::gil_scoped_release release;
  FabricGraph g;
  if (kind == 0) {
    g = load_fabric_graph(fabric, overrides_of(overrides));
  } else if (kind == 1) {
    g = cluster_graph(parse_scenario(fabric, "<dict>", overrides_of(overrides)).cluster);
  } else {
    g = cluster_graph(parse_cluster_text(fabric, "<dict>", overrides_of(overrides)));
  }
  auto write = [](const std::string& file, const std::string& text) {
    std::string err;
    if (!write_file_atomic(file, text, err)) throw UsageError(err);
  };
  if (!dot.empty()) write(dot, fabric_dot(g));
  if (!graphml.empty()) write(graphml, fabric_graphml(g));
  return fabric_summary_json(summarize_fabric(kind == 0 ? fabric : "<dict>", g));
}

std::string py_report(const std::string& scenario, bool is_path, const Pairs& overrides, const std::string& out) {
  py::gil_scoped_release release;
  const Scenario s = load(scenario, is_path, overrides);
  write_step_report(s, out, step_report_title(s));
  return out;
}

/// The record is the one embedded at build time unless `record` names a file.
std::string py_evidence(const std::string& scenario, bool is_path, const Pairs& overrides, const std::string& record) {
  py::gil_scoped_release release;
  const Scenario s = load(scenario, is_path, overrides);
  if (record.empty()) {
    return evidence_json(find_evidence(s, embedded_accuracy_record(), "the accuracy record embedded at build time"));
  }
  return evidence_json(find_evidence(s, read_accuracy_record(record), record));
}

/// Each side as JSON text and the name errors give it (its path, or
/// "<predicted>" / "<measured>" for a dict).
std::string py_compare(const std::string& predicted, const std::string& predicted_name, const std::string& measured,
                       const std::string& measured_name) {
  py::gil_scoped_release release;
  return comparison_json(compare_steps(predicted, predicted_name, measured, measured_name));
}

py::dict py_presets() {
  py::dict out;
  for (const char* kind : {"chip", "model", "cluster"}) {
    py::list names;
    for (const PresetEntry& e : all_presets()) {
      if (e.kind == kind) names.append(std::string(e.name));
    }
    out[kind] = names;
  }
  return out;
}

std::string py_preset(const std::string& name) {
  const auto p = find_preset_any_kind(name);
  if (!p) throw UsageError("presets: unknown preset \"" + name + "\" (see shardsim.presets())");
  return std::string(p->json);
}

}  // namespace

PYBIND11_MODULE(_shardsim, m) {
  m.doc() = "shardsim's application library (use the shardsim package, not this module)";
  static py::exception<InputError> scenario_error(m, "ScenarioError", PyExc_ValueError);
  // pybind11 takes a void(*)(std::exception_ptr): the pointer by value.
  py::register_exception_translator([](std::exception_ptr p) {  // NOLINT(performance-unnecessary-value-param)
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      py::object err = py::reinterpret_borrow<py::object>(scenario_error.ptr())(e.what());
      err.attr("file") = e.file();
      err.attr("path") = e.json_pointer();
      PyErr_SetObject(scenario_error.ptr(), err.ptr());
    } catch (const UsageError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const AlreadyReported& e) {
      PyErr_SetString(PyExc_ValueError, "the SimGrid worker rejected the scenario (its message is on stderr)");
    }
  });
  m.attr("__version__") = SHARDSIM_VERSION;
  m.def("simulate", &py_simulate);
  m.def("serve", &py_serve);
  m.def("search", &py_search);
  m.def("collective", &py_collective);
  m.def("validate", &py_validate);
  m.def("compare", &py_compare);
  m.def("sweep_sizes", &collective_sweep_sizes);
  m.def("sweep", &py_sweep);
  m.def("whatif", &py_whatif);
  m.def("evidence", &py_evidence);
  m.def("export_chakra", &py_export_chakra);
  m.def("topology", &py_topology);
  m.def("report", &py_report);
  m.def("presets", &py_presets);
  m.def("preset", &py_preset);
}
