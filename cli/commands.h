// The shardsim subcommands. Each takes the arguments after its name and
// returns the process exit status; errors are thrown (main maps them).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "shardsim/app/search.h"

namespace shardsim::cli {

/// How one process takes part in a search: alone (the defaults), or as a
/// rank of `mpirun -n N shardsim search` (shardsim-search-rank).
struct SearchHooks {
  bool lead = true;  ///< prints, writes --emit-best and --report, shows progress
  /// Makes the wave runner from --jobs (empty: threads).
  std::function<WaveRunner(int jobs)> make_runner;
};
/// `shardsim search` with `args`, as `hooks` says.
int run_search(const std::vector<std::string>& args, const SearchHooks& hooks);

int cmd_simulate(const std::vector<std::string>& args);
int cmd_collective(const std::vector<std::string>& args);
int cmd_presets(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_compare(const std::vector<std::string>& args);
int cmd_calibrate(const std::vector<std::string>& args);
int cmd_search(const std::vector<std::string>& args);
int cmd_report(const std::vector<std::string>& args);
int cmd_serve(const std::vector<std::string>& args);
int cmd_whatif(const std::vector<std::string>& args);
int cmd_evidence(const std::vector<std::string>& args);
int cmd_topology(const std::vector<std::string>& args);
int cmd_export(const std::vector<std::string>& args);
int cmd_chakra(const std::vector<std::string>& args);
extern const char* const kUsage;
/// The part of kUsage about `cmd` (its synopsis lines and their text) under
/// a "Usage:" line, with the exit statuses; empty for an unknown command.
std::string command_usage(const std::string& cmd);

}  // namespace shardsim::cli
