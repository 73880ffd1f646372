// Helpers of the app library's text and file outputs (internal).
#pragma once

#include <cstdio>
#include <functional>
#include <string>

#include "shardsim/core/atomic_file.h"
#include "shardsim/core/error.h"
#include "shardsim/core/step_report.h"

namespace shardsim::detail {

/// printf appended to a std::string, of any length.
template <typename... A>
void appendf(std::string& out, const char* fmt, A... a) {
  const int n = std::snprintf(nullptr, 0, fmt, a...);
  if (n <= 0) return;
  std::string buf(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(buf.data(), buf.size(), fmt, a...);
  out.append(buf.data(), static_cast<size_t>(n));
}

/// Writes `file` atomically with `write`; UsageError (the path and why) when
/// it cannot be written.
inline void write_output_file(const std::string& file, const std::function<bool(std::FILE*)>& write) {
  std::string err;
  if (!write_file_atomic(file, write, err)) throw UsageError(err);
}

/// Writes `text` to `file` atomically; UsageError when it cannot.
inline void write_output_file(const std::string& file, const std::string& text) {
  std::string err;
  if (!write_file_atomic(file, text, err)) throw UsageError(err);
}

/// The summary's "critical path" line: its four largest categories'
/// shares, ops and devices, or why it was not computed; "" when neither
/// (step.cc).
std::string critical_path_line(const CriticalPathReport& cp);

}  // namespace shardsim::detail
