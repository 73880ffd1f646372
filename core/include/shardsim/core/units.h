// Strong unit types: make the wrong sum fail to compile.
//
// SimTime is an integer count of picoseconds (int64 covers about 106 days), so
// events compare exactly. Bytes is an int64 count. Flops, BytesPerSec and
// FlopsPerSec are doubles. Only meaningful operators exist: Bytes / BytesPerSec
// and Flops / FlopsPerSec give seconds as a double (to_sim_time rounds once).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace shardsim {

/// A tagged scalar. Same-tag quantities add, subtract and compare; scaling by a
/// plain number keeps the tag; dividing two of the same tag gives a ratio.
template <typename Tag, typename Rep>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(Rep v) : v_(v) {}
  constexpr Rep value() const { return v_; }

  constexpr Quantity operator+(Quantity o) const { return Quantity(v_ + o.v_); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(v_ - o.v_); }
  constexpr Quantity& operator+=(Quantity o) {
    v_ += o.v_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o) {
    v_ -= o.v_;
    return *this;
  }
  constexpr double operator/(Quantity o) const { return static_cast<double>(v_) / static_cast<double>(o.v_); }
  constexpr auto operator<=>(const Quantity&) const = default;

 private:
  Rep v_{};
};

struct BytesTag {};
struct FlopsTag {};
struct BytesPerSecTag {};
struct FlopsPerSecTag {};

using Bytes = Quantity<BytesTag, int64_t>;
using Flops = Quantity<FlopsTag, double>;
using BytesPerSec = Quantity<BytesPerSecTag, double>;
using FlopsPerSec = Quantity<FlopsPerSecTag, double>;

/// Simulated time in integer picoseconds.
class SimTime {
 public:
  constexpr SimTime() = default;
  static constexpr SimTime from_ps(int64_t ps) { return SimTime(ps); }
  static constexpr SimTime max() { return SimTime(std::numeric_limits<int64_t>::max()); }
  constexpr int64_t ps() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  constexpr double micros() const { return static_cast<double>(ps_) * 1e-6; }
  constexpr SimTime operator+(SimTime o) const { return SimTime(ps_ + o.ps_); }
  constexpr SimTime operator-(SimTime o) const { return SimTime(ps_ - o.ps_); }
  constexpr SimTime& operator+=(SimTime o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr SimTime operator*(int64_t k) const { return SimTime(ps_ * k); }
  constexpr auto operator<=>(const SimTime&) const =
      default;  // NOLINT(modernize-use-nullptr): clang-tidy 14 misreads <=>

 private:
  constexpr explicit SimTime(int64_t ps) : ps_(ps) {}
  int64_t ps_ = 0;
};

/// Longest duration a SimTime holds without risk of overflow when summed:
/// 2^62 ps, about 53 days.
inline constexpr int64_t kMaxDurationPs = int64_t{1} << 62;

/// The one place a duration in seconds becomes integer picoseconds: rounded up,
/// so a non-zero duration never becomes zero; saturated at kMaxDurationPs
/// (inputs are bounded well below it, see run_training_step).
inline SimTime to_sim_time(double seconds) {
  const double ps = std::ceil(seconds * 1e12);
  if (!(ps < static_cast<double>(kMaxDurationPs))) return SimTime::from_ps(kMaxDurationPs);
  return SimTime::from_ps(static_cast<int64_t>(ps));
}

// Factories (decimal prefixes unless the name says otherwise).
constexpr Bytes bytes(int64_t n) {
  return Bytes(n);
}
constexpr Bytes kib(int64_t n) {
  return Bytes(n * 1024);
}
constexpr Bytes mib(int64_t n) {
  return Bytes(n * 1024 * 1024);
}
constexpr Bytes gib(int64_t n) {
  return Bytes(n * 1024 * 1024 * 1024);
}
constexpr BytesPerSec gbyte_per_s(double g) {
  return BytesPerSec(g * 1e9);
}
constexpr FlopsPerSec flops_per_s(double f) {
  return FlopsPerSec(f);
}
constexpr SimTime picoseconds(int64_t ps) {
  return SimTime::from_ps(ps);
}
constexpr SimTime nanoseconds(int64_t ns) {
  return SimTime::from_ps(ns * 1000);
}
inline SimTime microseconds(double us) {
  return to_sim_time(us * 1e-6);
}

/// Seconds to move `b` at rate `bw` (double; convert with to_sim_time).
inline double transfer_seconds(Bytes b, BytesPerSec bw) {
  return static_cast<double>(b.value()) / bw.value();
}
inline double compute_seconds(Flops f, FlopsPerSec peak) {
  return f.value() / peak.value();
}

inline constexpr Bytes operator*(Bytes b, int64_t k) {
  return Bytes(b.value() * k);
}
inline constexpr BytesPerSec operator*(BytesPerSec b, double k) {
  return BytesPerSec(b.value() * k);
}
inline constexpr FlopsPerSec operator*(FlopsPerSec f, double k) {
  return FlopsPerSec(f.value() * k);
}
inline constexpr Flops operator*(Flops f, double k) {
  return Flops(f.value() * k);
}

}  // namespace shardsim
