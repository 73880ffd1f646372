#include "shardsim/sim/result_codec.h"

#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace shardsim {
namespace {

constexpr uint64_t kMagic = 0x3230534552455353ull;  // "SSERES02" little-endian

class Writer {
 public:
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    pod<uint64_t>(s.size());
    out_ += s;
  }
  template <typename T>
  void pods(const std::vector<T>& v) {
    pod<uint64_t>(v.size());
    if (!v.empty()) out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void named(const std::vector<std::pair<std::string, double>>& v) {
    pod<uint64_t>(v.size());
    for (const auto& [name, value] : v) {
      str(name);
      pod(value);
    }
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  T pod() {
    T v;
    need(sizeof v);
    std::memcpy(&v, in_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string str() {
    const auto n = pod<uint64_t>();
    need(n);
    std::string s = in_.substr(at_, n);
    at_ += n;
    return s;
  }
  template <typename T>
  std::vector<T> pods() {
    const auto n = pod<uint64_t>();
    if (n > (in_.size() - at_) / sizeof(T)) throw std::runtime_error("engine result: truncated");
    std::vector<T> v(n);
    if (n > 0) std::memcpy(v.data(), in_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
    return v;
  }
  std::vector<std::pair<std::string, double>> named() {
    const auto n = pod<uint64_t>();
    if (n > in_.size() - at_) throw std::runtime_error("engine result: truncated");
    std::vector<std::pair<std::string, double>> v;
    for (uint64_t i = 0; i < n; ++i) {
      std::string name = str();
      v.emplace_back(std::move(name), pod<double>());
    }
    return v;
  }
  void need(uint64_t n) const {
    if (n > in_.size() - at_) throw std::runtime_error("engine result: truncated");
  }
  bool at_end() const { return at_ == in_.size(); }

 private:
  const std::string& in_;
  size_t at_ = 0;
};

}  // namespace

std::string encode_engine_result(const EngineResult& r) {
  Writer w;
  w.pod(kMagic);
  w.pod(r.step_time.ps());
  w.pod(r.critical_device);
  w.pod(r.breakdown);
  w.pod(r.events);
  w.pod(r.flows);
  w.pods(r.timeline.devices);
  w.pods(r.timeline.spans);
  w.pods(r.timeline.flows);
  w.pods(r.link_bytes);
  w.pod(r.flow_byte_hops);
  w.pod(r.active_devices);
  w.pod(r.symmetry.step);
  w.str(r.symmetry_note);
  w.named(r.compute_by_kind_s);
  w.named(r.comm_busy_by_stream_s);
  return w.take();
}

EngineResult decode_engine_result(const std::string& bytes) {
  Reader in(bytes);
  if (in.pod<uint64_t>() != kMagic) throw std::runtime_error("engine result: bad magic");
  EngineResult r;
  r.step_time = SimTime::from_ps(in.pod<int64_t>());
  r.critical_device = in.pod<uint32_t>();
  r.breakdown = in.pod<StepBreakdown>();
  r.events = in.pod<uint64_t>();
  r.flows = in.pod<uint64_t>();
  r.timeline.devices = in.pods<uint32_t>();
  r.timeline.spans = in.pods<TimelineSpan>();
  r.timeline.flows = in.pods<TimelineFlow>();
  r.link_bytes = in.pods<double>();
  r.flow_byte_hops = in.pod<double>();
  r.active_devices = in.pod<int64_t>();
  r.symmetry.step = in.pod<decltype(r.symmetry.step)>();
  r.symmetry_note = in.str();
  r.compute_by_kind_s = in.named();
  r.comm_busy_by_stream_s = in.named();
  if (!in.at_end()) throw std::runtime_error("engine result: trailing bytes");
  return r;
}

}  // namespace shardsim
