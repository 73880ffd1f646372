#include "args.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>

namespace shardsim::cli {

int64_t parse_bytes(const std::string& flag, const std::string& text) {
  const std::string want = flag + ": expected a size such as 4096, 64MB or 256MiB, got \"" + text + "\"";
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) throw UsageError(want);
  char* end = nullptr;
  const std::string num = text.substr(0, i);
  const double v = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !(v > 0)) throw UsageError(want);
  const std::string unit = text.substr(i);
  double mul = 0;
  if (unit.empty() || unit == "B")
    mul = 1;
  else if (unit == "kB" || unit == "KB")
    mul = 1e3;
  else if (unit == "MB")
    mul = 1e6;
  else if (unit == "GB")
    mul = 1e9;
  else if (unit == "TB")
    mul = 1e12;
  else if (unit == "KiB")
    mul = 1024.0;
  else if (unit == "MiB")
    mul = 1024.0 * 1024;
  else if (unit == "GiB")
    mul = 1024.0 * 1024 * 1024;
  else if (unit == "TiB")
    mul = 1024.0 * 1024 * 1024 * 1024;
  else
    throw UsageError(want);
  const double bytes = std::round(v * mul);
  if (bytes < 1 || bytes > 1e15) throw UsageError(flag + ": size must be from 1 byte to 1 PB, got \"" + text + "\"");
  return static_cast<int64_t>(bytes);
}

std::vector<uint32_t> parse_device_list(const std::string& flag, const std::string& text, int64_t limit) {
  std::vector<uint32_t> out;
  size_t pos = 0;
  auto bad = [&] {
    return UsageError(flag + ": expected device ids below " + std::to_string(limit) + " such as 0,1,8-15, got \"" +
                      text + "\"");
  };
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const size_t dash = item.find('-');
    auto number = [&](const std::string& s) -> int64_t {
      if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) throw bad();
      return std::stoll(s);
    };
    const int64_t lo = number(dash == std::string::npos ? item : item.substr(0, dash));
    const int64_t hi = dash == std::string::npos ? lo : number(item.substr(dash + 1));
    if (lo > hi || hi >= limit) throw bad();
    if (hi - lo > 4096) throw UsageError(flag + ": at most 4096 devices can be traced at once");
    for (int64_t d = lo; d <= hi; ++d) out.push_back(static_cast<uint32_t>(d));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (out.size() > 4096) throw UsageError(flag + ": at most 4096 devices can be traced at once");
  return out;
}

Override parse_set(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw UsageError("--set: expected PATH=VALUE such as plan.tp=4, got \"" + text + "\"");
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::string take_value(const std::vector<std::string>& args, size_t& i) {
  if (i + 1 >= args.size()) throw UsageError(args[i] + ": expected a value after it");
  return args[++i];
}

int64_t parse_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < lo || x > hi) {
    throw UsageError(flag + ": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                     ", got \"" + v + "\"");
  }
  return x;
}

double parse_seconds(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(x > 0) || x > 86400) {
    throw UsageError(flag + ": expected seconds in (0, 86400], got \"" + v + "\"");
  }
  return x;
}

void take_scenario_file(const std::string& cmd, const std::string& a, std::string& file) {
  const std::string prefix = cmd.empty() ? "" : cmd + ": ";
  if (!a.empty() && a[0] == '-') throw UsageError(prefix + "unknown option " + a);
  if (!file.empty()) throw UsageError(prefix + "one scenario file expected, got a second: " + a);
  file = a;
}

bool progress_wanted() {
  const char* ci = std::getenv("CI");
  return ::isatty(STDERR_FILENO) && (ci == nullptr || *ci == '\0');
}

}  // namespace shardsim::cli
