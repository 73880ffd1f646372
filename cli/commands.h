// The shardsim subcommands. Each takes the arguments after its name and
// returns the process exit status; errors are thrown (main maps them).
#pragma once

#include <string>
#include <vector>

namespace shardsim::cli {

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
int cmd_topology(const std::vector<std::string>& args);
extern const char* const kUsage;

}  // namespace shardsim::cli
