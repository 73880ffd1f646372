// `shardsim validate DIR [--json] [--check] [--split S] [--threads N]
// [--record FILE] [--against FILE]`: simulate every scenario under DIR that
// carries published figures and print predicted against published
// (app/validation.h does the work; app/accuracy.h the record and the
// check against it).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/app/accuracy.h"
#include "shardsim/app/validation.h"
#include "shardsim/core/error.h"

namespace shardsim::cli {

int cmd_validate(const std::vector<std::string>& args) {
  std::string dir, split, record, against;
  bool json = false, check = false;
  int threads = 0;  // every core
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--check") {
      check = true;
    } else if (a == "--split") {
      if (i + 1 >= args.size()) throw UsageError("validate: --split needs held_out, development or in_sample");
      split = args[++i];
      if (split != "held_out" && split != "development" && split != "in_sample") {
        throw UsageError("validate: --split expects held_out, development or in_sample, got " + split);
      }
    } else if (a == "--record" || a == "--against") {
      if (i + 1 >= args.size()) throw UsageError("validate: " + a + " needs a file");
      (a == "--record" ? record : against) = args[++i];
    } else if (a == "--threads") {
      if (i + 1 >= args.size()) throw UsageError("validate: --threads needs a count");
      threads = static_cast<int>(parse_int("--threads", args[++i], 1, 256));
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("validate: unknown option " + a);
    } else if (dir.empty()) {
      dir = a;
    } else {
      throw UsageError("validate: one directory expected, got a second: " + a);
    }
  }
  if (dir.empty()) throw UsageError("validate: expected a directory of scenarios");
  if (!split.empty() && (!record.empty() || !against.empty())) {
    throw UsageError("validate: --record and --against cover every row; drop --split");
  }
  // Read the record before simulating: a missing file fails at once.
  const std::string against_text = against.empty() ? "" : read_accuracy_record(against);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw UsageError("validate: " + dir + " is not a directory");
  // A progress line on a terminal only; silent on pipes and in CI.
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  const ValidationReport rep = validate_directory(
      dir, threads, check,
      [&](size_t done, size_t total) {
        if (!progress) return;
        std::fprintf(stderr, "\r[%zu/%zu] simulated", done, total);
        std::fflush(stderr);
      },
      split);
  if (progress) std::fprintf(stderr, "\r%40s\r", "");
  if (check) {
    std::printf("every scenario under %s loads\n", dir.c_str());
    return 0;
  }
  std::fputs((json ? validation_json(rep) : validation_table(rep)).c_str(), stdout);
  if (!record.empty()) {
    write_accuracy_record(rep, record);
    std::fprintf(stderr, "accuracy record written to %s\n", record.c_str());
  }
  if (!against.empty()) {
    const AccuracyCheck c = check_accuracy(rep, against_text, against);
    for (const auto& s : c.improvements) std::fprintf(stderr, "better than the record: %s\n", s.c_str());
    for (const auto& s : c.regressions) std::fprintf(stderr, "WORSE than the record: %s\n", s.c_str());
    std::fprintf(stderr, "accuracy against %s: %s (%zu worse, %zu better)\n", against.c_str(),
                 c.passed() ? "held" : "FAILED", c.regressions.size(), c.improvements.size());
    if (!c.passed()) return 1;
  }
  return 0;
}

}  // namespace shardsim::cli
