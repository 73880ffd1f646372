#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/workloads/presets.h"

namespace shardsim::cli {

int cmd_presets(const std::vector<std::string>& args) {
  if (args.empty() || (args.size() == 1 && args[0] == "list")) {
    for (const char* kind : {"chip", "model", "cluster"}) {
      std::printf("%ss:\n", kind);
      for (const auto& e : all_presets()) {
        if (e.kind == kind) std::printf("  %.*s\n", static_cast<int>(e.name.size()), e.name.data());
      }
    }
    return 0;
  }
  if (args.size() == 2 && args[0] == "show") {
    const auto p = find_preset_any_kind(args[1]);
    if (!p) throw UsageError("presets show: unknown preset \"" + args[1] + "\" (see shardsim presets)");
    std::fwrite(p->json.data(), 1, p->json.size(), stdout);
    return 0;
  }
  throw UsageError("presets: expected \"list\" or \"show NAME\"");
}

}  // namespace shardsim::cli
