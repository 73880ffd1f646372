// shardsim: the command-line entry point. Parses the subcommand, runs it and
// maps errors to exit codes: 2 for bad input or usage, 1 for anything else.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/core/error.h"

int main(int argc, char** argv) {
  using namespace shardsim;
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool help = !args.empty() && args[0] == "help";
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || (help && args.size() == 1)) {
    std::fputs(cli::kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  // `shardsim help CMD` and `shardsim CMD ... --help` print CMD's part of
  // the usage (an option's value is never "--help" or "-h").
  const bool asks_help = help || std::any_of(args.begin() + 1, args.end(),
                                             [](const std::string& a) { return a == "--help" || a == "-h"; });
  if (asks_help) {
    const std::string& about = help ? args[1] : args[0];
    const std::string text = cli::command_usage(about);
    if (help && args.size() > 2) {
      std::fprintf(stderr, "shardsim: error: help: expected one command name, e.g. shardsim help simulate\n");
      return 2;
    }
    if (text.empty()) {
      std::fprintf(stderr, "shardsim: error: unknown command \"%s\" (try shardsim --help)\n", about.c_str());
      return 2;
    }
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  if (args[0] == "--version") {
    std::puts("shardsim " SHARDSIM_VERSION);
    return 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  try {
    if (cmd == "simulate") return cli::cmd_simulate(args);
    if (cmd == "collective") return cli::cmd_collective(args);
    if (cmd == "presets") return cli::cmd_presets(args);
    if (cmd == "validate") return cli::cmd_validate(args);
    if (cmd == "run") return cli::cmd_run(args);
    if (cmd == "compare") return cli::cmd_compare(args);
    if (cmd == "calibrate") return cli::cmd_calibrate(args);
    if (cmd == "search") return cli::cmd_search(args);
    if (cmd == "report") return cli::cmd_report(args);
    if (cmd == "serve") return cli::cmd_serve(args);
    if (cmd == "whatif") return cli::cmd_whatif(args);
    if (cmd == "evidence") return cli::cmd_evidence(args);
    if (cmd == "topology") return cli::cmd_topology(args);
    if (cmd == "export") return cli::cmd_export(args);
    if (cmd == "chakra") return cli::cmd_chakra(args);
    throw cli::UsageError("unknown command \"" + cmd + "\" (try shardsim --help)");
  } catch (const cli::AlreadyReported& e) {
    return e.status;
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const cli::UsageError& e) {
    std::fprintf(stderr, "shardsim: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "shardsim: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardsim: error: %s\n", e.what());
    return 1;
  }
}
