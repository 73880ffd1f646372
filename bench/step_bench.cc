// Benchmark: simulation speed and memory of whole training steps.
// Prints, per scenario: events, flows, wall seconds, engine events/s and peak
// resident memory. Each scenario runs in its own child process so its peak
// memory is its own.
//   step_bench [--replica-shortcut] [--symmetry] [SCENARIO.json...]
// (default: the three reference scenarios). The replica shortcut is always on
// above 2048 devices, as in the CLI's auto mode. Without --symmetry every
// device runs (the engine's raw throughput); with it, one device per orbit of
// the step's symmetry, as `shardsim simulate` does by default.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "shardsim/core/error.h"
#include "shardsim/sim/engine.h"
#include "shardsim/workloads/lower.h"

namespace {

int run_one(const std::string& file, bool shortcut, bool symmetry) {
  using clock = std::chrono::steady_clock;
  const shardsim::Scenario s = shardsim::load_scenario(file);
  const auto t0 = clock::now();
  const shardsim::ProgramSet p = shardsim::lower_training_step(s);
  const auto t1 = clock::now();
  const auto topo = shardsim::build_topology(s.cluster);
  const shardsim::Mesh mesh = shardsim::build_mesh(s.plan);
  shardsim::EngineOptions opt;
  opt.collective = s.cluster.collective;
  // As the CLI's auto setting: one data-parallel replica above 2048 devices.
  opt.replica_shortcut = (shortcut || s.cluster.devices > 2048) && s.plan.dp > 1;
  opt.symmetry = symmetry;
  const auto t2 = clock::now();
  const shardsim::EngineResult r = shardsim::simulate(p, mesh, *topo, s.cluster.chip, opt);
  const auto t3 = clock::now();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double lower_s = std::chrono::duration<double>(t1 - t0).count();
  const double engine_s = std::chrono::duration<double>(t3 - t2).count();
  std::printf("%s\n", file.c_str());
  size_t ops = 0;
  for (const auto& prog : p.stages) ops = std::max(ops, prog.size());
  std::printf("  devices %lld (%lld simulated), ops per device %zu, simulated step %.4f s\n",
              static_cast<long long>(s.cluster.devices), static_cast<long long>(r.active_devices), ops,
              r.step_time.seconds());
  if (symmetry) {
    std::printf("  symmetry: %s; each simulated device stands for %lld\n", r.symmetry_note.c_str(),
                static_cast<long long>(r.symmetry.order(mesh)));
  }
  std::printf("  events %llu, flows %llu\n", static_cast<unsigned long long>(r.events),
              static_cast<unsigned long long>(r.flows));
  std::printf("  lowering %.3f s, engine %.3f s, engine throughput %.2f M events/s\n", lower_s, engine_s,
              static_cast<double>(r.events) / engine_s / 1e6);
  std::printf("  peak resident memory %.1f MiB\n", static_cast<double>(ru.ru_maxrss) / 1024.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  bool shortcut = false;
  bool symmetry = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--replica-shortcut") == 0) {
      shortcut = true;
    } else if (std::strcmp(argv[i], "--symmetry") == 0) {
      symmetry = true;
    } else {
      files.emplace_back(argv[i]);
    }
  }
  if (files.empty()) {
    files = {SHARDSIM_SOURCE_DIR "/examples/llama3-70b-h100x1024.json",
             SHARDSIM_SOURCE_DIR "/examples/llama3-8b-tpu-v5e-256.json",
             SHARDSIM_SOURCE_DIR "/examples/llama3-405b-h100x16384.json"};
  }
  int status = 0;
  for (const auto& f : files) {
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      int rc = 2;
      try {
        rc = run_one(f, shortcut, symmetry);
      } catch (const shardsim::InputError& e) {
        std::fprintf(stderr, "%s\n", e.what());
      }
      std::fflush(stdout);
      _exit(rc);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) status = 1;
  }
  return status;
}
