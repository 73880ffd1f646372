// shardsim whatif: which part of a step, made faster, shortens it most
// (app/whatif.h does the work).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/app/whatif.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::cli {
namespace {

/// "LEVER=K" of --speedup.
std::pair<std::string, double> parse_speedup(const std::string& text) {
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) throw UsageError("--speedup: expected LEVER=FACTOR, got \"" + text + "\"");
  char* end = nullptr;
  const std::string v = text.substr(eq + 1);
  const double k = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(k > 0) || k > 1e6) {
    throw UsageError("--speedup: expected a factor in (0, 1e6] after =, got \"" + text + "\"");
  }
  return {text.substr(0, eq), k};
}

}  // namespace

int cmd_whatif(const std::vector<std::string>& args) {
  std::string file;
  std::vector<Override> sets;
  WhatIfOptions opt;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--speedup") {
      opt.speedups.push_back(parse_speedup(take_value(args, i)));
    } else if (a == "--factor") {
      const std::string v = take_value(args, i);
      char* end = nullptr;
      opt.factor = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(opt.factor > 0) || opt.factor > 1e6) {
        throw UsageError("--factor: expected a speed-up in (0, 1e6], got \"" + v + "\"");
      }
    } else if (a == "--jobs") {
      opt.threads = static_cast<int>(parse_int("--jobs", take_value(args, i), 0, 1024));
    } else if (a == "--set") {
      sets.push_back(parse_set(take_value(args, i)));
    } else if (a.rfind("--set=", 0) == 0) {
      sets.push_back(parse_set(a.substr(6)));
    } else {
      take_scenario_file("whatif", a, file);
    }
  }
  if (file.empty()) throw UsageError("whatif: expected a scenario file (shardsim whatif --help)");
  const Scenario s = load_scenario(file, sets);
  const WhatIfResult r = what_if(s, opt);
  std::fputs((json ? whatif_json(r) : whatif_text(r)).c_str(), stdout);
  return 0;
}

}  // namespace shardsim::cli
