// Errors in user input. Loaders throw InputError and the application library
// UsageError; the faces catch them: the CLI prints the one line and exits with
// status 2, the Python module raises ValueError with the same line.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace shardsim {

/// A problem with a user's input, located by file and JSON pointer.
/// what() is the one line shown to the user:
///   "scenario.json: error: /plan/tp: 3 does not divide heads (32)"
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string json_pointer, const std::string& message);
  const std::string& file() const { return file_; }
  const std::string& json_pointer() const { return json_pointer_; }

 private:
  std::string file_;
  std::string json_pointer_;
};

/// A request that cannot be carried out as asked, outside any input file: an
/// option's value, an output path that cannot be written, a backend this
/// build lacks. what() is the reason, without a prefix.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The problem was already reported on stderr by a child process (the
/// SimGrid worker), which exited with `status` (2: it rejected its input).
class AlreadyReported : public std::runtime_error {
 public:
  explicit AlreadyReported(int status)
      : std::runtime_error("the worker process failed (its message is above)"), status(status) {}
  int status = 1;
};

/// Per-rank programs (an imported trace) that cannot finish: an op of
/// `device` never ran (program op `op`, the first such), every device
/// waiting on another. The importer turns it into an InputError naming the
/// trace's node; for programs shardsim lowers it is a bug.
class Deadlock : public std::runtime_error {
 public:
  Deadlock(uint32_t device, uint32_t op)
      : std::runtime_error("the step deadlocks: device " + std::to_string(device) + "'s op " + std::to_string(op) +
                           " never ran"),
        device(device),
        op(op) {}
  uint32_t device = 0;
  uint32_t op = 0;
};

/// An internal invariant broke: a bug in shardsim, never a user's fault.
[[noreturn]] void invariant_failed(const char* cond, const char* why, const char* file, int line);

#define SHARDSIM_ASSERT(cond, why) ((cond) ? (void)0 : ::shardsim::invariant_failed(#cond, why, __FILE__, __LINE__))

}  // namespace shardsim
