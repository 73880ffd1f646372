#include "shardsim/realexec/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "shardsim/realexec/progress.h"

namespace shardsim::realexec {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The signal that interrupted the launcher (0: none). mpirun runs in a
// process group of its own, so a Ctrl-C at the terminal reaches only this
// process: the handler records it and the wait loop tears the run down. A
// signal handler can only talk through a global of this type.
volatile std::sig_atomic_t g_interrupt = 0;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
extern "C" void on_interrupt(int sig) {
  g_interrupt = sig;
}

/// Installs on_interrupt for SIGINT, SIGTERM and SIGHUP while it lives and
/// restores the previous handlers.
class InterruptGuard {
 public:
  InterruptGuard() {
    g_interrupt = 0;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~InterruptGuard() {
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Is `pid` alive and running `exe`? (Guards against a recycled pid.)
bool runs(int pid, const std::string& exe) {
  if (pid <= 0) return false;
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
  return !ec && fs::equivalent(p, exe, ec);
}

std::string op_text(const ProgramSet& ps, const std::vector<int>& stage_of_rank, int rank, int op) {
  if (op < 0) return "before its first op";
  const size_t stage = rank < static_cast<int>(stage_of_rank.size()) ? static_cast<size_t>(stage_of_rank[rank]) : 0;
  if (stage >= ps.stages.size() || static_cast<size_t>(op) >= ps.stages[stage].size()) {
    return "in op " + std::to_string(op);
  }
  const Program& p = ps.stages[stage];
  const Op& o = p.op(static_cast<OpId>(op));
  std::string kind = o.kind == OpKind::kCompute      ? std::string(to_string(o.compute))
                     : o.kind == OpKind::kCollective ? std::string(to_string(o.collective))
                                                     : std::string(to_string(o.kind));
  return "in op " + std::to_string(op) + " \"" + p.label(static_cast<OpId>(op)) + "\" (" + kind + ")";
}

/// Which rank to blame for a hang: among ranks not done, the one idle the
/// longest (a rank blocked in a collective waits on the one that is stuck, and
/// kept working until it blocked).
std::string hang_report(const LaunchRequest& req, const ProgramSet& ps, const std::string& dir) {
  std::optional<ProgressSnapshot> worst;
  std::string missing;
  for (int r = 0; r < req.ranks; ++r) {
    const auto s = read_progress(dir, r);
    if (!s) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      continue;
    }
    if (s->state == RankState::kDone) continue;
    if (!worst || s->idle_s > worst->idle_s) worst = s;
  }
  if (!missing.empty()) return "rank " + missing + " never started";
  if (!worst) return "every rank finished, but mpirun did not exit";
  const ProgressSnapshot& w = *worst;
  char idle[32];
  std::snprintf(idle, sizeof idle, "%.1f", w.idle_s);
  const int op = w.compute_busy ? w.compute_op : (w.comm_op >= 0 ? w.comm_op : w.compute_op);
  return "rank " + std::to_string(w.rank) + " made no progress for " + idle + " s, " +
         op_text(ps, req.stage_of_rank, w.rank, op) + " of step " + std::to_string(w.step);
}

/// The rest of the line of `text` from `pos`.
std::string rest_of_line(const std::string& text, size_t pos) {
  const size_t end = text.find('\n', pos);
  return text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}
/// The digits of `text` at `pos` ("" if none); `pos` moves past them.
std::string digits_at(const std::string& text, size_t& pos) {
  const size_t start = pos;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
  return text.substr(start, pos - start);
}

/// The one line for a run whose mpirun exited with an error, from the log.
std::string exit_report(const LaunchRequest& req, const ProgramSet& ps, const std::string& dir,
                        const std::string& log) {
  // A rank's own error: "shardsim-rank: rank 1: error: ...".
  for (size_t at = log.find("shardsim-rank: rank "); at != std::string::npos;
       at = log.find("shardsim-rank: rank ", at + 1)) {
    size_t pos = at + 20;
    const std::string rank = digits_at(log, pos);
    if (!rank.empty() && log.compare(pos, 9, ": error: ") == 0) {
      return "rank " + rank + " failed: " + rest_of_line(log, pos + 9);
    }
  }
  // A rank that stopped before MPI started (bad arguments or input).
  if (const size_t at = log.find("shardsim-rank: error: "); at != std::string::npos) {
    return "a rank failed before starting: " + rest_of_line(log, at + 22);
  }
  // OpenMPI: "mpirun noticed that process rank 1 with PID 123 on node x exited on signal 9 (Killed)."
  for (size_t at = log.find("process rank "); at != std::string::npos; at = log.find("process rank ", at + 1)) {
    size_t pos = at + 13;
    const std::string rank = digits_at(log, pos);
    const std::string line = rest_of_line(log, pos);
    const size_t sig = line.find(" exited on signal ");
    if (rank.empty() || sig == std::string::npos) continue;
    size_t p = sig + 18;
    const std::string number = digits_at(line, p);
    std::string name;
    if (line.compare(p, 2, " (") == 0) name = " " + line.substr(p + 2, line.find(')', p) - p - 2);
    std::string where;
    if (const auto s = read_progress(dir, std::stoi(rank))) {
      const int op = s->compute_busy ? s->compute_op : std::max(s->compute_op, s->comm_op);
      where = s->state == RankState::kDone ? " after finishing its steps (at exit; see the log)"
                                           : ", last " + op_text(ps, req.stage_of_rank, std::stoi(rank), op) +
                                                 " of step " + std::to_string(s->step);
    }
    return "rank " + rank + " died (signal " + number + name + ")" + where;
  }
  // OpenMPI: "Process name: [[43210,1],1]\n  Exit code: 2".
  if (const size_t at = log.find("Process name: [["); at != std::string::npos) {
    const size_t inner = log.find("],", at);
    size_t pos = inner == std::string::npos ? log.size() : inner + 2;
    const std::string rank = digits_at(log, pos);
    const size_t code_at = log.find("Exit code:", at);
    if (!rank.empty() && code_at != std::string::npos) {
      size_t p = code_at + 10;
      while (p < log.size() && log[p] == ' ') ++p;
      return "rank " + rank + " exited with status " + digits_at(log, p);
    }
  }
  const std::string first = rest_of_line(log, 0);
  return "mpirun failed" + (first.empty() ? std::string() : ": " + first);
}

}  // namespace

std::string launch_ranks(const LaunchRequest& req, const ProgramSet& programs) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/shardsim-run-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) throw RunFailure("cannot create a work directory " + templ);
  const std::string dir = templ;
  const std::string log_path = dir + "/mpirun.log", result_path = dir + "/result.json";

