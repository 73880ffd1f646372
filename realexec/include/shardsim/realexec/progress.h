// A rank's progress record: a small file each rank maps into memory and
// updates as its ops start and end, so that the launcher can say which rank
// hung or died (it reads the files when a run times out or fails).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

namespace shardsim::realexec {

enum class RankState : int32_t { kStarting = 0, kRunning = 1, kDone = 2 };

/// Layout of the file (shared between processes of one machine through a
/// MAP_SHARED mapping; the atomics are lock-free).
struct ProgressRecord {
  std::atomic<int32_t> state{0};  ///< RankState
  std::atomic<int32_t> pid{0};
  std::atomic<int32_t> step{-1};         ///< step running (warm-up steps first)
  std::atomic<int32_t> compute_op{-1};   ///< last compute op started
  std::atomic<int32_t> comm_op{-1};      ///< last communication op started
  std::atomic<int64_t> ops_done{0};      ///< ops ended, all steps
  std::atomic<int64_t> updated_ns{0};    ///< CLOCK_MONOTONIC of the last update
  std::atomic<int32_t> compute_busy{0};  ///< 1 while a compute op runs
};
static_assert(std::atomic<int64_t>::is_always_lock_free, "progress records need lock-free atomics");

/// "<dir>/rank-<r>.progress".
std::string progress_path(const std::string& dir, int rank);

/// A rank's own record, mapped read-write (unmapped on destruction).
class ProgressWriter {
 public:
  /// Creates and maps the file; with an empty `dir`, records into memory only.
  ProgressWriter(const std::string& dir, int rank);
  ~ProgressWriter();
  ProgressWriter(const ProgressWriter&) = delete;
  ProgressWriter& operator=(const ProgressWriter&) = delete;
  ProgressRecord& record() { return *rec_; }
  /// Stamps updated_ns with the current monotonic time.
  void touch();

 private:
  ProgressRecord* rec_ = nullptr;
  bool mapped_ = false;
  ProgressRecord local_;
};

/// A copy of a rank's record as the launcher reads it.
struct ProgressSnapshot {
  int rank = 0;
  RankState state = RankState::kStarting;
  int pid = 0;
  int step = -1;
  int compute_op = -1;
  int comm_op = -1;
  bool compute_busy = false;
  int64_t ops_done = 0;
  double idle_s = 0;  ///< seconds since the rank's last update
};
/// Reads rank `rank`'s record; nullopt if the rank never created it.
std::optional<ProgressSnapshot> read_progress(const std::string& dir, int rank);

}  // namespace shardsim::realexec
