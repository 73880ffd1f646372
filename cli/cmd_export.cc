// shardsim export chakra: a scenario's step as a Chakra execution trace
// (app/chakra.h does the work); shardsim chakra dump / pack: a trace file
// as text and back (interop/chakra.h).

#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/app/chakra.h"
#include "shardsim/core/atomic_file.h"
#include "shardsim/core/read_file.h"
#include "shardsim/interop/chakra.h"
#include "shardsim/workloads/scenario.h"

namespace shardsim::cli {

namespace {

void write_output(const std::string& path, const std::string& bytes) {
  if (path == "-") {
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) throw UsageError("cannot write stdout");
    return;
  }
  std::string error;
  if (!write_file_atomic(path, bytes, error)) throw UsageError("cannot write " + path + ": " + error);
}

}  // namespace

int cmd_export(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "chakra") {
    throw UsageError("export: expected a format: shardsim export chakra SCENARIO --out DIR");
  }
  std::string file, out;
  std::vector<Override> sets;
  bool json = false;
  ChakraExportOptions opt;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--out") {
      out = take_value(args, i);
    } else if (a == "--json") {
      json = true;
    } else if (a == "--prefix") {
      opt.prefix = take_value(args, i);
    } else if (a == "--set") {
      sets.push_back(parse_set(take_value(args, i)));
    } else if (a.rfind("--set=", 0) == 0) {
      sets.push_back(parse_set(a.substr(6)));
    } else {
      take_scenario_file("export chakra", a, file);
    }
  }
  if (file.empty()) throw UsageError("export chakra: expected a scenario file");
  if (out.empty()) throw UsageError("export chakra: expected --out DIR");
  const Scenario s = load_scenario(file, sets);
  if (progress_wanted()) {
    opt.progress = [](int64_t done, int64_t n) {
      if (done % 64 == 0 || done == n)
        std::fprintf(stderr, "\r  rank %lld / %lld", static_cast<long long>(done), static_cast<long long>(n));
    };
  }
  const ChakraExportSummary r = export_chakra(s, out, opt);
  if (opt.progress) std::fputs("\r\033[K", stderr);
  std::fputs((json ? chakra_export_summary_json(r) : chakra_export_summary_text(r)).c_str(), stdout);
  return 0;
}

int cmd_chakra(const std::vector<std::string>& args) {
  const std::string sub = args.empty() ? "" : args[0];
  if (sub != "dump" && sub != "pack") {
    throw UsageError("chakra: expected dump FILE.et [--out TEXT] or pack TEXT --out FILE.et");
  }
  std::string in, out = sub == "dump" ? "-" : "";
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--out") {
      out = take_value(args, i);
    } else {
      take_scenario_file("chakra " + sub, args[i], in);
    }
  }
  if (in.empty()) throw UsageError("chakra " + sub + ": expected a file");
  if (out.empty()) throw UsageError("chakra pack: expected --out FILE.et");
  const std::string bytes = read_file_text(in);
  write_output(out, sub == "dump" ? chakra::et_to_text(bytes, in) : chakra::text_to_et(bytes, in));
  return 0;
}

}  // namespace shardsim::cli
