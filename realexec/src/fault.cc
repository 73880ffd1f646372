// SHARDSIM_FAULT parsing: fault injection for the failure tests (rank.h).
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "shardsim/realexec/rank.h"

namespace shardsim::realexec {

FaultSpec parse_fault(const std::string& text) {
  FaultSpec f;
  if (text.empty()) return f;
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("SHARDSIM_FAULT=\"" + text + "\": " + why +
                                 " (expected kill:rank=R:op=N, delay:rank=R:op=N:s=S or corrupt:rank=R:op=N)");
  };
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find(':', pos), text.size());
    parts.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  if (parts[0] == "kill") {
    f.kind = FaultSpec::Kind::kKill;
  } else if (parts[0] == "delay") {
    f.kind = FaultSpec::Kind::kDelay;
  } else if (parts[0] == "corrupt") {
    f.kind = FaultSpec::Kind::kCorrupt;
  } else {
    throw bad("unknown fault \"" + parts[0] + "\"");
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string::npos) throw bad("expected KEY=VALUE, got \"" + parts[i] + "\"");
    const std::string key = parts[i].substr(0, eq), value = parts[i].substr(eq + 1);
    if (key != "rank" && key != "op" && key != "s") throw bad("unknown key \"" + key + "\"");
    size_t used = 0;
    try {
      if (key == "rank") f.rank = std::stoi(value, &used);
      if (key == "op") f.op = std::stoll(value, &used);
      if (key == "s") f.delay_s = std::stod(value, &used);
    } catch (const std::logic_error&) {
      used = 0;
    }
    if (used == 0 || used != value.size()) throw bad("bad number in \"" + parts[i] + "\"");
  }
  if (f.rank < 0 || f.op < 0) throw bad("rank and op are required");
  if (f.kind == FaultSpec::Kind::kDelay && !(f.delay_s > 0)) throw bad("delay needs s=SECONDS > 0");
  return f;
}

void apply_fault(const FaultSpec& f, int rank, int64_t op, int step) {
  if (f.kind == FaultSpec::Kind::kNone || f.kind == FaultSpec::Kind::kCorrupt || f.rank != rank || f.op != op ||
      step != 0) {
    return;
  }
  if (f.kind == FaultSpec::Kind::kKill) ::raise(SIGKILL);
  std::this_thread::sleep_for(std::chrono::duration<double>(f.delay_s));
}

}  // namespace shardsim::realexec
