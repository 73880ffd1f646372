// Reading a calibration profile (the JSON `shardsim calibrate` writes).
#include <algorithm>

#include "loader_parts.h"
#include "shardsim/core/read_file.h"

namespace shardsim::detail {

std::string sibling_path(const std::string& file, const std::string& name) {
  if (!name.empty() && name.front() == '/') return name;
  const size_t slash = file.find_last_of('/');
  return slash == std::string::npos ? name : file.substr(0, slash + 1) + name;
}

/// A profile written by `shardsim calibrate` (realexec/src/calibrate.cc).
std::shared_ptr<const CalibrationProfile> load_calibration(const std::string& path) {
  const std::string text = read_file_text(path, "cannot read the calibration profile (cluster.calibration)");
  const Json root = detail::parse_json_text(text, path);
  if (!root.is_object()) throw InputError(path, "/", "expected a calibration profile object");
  auto prof = std::make_shared<CalibrationProfile>();
  prof->file = path;
  prof->content_hash = 0xcbf29ce484222325ull;  // FNV-1a 64 of the file's bytes
  for (unsigned char ch : text) prof->content_hash = (prof->content_hash ^ ch) * 0x100000001b3ull;
  ObjectReader r(root, path, "");
  r.string("backend", "");
  r.positive_int("ranks", 1);
  r.string("note", "");
  ObjectReader c(r.raw("compute"), path, "/compute");
  // An array of measured products, sorted by volume (m·n·k).
  auto matmuls = [&](const std::string& key) {
    const Json& mm = c.raw(key);
    if (!mm.is_array() || mm.empty() || mm.size() > 1000) c.fail(key, "expected an array of measured matmuls");
    std::vector<CalibrationProfile::MatmulPoint> points;
    for (size_t i = 0; i < mm.size(); ++i) {
      ObjectReader m(mm[i], path, "/compute/" + key + "/" + std::to_string(i));
      const double v = static_cast<double>(m.positive_int("m")) * static_cast<double>(m.positive_int("n")) *
                       static_cast<double>(m.positive_int("k"));
      m.positive_number("time_s");
      points.push_back({v, m.positive_number("flops_per_s")});
      m.done();
    }
    std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.volume < b.volume; });
    return points;
  };
  prof->matmul = matmuls("matmul");
  if (c.has("matmul_fp8")) prof->matmul_fp8 = matmuls("matmul_fp8");
  {
    ObjectReader a(c.raw("attention"), path, "/compute/attention");
    a.positive_int("tokens");
    a.positive_int("heads");
    a.positive_int("head_dim");
    a.positive_number("time_s");
    prof->attention_flops_per_s = a.positive_number("flops_per_s");
    a.done();
    ObjectReader mem(c.raw("memory"), path, "/compute/memory");
    mem.positive_int("bytes");
    mem.positive_number("time_s");
    prof->memory_bytes_per_s = mem.positive_number("GBps") * 1e9;
    mem.done();
    ObjectReader l(c.raw("loss"), path, "/compute/loss");
    l.positive_int("values");
    l.positive_number("time_s");
    prof->loss_values_per_s = l.positive_number("values_per_s");
    l.done();
  }
  c.done();
  const Json& cs = r.raw("collectives");
  if (!cs.is_array() || cs.size() > 10000) r.fail("collectives", "expected an array of collective fits");
  for (size_t i = 0; i < cs.size(); ++i) {
    ObjectReader f(cs[i], path, "/collectives/" + std::to_string(i));
    CalibrationProfile::Fit fit;
    fit.kind =
        f.choice("kind", {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "send-recv"}, "");
    fit.group = f.positive_int("group");
    f.raw("points");
    fit.latency_s = f.number_in("latency_us", 0, 1e9, 0) * 1e-6;
    fit.bytes_per_s = f.positive_number("bandwidth_GBps") * 1e9;
    f.done();
    prof->collectives.push_back(fit);
  }
  r.done();
  return prof;
}

}  // namespace shardsim::detail