  // One core per rank while there are enough cores (each rank's compute
  // thread keeps its core, its comm thread mostly sleeps); unbound when
  // oversubscribed. On this shared 2-core machine binding halved the spread
  // of pp 2 step times (0.15-0.20 s bound, 0.145-0.28 s unbound).
  const bool bind = req.ranks <= static_cast<int>(std::thread::hardware_concurrency());
  std::vector<std::string> argv = {req.mpirun,        "-n",        std::to_string(req.ranks),
                                   "--oversubscribe", "--bind-to", bind ? "core" : "none",
                                   req.rank_exe};
  argv.insert(argv.end(), req.rank_args.begin(), req.rank_args.end());
  argv.insert(argv.end(), {"--result", result_path, "--progress-dir", dir});
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  // OpenMPI puts every rank in a process group of its own, so killing
  // mpirun's group does not reach them. As a child subreaper this process
  // inherits any rank orphaned by mpirun's death, and reaps it below.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1UL);
  const InterruptGuard interrupt_guard;
  const pid_t pid = ::fork();
  if (pid < 0) throw RunFailure(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGHUP, SIG_DFL);
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    // OpenMPI refuses to run as root without these (CI runs as root); one
    // OpenBLAS thread per rank.
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
    ::execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "cannot run %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no race with the child's own call

  const auto deadline = Clock::now() + std::chrono::duration<double>(req.timeout_s);
  int status = 0;
  bool timed_out = false;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (Clock::now() >= deadline || g_interrupt != 0) {
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string hang;
  if (timed_out) hang = hang_report(req, programs, dir);
  // Whatever happened, no rank outlives the run: the process group first
  // (mpirun and whatever it forked there), then any rank that left it.
  if (timed_out) {
    ::kill(-pid, SIGTERM);
    const auto grace = Clock::now() + std::chrono::seconds(2);
    while (::waitpid(pid, &status, WNOHANG) != pid && Clock::now() < grace) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  ::kill(-pid, SIGKILL);  // no-op when the group is already empty
  for (int r = 0; r < req.ranks; ++r) {
    const auto s = read_progress(dir, r);
    if (s && runs(s->pid, req.rank_exe)) ::kill(s->pid, SIGKILL);
  }
  // Reap the ranks this process inherited (bounded: a process in
  // uninterruptible sleep could outlive SIGKILL for a while).
  const auto reap_until = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < reap_until) {
    const pid_t w = ::waitpid(-1, nullptr, WNOHANG);
    if (w < 0) break;  // no children left
    if (w == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  auto fail = [&](const std::string& why) {
    std::error_code ec;
    fs::remove(result_path, ec);  // never leave a result that looks complete
    throw RunFailure(why + " (mpirun log: " + log_path + ")");
  };
  if (g_interrupt != 0)
    fail(std::string("real run interrupted by signal ") + std::to_string(g_interrupt) + "; ranks stopped");
  if (timed_out) {
    char t[32];
    std::snprintf(t, sizeof t, "%g", req.timeout_s);
    fail("real run timed out after " + std::string(t) + " s: " + hang);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail(exit_report(req, programs, dir, read_text(log_path)));
  std::error_code ec;
  if (!fs::exists(result_path, ec)) fail("rank 0 wrote no result");
  std::string text = read_text(result_path);
  fs::remove_all(dir, ec);
  return text;
}

MeasuredRun launch_real_run(const LaunchRequest& req, const ProgramSet& programs) {
  const std::string text = launch_ranks(req, programs);
  try {
    return parse_measured_run(text, "rank 0's result");
  } catch (const std::exception& e) {
    throw RunFailure(e.what());
  }
}

}  // namespace shardsim::realexec
