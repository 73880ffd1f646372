// Strict reading of JSON objects for the scenario loader: every field is
// typed, checked and accounted for; anything wrong throws InputError naming
// the file and JSON pointer. Private to workloads/ (includes nlohmann).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "shardsim/core/error.h"

namespace shardsim::detail {

using Json = nlohmann::json;

std::string describe(const Json& j);

/// A view of one JSON object at `ptr` in `file`. Call done() after reading to
/// reject unknown fields.
class ObjectReader {
 public:
  ObjectReader(const Json& j, std::string file, std::string ptr);

  /// Whether the field is present. Every key asked about counts as known.
  bool has(const std::string& key) {
    known_.insert(key);
    return j_.contains(key);
  }
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  [[noreturn]] void fail_here(const std::string& message) const;
  std::string path(const std::string& key) const { return ptr_ + "/" + key; }
  const std::string& file() const { return file_; }
  const std::string& ptr() const { return ptr_; }

  const Json& raw(const std::string& key);
  int64_t positive_int(const std::string& key);
  int64_t positive_int(const std::string& key, int64_t fallback);
  int64_t int_in(const std::string& key, int64_t lo, int64_t hi, int64_t fallback);
  double positive_number(const std::string& key);
  double positive_number(const std::string& key, double fallback);
  double number_in(const std::string& key, double lo, double hi, double fallback);
  bool boolean(const std::string& key, bool fallback);
  std::string string(const std::string& key);
  std::string string(const std::string& key, const std::string& fallback);
  std::string choice(const std::string& key, const std::vector<std::string>& allowed, const std::string& fallback);
  void done() const;

 private:
  const Json& get(const std::string& key);
  const Json& j_;
  std::string file_;
  std::string ptr_;
  std::set<std::string> known_;
};

/// Parses JSON text; malformed text throws InputError with line and column.
Json parse_json_text(const std::string& text, const std::string& file);

}  // namespace shardsim::detail
