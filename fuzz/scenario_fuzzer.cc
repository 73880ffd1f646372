// libFuzzer target: everything a user's scenario file reaches before the
// simulation starts — JSON parsing, presets, --set overrides, validation of
// model, cluster and plan, the topology and mesh, and the memory model
// (which walks the pipeline schedule). Bad input must end in InputError;
// any other exception, crash, sanitizer report or hang is a bug.
//
// Build and run: scripts/fuzz.sh SECONDS (clang, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "shardsim/core/error.h"
#include "shardsim/workloads/memory.h"
#include "shardsim/workloads/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first line may carry one --set override ("#set plan.tp=4"), so the
  // fuzzer also reaches the override paths.
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<shardsim::Override> sets;
  if (text.rfind("#set ", 0) == 0) {
    const size_t nl = text.find('\n');
    const std::string line = text.substr(5, nl == std::string::npos ? std::string::npos : nl - 5);
    const size_t eq = line.find('=');
    if (eq != std::string::npos && eq > 0) sets.push_back({line.substr(0, eq), line.substr(eq + 1)});
    text = nl == std::string::npos ? std::string() : text.substr(nl + 1);
  }
  try {
    const shardsim::Scenario s = shardsim::parse_scenario(text, "fuzz.json", sets);
    const auto topo = shardsim::build_topology(s.cluster);
    const shardsim::Mesh mesh = shardsim::build_mesh(s.plan);
    (void)shardsim::training_memory(s);
    if (mesh.devices() != topo->num_devices()) std::abort();
  } catch (const shardsim::InputError&) {
    // Expected for bad input.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
