// Errors in user input. Loaders throw InputError; only cli/ catches it, prints
// its one line and exits with status 2.
#pragma once

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

/// An internal invariant broke: a bug in shardsim, never a user's fault.
[[noreturn]] void invariant_failed(const char* cond, const char* why, const char* file, int line);

#define SHARDSIM_ASSERT(cond, why) ((cond) ? (void)0 : ::shardsim::invariant_failed(#cond, why, __FILE__, __LINE__))

}  // namespace shardsim
