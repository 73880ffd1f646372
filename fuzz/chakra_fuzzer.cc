// libFuzzer target: the Chakra trace reader (interop/chakra.h), everything a
// directory of execution traces reaches before the simulation starts — the
// length-delimited protobuf framing, gzip detection, every node type and
// attribute, the communicator groups (comm_groups.json or a PyTorch trace's
// process-group metadata), and the Boost.Graph checks across ranks
// (dependencies, cycles, collectives agreeing, sends pairing receives). Bad
// input must end in InputError; any other exception, crash, sanitizer report
// or hang is a bug.
//
// The input is split at each "|||" into a trace's parts: a part that starts
// with '{' is comm_groups.json, the others are rank files 0, 1, ... (at most
// 8), so that one input is a whole trace.
//
// Build and run: scripts/fuzz.sh SECONDS (after the scenario fuzzer).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "shardsim/core/error.h"
#include "shardsim/interop/chakra.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> ranks;
  std::string groups;
  bool has_groups = false;
  for (size_t at = 0; at <= in.size() && ranks.size() < 8;) {
    const size_t end = std::min(in.find("|||", at), in.size());
    const std::string part(in.substr(at, end - at));
    if (!has_groups && !part.empty() && part.front() == '{') {
      groups = part;
      has_groups = true;
    } else {
      ranks.push_back(part);
    }
    at = end + 3;
  }
  shardsim::chakra::TraceSource src;
  src.where = "fuzz";
  src.prefix = "fuzz";
  for (size_t r = 0; r < ranks.size(); ++r) src.files.push_back("fuzz." + std::to_string(r) + ".et");
  src.bytes_of = [&](size_t r) { return ranks[r]; };
  if (has_groups) {
    src.groups_file = "comm_groups.json";
    src.groups_json = &groups;
  }
  shardsim::chakra::ReadOptions opt;
  opt.devices = 8;
  opt.retime = size % 2 == 1;
  try {
    const shardsim::chakra::Trace t = shardsim::chakra::read_trace(src, opt);
    if (t.programs.program_of.size() != 8) std::abort();
  } catch (const shardsim::InputError&) {
    // Expected for bad input.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
