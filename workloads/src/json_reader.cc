#include "json_reader.h"

#include <cmath>

namespace shardsim::detail {

std::string describe(const Json& j) {
  // Replace invalid UTF-8 (a --set value is taken as raw text) rather than throw.
  std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return std::string(j.type_name()) + " " + s;
}

ObjectReader::ObjectReader(const Json& j, std::string file, std::string ptr)
    : j_(j), file_(std::move(file)), ptr_(std::move(ptr)) {
  if (!j_.is_object()) throw InputError(file_, ptr_.empty() ? "/" : ptr_, "expected an object, got " + describe(j_));
}

void ObjectReader::fail(const std::string& key, const std::string& message) const {
  throw InputError(file_, path(key), message);
}

void ObjectReader::fail_here(const std::string& message) const {
  throw InputError(file_, ptr_.empty() ? "/" : ptr_, message);
}

const Json& ObjectReader::get(const std::string& key) {
  known_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end()) fail(key, "missing required field");
  return *it;
}

const Json& ObjectReader::raw(const std::string& key) {
  return get(key);
}

int64_t ObjectReader::positive_int(const std::string& key) {
  const Json& v = get(key);
  if (!v.is_number_integer()) fail(key, "expected a positive integer, got " + describe(v));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    fail(key, "expected a positive integer below 2^63, got " + v.dump());
  }
  const int64_t x = v.get<int64_t>();
  if (x <= 0) fail(key, "expected a positive integer, got " + std::to_string(x));
  return x;
}

int64_t ObjectReader::positive_int(const std::string& key, int64_t fallback) {
  if (!has(key)) return fallback;
  return positive_int(key);
}

int64_t ObjectReader::int_in(const std::string& key, int64_t lo, int64_t hi, int64_t fallback) {
  if (!has(key)) return fallback;
  const Json& v = get(key);
  const std::string want = "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  if (!v.is_number_integer()) fail(key, want + ", got " + describe(v));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) fail(key, want);
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) fail(key, want + ", got " + std::to_string(x));
  return x;
}

double ObjectReader::positive_number(const std::string& key) {
  const Json& v = get(key);
  if (!v.is_number()) fail(key, "expected a positive number, got " + describe(v));
  const double x = v.get<double>();
  if (!(x > 0) || !std::isfinite(x)) fail(key, "expected a positive number, got " + v.dump());
  return x;
}

double ObjectReader::positive_number(const std::string& key, double fallback) {
  if (!has(key)) return fallback;
  return positive_number(key);
}

double ObjectReader::number_in(const std::string& key, double lo, double hi, double fallback) {
  if (!has(key)) return fallback;
  const Json& v = get(key);
  auto range = [&] {
    char buf[96];
    std::snprintf(buf, sizeof buf, "expected a number from %g to %g", lo, hi);
    return std::string(buf);
  };
  if (!v.is_number()) fail(key, range() + ", got " + describe(v));
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi)) fail(key, range() + ", got " + v.dump());
  return x;
}

bool ObjectReader::boolean(const std::string& key, bool fallback) {
  if (!has(key)) return fallback;
  const Json& v = get(key);
  if (!v.is_boolean()) fail(key, "expected true or false, got " + describe(v));
  return v.get<bool>();
}

std::string ObjectReader::string(const std::string& key) {
  const Json& v = get(key);
  if (!v.is_string()) fail(key, "expected a string, got " + describe(v));
  return v.get<std::string>();
}

std::string ObjectReader::string(const std::string& key, const std::string& fallback) {
  if (!has(key)) return fallback;
  return string(key);
}

std::string ObjectReader::choice(const std::string& key, const std::vector<std::string>& allowed,
                                 const std::string& fallback) {
  std::string v = has(key) ? string(key) : fallback;
  if (v.empty() && fallback.empty() && !j_.contains(key)) fail(key, "missing required field");
  for (const auto& a : allowed) {
    if (a == v) return v;
  }
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + ("\"" + a + "\"");
  fail(key, "expected one of " + list + ", got \"" + v + "\"");
}

void ObjectReader::done() const {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (known_.count(it.key()) == 0) {
      std::string known;
      for (const auto& k : known_) known += (known.empty() ? "" : ", ") + k;
      fail(it.key(), "unknown field (expected one of: " + known + ")");
    }
  }
}

Json parse_json_text(const std::string& text, const std::string& file) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    // Line and column from the byte offset nlohmann reports (1-based).
    size_t line = 1, col = 1;
    const size_t end = std::min(text.size(), e.byte > 0 ? e.byte - 1 : 0);
    for (size_t i = 0; i < end; ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string msg = e.what();
    const auto colon = msg.find(": ", msg.find("parse error"));
    if (colon != std::string::npos) msg = msg.substr(colon + 2);
    throw InputError(file + ":" + std::to_string(line) + ":" + std::to_string(col), "", "malformed JSON: " + msg);
  } catch (const Json::exception& e) {
    // For example a number too large for a double (out_of_range 406).
    std::string msg = e.what();
    const auto bracket = msg.find("] ");
    if (bracket != std::string::npos) msg = msg.substr(bracket + 2);
    throw InputError(file, "", "malformed JSON: " + msg);
  }
}

}  // namespace shardsim::detail
