#include "simgrid_client.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "shardsim/core/error.h"
#include "shardsim/sim/result_codec.h"

extern char** environ;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables): POSIX's, for posix_spawn

namespace shardsim {
namespace {

std::string join_ids(const std::vector<uint32_t>& ids) {
  std::string out;
  for (uint32_t d : ids) out += (out.empty() ? "" : ",") + std::to_string(d);
  return out;
}

}  // namespace

std::string simgrid_worker_path() {
  if (const char* env = std::getenv("SHARDSIM_SIMGRID_WORKER"); env != nullptr && *env != '\0') {
    if (::access(env, X_OK) != 0) {
      throw UsageError(std::string("--backend simgrid: SHARDSIM_SIMGRID_WORKER=") + env + " is not executable");
    }
    return env;
  }
  // Beside the running executable (the shardsim command), then where the
  // build put it and where `cmake --install` puts it (the Python module).
  std::vector<std::string> candidates;
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    const std::string exe(self, static_cast<size_t>(n));
    candidates.push_back(exe.substr(0, exe.find_last_of('/')) + "/shardsim-simgrid-worker");
  }
  candidates.push_back(SHARDSIM_BUILD_WORKER);
  candidates.push_back(SHARDSIM_INSTALL_WORKER);
  for (const std::string& path : candidates) {
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  throw UsageError("--backend simgrid: this build has no SimGrid backend (no shardsim-simgrid-worker beside " +
                   candidates.front() + "; install libsimgrid-dev and rebuild)");
}

EngineResult run_simgrid_worker(const std::string& worker, const WorkerRequest& request) {
  // The scenario goes in a private temporary file (a pipe would need the
  // caller to survive SIGPIPE when the worker dies early), removed on return.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string path = std::string(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp") + "/shardsim-scenario-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) throw std::runtime_error("cannot create a temporary file in " + path + ": " + std::strerror(errno));
  struct Unlink {
    std::string path;
    ~Unlink() { ::unlink(path.c_str()); }
  } unlink_on_return{path};
  {
    size_t done = 0;
    const std::string& text = request.scenario_json;
    while (done < text.size()) {
      const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        ::close(fd);
        throw std::runtime_error("cannot write the temporary scenario " + path + ": " + std::strerror(errno));
      }
      done += static_cast<size_t>(w);
    }
    ::close(fd);
  }
  std::vector<std::string> args = {worker, path, "--name", request.scenario_name};
  if (!request.trace_devices.empty()) {
    args.push_back("--trace-devices");
    args.push_back(join_ids(request.trace_devices));
  }
  args.push_back("--replica-shortcut");
  args.push_back(request.replica_shortcut ? "on" : "off");
  if (request.spans_of_every_device) args.push_back("--all-spans");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addclose(&actions, out[1]);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, worker.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    throw std::runtime_error("cannot start " + worker + ": " + std::strerror(rc));
  }
  std::string bytes;
  char buf[1 << 16];
  while (true) {
    const ssize_t got = ::read(out[0], buf, sizeof buf);
    if (got > 0) {
      bytes.append(buf, static_cast<size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Exit 2: the worker rejected its input and printed the one-line message.
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) throw AlreadyReported(2);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("the SimGrid worker failed (" +
                             (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                                  : "exit status " + std::to_string(WEXITSTATUS(status))) +
                             ")");
  }
  try {
    return decode_engine_result(bytes);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("the SimGrid worker's result is unreadable (" + std::string(e.what()) + "; " +
                             std::to_string(bytes.size()) + " bytes)");
  }
}

Simulator simulator_for(const Scenario& s, std::string& backend) {
  if (s.simulator.backend == SimulatorSpec::Backend::kNative) {
    backend = "native";
    return {};
  }
  backend = s.simulator.simgrid_model == SimulatorSpec::SimgridModel::kLv08 ? "simgrid LV08" : "simgrid CM02";
  // Fail early, before lowering, when there is no worker.
  std::string worker = simgrid_worker_path();
  // The worker simulates `s` as this process holds it (a search's candidate,
  // a sweep's point): its plan and device count written into the scenario.
  // Loading that back must give exactly them, or the worker would simulate
  // something else.
  std::string json = scenario_json(s);
  const Scenario back = parse_scenario(json, s.file);
  if (!(back.plan == s.plan) || back.cluster.devices != s.cluster.devices) {
    throw std::logic_error("the scenario handed to the SimGrid worker does not load as the plan simulated");
  }
  return [worker = std::move(worker), json = std::move(json), name = s.file](
             const ProgramSet&, const Mesh&, const Topology&, const ChipSpec&, const EngineOptions& opt) {
    return run_simgrid_worker(
        worker, WorkerRequest{json, name, opt.trace_devices, opt.replica_shortcut, opt.spans_of_every_device});
  };
}

}  // namespace shardsim
