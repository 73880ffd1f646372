#include "shardsim/realexec/progress.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <new>

namespace shardsim::realexec {
namespace {
int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace

std::string progress_path(const std::string& dir, int rank) {
  return dir + "/rank-" + std::to_string(rank) + ".progress";
}

ProgressWriter::ProgressWriter(const std::string& dir, int rank) : rec_(&local_) {
  if (dir.empty()) return;
  const std::string path = progress_path(dir, rank);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;  // progress is diagnostics only: run without it
  if (::ftruncate(fd, sizeof(ProgressRecord)) == 0) {
    void* p = ::mmap(nullptr, sizeof(ProgressRecord), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) {
      rec_ = new (p) ProgressRecord();
      mapped_ = true;
    }
  }
  ::close(fd);
  rec_->pid.store(static_cast<int32_t>(::getpid()));
  touch();
}

ProgressWriter::~ProgressWriter() {
  if (mapped_) ::munmap(rec_, sizeof(ProgressRecord));
}

void ProgressWriter::touch() {
  rec_->updated_ns.store(monotonic_ns(), std::memory_order_relaxed);
}

std::optional<ProgressSnapshot> read_progress(const std::string& dir, int rank) {
  const int fd = ::open(progress_path(dir, rank).c_str(), O_RDONLY);
  if (fd < 0) return std::nullopt;
  std::optional<ProgressSnapshot> out;
  void* p = ::mmap(nullptr, sizeof(ProgressRecord), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return std::nullopt;
  const auto* r = static_cast<const ProgressRecord*>(p);
  ProgressSnapshot s;
  s.rank = rank;
  s.state = static_cast<RankState>(r->state.load());
  s.pid = r->pid.load();
  s.step = r->step.load();
  s.compute_op = r->compute_op.load();
  s.comm_op = r->comm_op.load();
  s.compute_busy = r->compute_busy.load() != 0;
  s.ops_done = r->ops_done.load();
  s.idle_s = static_cast<double>(monotonic_ns() - r->updated_ns.load()) * 1e-9;
  out = s;
  ::munmap(p, sizeof(ProgressRecord));
  return out;
}

}  // namespace shardsim::realexec
