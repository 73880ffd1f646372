// shardsim topology: check a fabric graph, or write any fabric as GraphML
// or DOT (app/fabric.h does the work).
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/app/fabric.h"
#include "shardsim/core/atomic_file.h"

namespace shardsim::cli {
namespace {

void write_out(const std::string& file, const std::string& text) {
  if (file == "-") {
    std::fputs(text.c_str(), stdout);
    return;
  }
  std::string err;
  if (!write_file_atomic(file, text, err)) throw UsageError(err);
}

}  // namespace

int cmd_topology(const std::vector<std::string>& args) {
  std::string input, dot, graphml;
  bool json = false;
  std::vector<Override> sets;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--check") {
      // the default: check and summarise
    } else if (a == "--json") {
      json = true;
    } else if (a == "--dot") {
      dot = take_value(args, i);
    } else if (a == "--graphml") {
      graphml = take_value(args, i);
    } else if (a == "--set") {
      sets.push_back(parse_set(take_value(args, i)));
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("topology: unknown option " + a);
    } else if (!input.empty()) {
      throw UsageError("topology: expected one graph file, scenario, cluster file or preset, got a second: " + a);
    } else {
      input = a;
    }
  }
  if (input.empty())
    throw UsageError("topology: expected a graph file, scenario, cluster file or preset (shardsim topology --help)");
  // One thing on standard output: the summary, or one graph.
  const bool graph_out = dot == "-" || graphml == "-";
  if (dot == "-" && graphml == "-") throw UsageError("topology: --dot - and --graphml - would mix on standard output");
  if (graph_out && json) throw UsageError("topology: --json and a graph on standard output (-) would mix");
  const FabricGraph g = load_fabric_graph(input, sets);
  if (!dot.empty()) write_out(dot, fabric_dot(g));
  if (!graphml.empty()) write_out(graphml, fabric_graphml(g));
  if (graph_out) return 0;
  const FabricSummary sum = summarize_fabric(input, g);
  std::fputs((json ? fabric_summary_json(sum) : fabric_summary_text(sum)).c_str(), stdout);
  return 0;
}

}  // namespace shardsim::cli
