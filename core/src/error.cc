#include "shardsim/core/error.h"

#include <cstdio>
#include <cstdlib>

namespace shardsim {
namespace {
std::string format(const std::string& file, const std::string& ptr, const std::string& msg) {
  std::string out = file.empty() ? std::string("<input>") : file;
  out += ": error: ";
  if (!ptr.empty()) {
    out += ptr;
    out += ": ";
  }
  out += msg;
  return out;
}
}  // namespace

InputError::InputError(std::string file, std::string json_pointer, const std::string& message)
    : std::runtime_error(format(file, json_pointer, message)),
      file_(std::move(file)),
      json_pointer_(std::move(json_pointer)) {}

void invariant_failed(const char* cond, const char* why, const char* file, int line) {
  std::fprintf(stderr, "shardsim: internal error at %s:%d: %s (%s)\n", file, line, why, cond);
  std::abort();
}

}  // namespace shardsim
