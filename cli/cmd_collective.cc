// `shardsim collective`: one collective alone on the fabric, reported the
// way nccl-tests reports it (algbw and busbw: sim/collective.h), at one
// size or over a sweep of sizes (`--sweep MIN:MAX`, nccl-tests' -b/-e/-f).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/app/collective.h"

namespace shardsim::cli {

int cmd_collective(const std::vector<std::string>& args) {
  std::string input, op_text, bytes_text, group = "all", sweep_text, factor_text;
  std::vector<Override> sets;
  bool json = false, concurrent = false, nccl_table = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json")
      json = true;
    else if (a == "--concurrent")
      concurrent = true;
    else if (a == "--nccl-table")
      nccl_table = true;
    else if (a == "--op")
      op_text = take_value(args, i);
    else if (a == "--bytes")
      bytes_text = take_value(args, i);
    else if (a == "--group")
      group = take_value(args, i);
    else if (a == "--sweep")
      sweep_text = take_value(args, i);
    else if (a == "--factor")
      factor_text = take_value(args, i);
    else if (a == "--set")
      sets.push_back(parse_set(take_value(args, i)));
    else if (!a.empty() && a[0] == '-')
      throw UsageError("collective: unknown option " + a);
    else if (input.empty())
      input = a;
    else
      throw UsageError("collective: one scenario or cluster expected, got a second: " + a);
  }
  if (input.empty()) throw UsageError("collective: expected a scenario file, cluster file or cluster preset");
  if (op_text.empty()) throw UsageError("collective: --op is required");
  if (bytes_text.empty() == sweep_text.empty()) throw UsageError("collective: give --bytes SIZE or --sweep MIN:MAX");
  if (!factor_text.empty() && sweep_text.empty()) throw UsageError("collective: --factor needs --sweep");
  CollectiveRequest req;
  req.op = op_text;
  req.group = group;
  req.concurrent = concurrent;
  req.sweep = !sweep_text.empty();
  req.nccl_table = nccl_table;
  if (!bytes_text.empty()) {
    req.sizes_bytes.push_back(parse_bytes("--bytes", bytes_text));
  } else {
    const size_t colon = sweep_text.find(':');
    if (colon == std::string::npos) {
      throw UsageError("--sweep: expected MIN:MAX such as 1KB:8GB, got \"" + sweep_text + "\"");
    }
    const int64_t lo = parse_bytes("--sweep", sweep_text.substr(0, colon));
    const int64_t hi = parse_bytes("--sweep", sweep_text.substr(colon + 1));
    if (lo > hi) throw UsageError("--sweep: MIN must not exceed MAX, got \"" + sweep_text + "\"");
    double factor = 2;
    if (!factor_text.empty()) {
      char* end = nullptr;
      factor = std::strtod(factor_text.c_str(), &end);
      if (end != factor_text.c_str() + factor_text.size() || !(factor >= 1.01 && factor <= 1024)) {
        throw UsageError("--factor: expected a number from 1.01 to 1024, got \"" + factor_text + "\"");
      }
    }
    req.sizes_bytes = collective_sweep_sizes(lo, hi, factor);
  }
  const CollectiveResult r = time_collective(input, sets, req);
  std::fputs((json ? collective_json(r) : collective_text(r)).c_str(), stdout);
  return 0;
}

}  // namespace shardsim::cli
