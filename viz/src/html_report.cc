// The HTML report. Plots are SVG drawn here: a page must open anywhere, with
// no network and no script.
#include "shardsim/viz/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string_view>

namespace shardsim {
namespace {

std::string esc(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// A human duration: "12.3 ms".
std::string dur(double s) {
  if (s >= 1) return fmt("%.3f s", s);
  if (s >= 1e-3) return fmt("%.2f ms", s * 1e3);
  return fmt("%.1f us", s * 1e6);
}
std::string gib(double b) {
  return fmt("%.2f GiB", b / (1024.0 * 1024 * 1024));
}

/// A colour per category, stable across reports: fixed for the compute kinds
/// and streams shardsim lowers to, hashed for anything else.
std::string colour(std::string_view name) {
  static constexpr std::pair<std::string_view, const char*> kFixed[] = {
      {"matmul", "#4e79a7"},  {"attention", "#f28e2b"}, {"elementwise", "#76b7b2"}, {"norm", "#59a14f"},
      {"softmax", "#edc948"}, {"embedding", "#e15759"}, {"loss", "#b07aa1"},        {"optimizer", "#9c755f"},
      {"tp comm", "#ff9da7"}, {"dp gather", "#86bcb6"}, {"dp reduce", "#d37295"},   {"ep comm", "#bab0ac"}};
  for (const auto& [n, c] : kFixed) {
    if (n == name) return c;
  }
  static constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                             "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295"};
  uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return kPalette[h % (sizeof kPalette / sizeof kPalette[0])];
}

class Svg {
 public:
  Svg(int w, int h) : w_(w), h_(h) {}
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& title = "") {
    out_ += "<rect x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.1f", y) + "\" width=\"" + fmt("%.2f", std::max(w, 0.3)) +
            "\" height=\"" + fmt("%.1f", h) + "\" fill=\"" + fill + "\">";
    if (!title.empty()) out_ += "<title>" + esc(title) + "</title>";
    out_ += "</rect>\n";
  }
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1) {
    out_ += "<line x1=\"" + fmt("%.1f", x1) + "\" y1=\"" + fmt("%.1f", y1) + "\" x2=\"" + fmt("%.1f", x2) + "\" y2=\"" +
            fmt("%.1f", y2) + "\" stroke=\"" + stroke + "\" stroke-width=\"" + fmt("%.1f", width) + "\"/>\n";
  }
  void text(double x, double y, const std::string& s, const char* anchor = "start", int size = 11) {
    out_ += "<text x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.1f", y) + "\" font-size=\"" + std::to_string(size) +
            "\" text-anchor=\"" + anchor + "\">" + esc(s) + "</text>\n";
  }
  void circle(double x, double y, double r, const std::string& fill, const std::string& title) {
    out_ += "<circle cx=\"" + fmt("%.1f", x) + "\" cy=\"" + fmt("%.1f", y) + "\" r=\"" + fmt("%.1f", r) + "\" fill=\"" +
            fill + "\" fill-opacity=\"0.8\"><title>" + esc(title) + "</title></circle>\n";
  }
  void polyline(const std::vector<std::pair<double, double>>& pts, const std::string& stroke,
                const std::string& fill = "none") {
    out_ += "<polyline fill=\"" + fill + "\" stroke=\"" + stroke + "\" stroke-width=\"1.5\" points=\"";
    for (const auto& [x, y] : pts) out_ += fmt("%.1f", x) + "," + fmt("%.1f", y) + " ";
    out_ += "\"/>\n";
  }
  std::string finish(const std::string& id) const {
    return "<svg id=\"" + id + "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(w_) +
           "\" height=\"" + std::to_string(h_) + "\" viewBox=\"0 0 " + std::to_string(w_) + " " + std::to_string(h_) +
           "\" font-family=\"sans-serif\">\n" + out_ + "</svg>\n";
  }

 private:
  int w_, h_;
  std::string out_;
};

/// "Nice" tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int want) {
  std::vector<double> out;
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / want;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
  for (double t = std::ceil(lo / step) * step; t <= hi + 1e-12 * step; t += step) out.push_back(t);
  return out;
}

std::string breakdown_section(const StepReport& r) {
  const int w = 900, h = 90;
  Svg svg(w, h);
  const StepBreakdown& b = r.breakdown;
  const std::pair<const char*, double> parts[] = {{"compute", b.compute_s},
                                                  {"exposed communication", b.exposed_comm_s},
                                                  {"pipeline bubble", b.bubble_s},
                                                  {"other (waiting)", b.other_s}};
  const char* colours[] = {"#4e79a7", "#e15759", "#bab0ac", "#edc948"};
  double x = 10;
  const double scale = r.step_time_s > 0 ? (w - 20) / r.step_time_s : 0;
  int i = 0;
  for (const auto& [name, s] : parts) {
    svg.rect(x, 10, s * scale, 30, colours[i], std::string(name) + ": " + dur(s));
    x += s * scale;
    ++i;
  }
  double lx = 10;
  i = 0;
  for (const auto& [name, s] : parts) {
    svg.rect(lx, 55, 12, 12, colours[i]);
    const std::string label =
        std::string(name) + " " + dur(s) + fmt(" (%.1f%%)", r.step_time_s > 0 ? 100 * s / r.step_time_s : 0.0);
    svg.text(lx + 16, 65, label);
    lx += 16 + 7.0 * static_cast<double>(label.size()) + 20;
    ++i;
  }
  std::string html = "<h2>Where the step's time goes</h2>\n<p>Critical device " + std::to_string(r.critical_device) +
                     ": " + dur(r.step_time_s) + ", bound by " + esc(r.binding) + ".</p>\n" + svg.finish("breakdown");
  html += "<table><tr><th>compute kind</th><th>time</th></tr>\n";
  for (const auto& [name, s] : r.compute_by_kind_s)
    html += "<tr><td>" + esc(name) + "</td><td>" + dur(s) + "</td></tr>\n";
  if (r.compute_beside_comm_s > 0) {
    html +=
        "<tr><td>of which added by communication beside it</td><td>" + dur(r.compute_beside_comm_s) + "</td></tr>\n";
  }
  html += "</table>\n<table><tr><th>communication stream</th><th>busy (overlapping compute)</th></tr>\n";
  for (const auto& [name, s] : r.comm_busy_by_stream_s) {
    html += "<tr><td>" + esc(name) + "</td><td>" + dur(s) + "</td></tr>\n";
  }
  return html + "</table>\n";
}

std::string timeline_section(const ProgramSet& ps, const Timeline& tl, double step_s) {
  if (tl.devices.empty() || tl.spans.empty()) return "";
  const Program& any = ps.stages.front();
  const size_t streams = any.num_streams();
  // Which streams carry spans at all.
  std::vector<uint8_t> used(streams, 0);
  for (const TimelineSpan& s : tl.spans) used[s.stream] = 1;
  std::vector<size_t> rows_of_stream;
  for (size_t s = 0; s < streams; ++s) {
    if (used[s]) rows_of_stream.push_back(s);
  }
  const int left = 150, w = 1100, row_h = 16, gap = 10;
  const bool path = !tl.critical_path.empty();
  const int rows = static_cast<int>(tl.devices.size() * rows_of_stream.size()) + (path ? 1 : 0);
  const int h = 30 + rows * row_h + static_cast<int>(tl.devices.size() + (path ? 1 : 0)) * gap + 30;
  Svg svg(left + w + 20, h);
  const double scale = step_s > 0 ? w / step_s : 0;
  // Row of each (device, stream).
  std::map<std::pair<uint32_t, size_t>, int> row_y;
  int y = 20;
  if (path) {
    // The critical path's lane first: each op on it, on whichever device,
    // over the stretch of the step it accounts for.
    svg.text(5, y + 12, "critical path", "start", 10);
    svg.rect(left, y, w, row_h - 2, "#f4f4f4");
    // Consecutive ops of one colour, and any run of ops narrower than a
    // pixel together, are drawn as one rectangle (a path has up to millions
    // of ops; at most about two rectangles a pixel remain).
    double x0 = -1, x1 = -1, t0 = 0;
    std::string fill, first;
    int merged = 0;
    auto flush_path = [&](double t1) {
      if (x0 < 0) return;
      std::string title = first;
      if (merged > 1) title += " and " + std::to_string(merged - 1) + " more";
      svg.rect(left + x0, y + 1, x1 - x0, row_h - 4, fill, title + ": " + dur(t1 - t0));
    };
    double t_end = 0;
    for (const TimelineSpan& s : tl.critical_path) {
      const Program& p = ps.stages[s.program];
      const Op& op = p.op(s.op);
      const std::string c = colour(op.kind == OpKind::kCompute ? to_string(op.compute) : any.stream_names()[s.stream]);
      const double a = s.start.seconds() * scale, b = s.end.seconds() * scale;
      if (x0 >= 0 && ((c == fill && a - x1 < 1.0) || b - x0 < 1.0)) {
        x1 = b;
        ++merged;
      } else {
        flush_path(t_end);
        x0 = a;
        x1 = b;
        t0 = s.start.seconds();
        fill = c;
        first = "device " + std::to_string(s.device) + " " + p.label(s.op);
        merged = 1;
      }
      t_end = s.end.seconds();
    }
    flush_path(t_end);
    y += row_h + gap;
  }
  for (uint32_t d : tl.devices) {
    for (size_t s : rows_of_stream) {
      row_y[{d, s}] = y;
      svg.text(5, y + 12, "device " + std::to_string(d) + " " + any.stream_names()[s], "start", 10);
      // The row's background: time on this stream with nothing running
      // (on the compute stream of a pipeline, mostly bubble).
      svg.rect(left, y, w, row_h - 2, s == 0 ? "#f3e9e9" : "#f4f4f4");
      y += row_h;
    }
    y += gap;
  }
  // Spans, merged when they would draw inside one pixel of each other.
  struct Open {
    double x0 = -1, x1 = -1;
    std::string fill, title;
  };
  std::map<std::pair<uint32_t, size_t>, Open> open;
  auto flush = [&](const std::pair<uint32_t, size_t>& key, Open& o) {
    if (o.x0 >= 0) svg.rect(left + o.x0, row_y[key] + 1, o.x1 - o.x0, row_h - 4, o.fill, o.title);
    o = Open{};
  };
  std::vector<TimelineSpan> spans = tl.spans;
  std::sort(spans.begin(), spans.end(), [](const TimelineSpan& a, const TimelineSpan& b) {
    return std::tie(a.device, a.stream, a.start) < std::tie(b.device, b.stream, b.start);
  });
  for (const TimelineSpan& s : spans) {
    const std::pair<uint32_t, size_t> key{s.device, s.stream};
    const Program& p = ps.stages[s.program];
    const Op& op = p.op(s.op);
    const std::string fill = colour(op.kind == OpKind::kCompute ? to_string(op.compute) : any.stream_names()[s.stream]);
    const double x0 = s.start.seconds() * scale, x1 = s.end.seconds() * scale;
    Open& o = open[key];
    if (o.x0 >= 0 && x0 - o.x1 < 1.0 && (o.fill == fill || x1 - o.x0 < 2.0)) {
      o.x1 = std::max(o.x1, x1);
      continue;
    }
    flush(key, o);
    o = Open{x0, x1, fill, p.label(s.op) + ": " + dur((s.end - s.start).seconds())};
  }
  for (auto& [key, o] : open) flush(key, o);
  for (double t : ticks(0, step_s, 10)) {
    svg.line(left + t * scale, h - 28, left + t * scale, h - 22, "#333");
    svg.text(left + t * scale, h - 8, dur(t), "middle", 10);
  }
  return "<h2>Timeline</h2>\n<p>Each row is one stream of one device; coloured spans are ops (compute by kind, "
         "communication by stream; hover for the op), the tinted background of a compute row is time it sat idle "
         "(waiting or pipeline bubble). Spans closer than a pixel are drawn merged." +
         std::string(path ? " The first row is the step's critical path: the chain of ops, on any device, each "
                            "started by the one before, that makes the step time."
                          : "") +
         "</p>\n" + svg.finish("timeline");
}

/// Activations follow the microbatches a device holds: from the start of a
/// microbatch's first forward op to the end of its last backward op on the
/// first traced device; the rest of memory is flat over the step.
std::string memory_section(const StepReport& r, const ProgramSet& ps, const Timeline& tl) {
  const MemoryReport& m = r.memory;
  int64_t flat = 0, activations = 0;
  for (const auto& c : m.components) {
    if (c.name == "activations") {
      activations = c.bytes;
    } else {
      flat += c.bytes;
    }
  }
  const int left = 70, w = 1000, h = 260;
  Svg svg(left + w + 20, h + 50);
  const double step_s = r.step_time_s;
  // In-flight microbatches over time on the first device.
  std::vector<std::pair<double, int>> changes;  // (time, +1 / -1)
  if (!tl.devices.empty()) {
    const uint32_t d = tl.devices.front();
    std::map<int32_t, std::pair<double, double>> life;  // microbatch -> (first fwd start, last bwd end)
    for (const TimelineSpan& s : tl.spans) {
      if (s.device != d || s.stream != 0) continue;
      const Op& op = ps.stages[s.program].op(s.op);
      if (op.microbatch < 0) continue;
      auto [it, fresh] = life.try_emplace(op.microbatch, 1e300, -1.0);
      if (op.pass == Pass::kForward) it->second.first = std::min(it->second.first, s.start.seconds());
      if (op.pass == Pass::kBackward) it->second.second = std::max(it->second.second, s.end.seconds());
    }
    for (const auto& [mb, se] : life) {
      if (se.first < 1e300 && se.second >= se.first) {
        changes.emplace_back(se.first, +1);
        changes.emplace_back(se.second, -1);
      }
    }
    std::sort(changes.begin(), changes.end());
  }
  int most = 0, now = 0;
  for (const auto& [t, c] : changes) most = std::max(most, now += c);
  const double per_mb = most > 0 ? static_cast<double>(activations) / most : 0;
  const double top =
      std::max<double>(static_cast<double>(m.capacity_bytes), static_cast<double>(m.peak_bytes_per_device));
  const double ys = h / top, xs = step_s > 0 ? w / step_s : 0;
  auto Y = [&](double b) { return 10 + h - b * ys; };
  // Flat components as a band, activations stacked on top as a step curve.
  svg.rect(left, Y(static_cast<double>(flat)), w, static_cast<double>(flat) * ys, "#a0cbe8",
           "weights, gradients, optimizer state, logits, buffers: " + gib(static_cast<double>(flat)));
  std::vector<std::pair<double, double>> pts = {{left, Y(static_cast<double>(flat))}};
  now = 0;
  for (const auto& [t, c] : changes) {
    pts.emplace_back(left + t * xs, pts.back().second);
    now += c;
    pts.emplace_back(left + t * xs, Y(static_cast<double>(flat) + now * per_mb));
  }
  pts.emplace_back(left + w, pts.back().second);
  svg.polyline(pts, "#e15759");
  svg.line(left, Y(static_cast<double>(m.capacity_bytes)), left + w, Y(static_cast<double>(m.capacity_bytes)), "#333",
           1);
  svg.text(left + w, Y(static_cast<double>(m.capacity_bytes)) - 4,
           "capacity " + gib(static_cast<double>(m.capacity_bytes)), "end", 10);
  for (double b : ticks(0, top, 6)) svg.text(left - 5, Y(b) + 4, gib(b), "end", 10);
  for (double t : ticks(0, step_s, 10)) svg.text(left + t * xs, h + 30, dur(t), "middle", 10);
  std::string html = "<h2>Memory over the step</h2>\n<p>Device " +
                     (tl.devices.empty() ? std::string("0") : std::to_string(tl.devices.front())) +
                     ": the band is what stays resident (weights, gradients, optimizer state, logits, buffers); the "
                     "red curve adds the activations of the microbatches held between their forward and backward "
                     "passes (at peak " +
                     std::to_string(most) + " in flight). Peak " + gib(static_cast<double>(m.peak_bytes_per_device)) +
                     (m.fits ? " fits." : " does NOT fit.") + "</p>\n" + svg.finish("memory");
  html += "<table><tr><th>component at peak</th><th>bytes</th></tr>\n";
  for (const auto& c : m.components) {
    html += "<tr><td>" + esc(c.name) + "</td><td>" + gib(static_cast<double>(c.bytes)) + "</td></tr>\n";
  }
  return html + "</table>\n";
}

std::string roofline_section(const ProgramSet& ps, const Timeline& tl, double peak, double bw) {
  if (peak <= 0 || bw <= 0 || tl.spans.empty()) return "";
  // Per op name on the first traced device: total FLOPs, bytes and time.
  struct Agg {
    double flops = 0, bytes = 0, seconds = 0;
    int count = 0;
    std::string kind;
  };
  std::map<std::string, Agg> by_name;
  const uint32_t d = tl.devices.front();
  for (const TimelineSpan& s : tl.spans) {
    if (s.device != d) continue;
    const Program& p = ps.stages[s.program];
    const Op& op = p.op(s.op);
    if (op.kind != OpKind::kCompute) continue;
    Agg& a = by_name[std::string(p.name(op))];
    a.flops += op.flops.value();
    a.bytes += static_cast<double>(op.bytes_read.value() + op.bytes_written.value());
    a.seconds += (s.end - s.start).seconds();
    a.kind = std::string(to_string(op.compute));
    ++a.count;
  }
  const int left = 70, w = 800, h = 420;
  Svg svg(left + w + 220, h + 60);
  const double x_lo = 1e-1, x_hi = 1e4;
  const double y_hi = peak * 2, y_lo = peak * 1e-5;
  auto X = [&](double ai) {
    return left + w * (std::log10(std::clamp(ai, x_lo, x_hi) / x_lo) / std::log10(x_hi / x_lo));
  };
  auto Y = [&](double f) {
    return 10 + h - h * (std::log10(std::clamp(f, y_lo, y_hi) / y_lo) / std::log10(y_hi / y_lo));
  };
  // The roof: min(peak, intensity x bandwidth).
  std::vector<std::pair<double, double>> roof;
  for (double e = std::log10(x_lo); e <= std::log10(x_hi) + 1e-9; e += 0.05) {
    const double ai = std::pow(10.0, e);
    roof.emplace_back(X(ai), Y(std::min(peak, ai * bw)));
  }
  svg.polyline(roof, "#333");
  svg.text(X(x_hi) - 5, Y(peak) - 6, "peak " + fmt("%.0f TFLOP/s", peak / 1e12), "end", 10);
  for (double e = -1; e <= 4; ++e) svg.text(X(std::pow(10.0, e)), h + 28, fmt("%g", std::pow(10.0, e)), "middle", 10);
  for (double e = std::ceil(std::log10(y_lo)); e <= std::log10(y_hi); ++e) {
    svg.text(left - 5, Y(std::pow(10.0, e)) + 4, fmt("%g TF/s", std::pow(10.0, e) / 1e12), "end", 10);
  }
  svg.text(left + w / 2.0, h + 48, "arithmetic intensity (FLOP per HBM byte)", "middle", 11);
  std::map<std::string, bool> legend;
  for (const auto& [name, a] : by_name) {
    const double ai = a.bytes > 0 ? a.flops / a.bytes : x_hi;
    const double achieved = a.seconds > 0 ? a.flops / a.seconds : 0;
    if (achieved <= 0) {
      // Memory-bound ops without FLOPs: place them by bandwidth achieved.
      const double gbs = a.seconds > 0 ? a.bytes / a.seconds : 0;
      svg.circle(X(x_lo), Y(std::max(y_lo, gbs * x_lo)), 4, colour(a.kind),
                 name + ": no FLOPs, " + fmt("%.0f GB/s", gbs / 1e9) + ", " + std::to_string(a.count) + " ops");
    } else {
      svg.circle(X(ai), Y(achieved), 5, colour(a.kind),
                 name + ": " + fmt("%.1f TFLOP/s", achieved / 1e12) + " at " + fmt("%.1f FLOP/B", ai) + ", " +
                     std::to_string(a.count) + " ops, " + dur(a.seconds));
    }
    legend[a.kind] = true;
  }
  double ly = 20;
  for (const auto& [kind, unused] : legend) {
    svg.circle(left + w + 30, ly, 5, colour(kind), kind);
    svg.text(left + w + 40, ly + 4, kind);
    ly += 18;
  }
  return "<h2>Roofline</h2>\n<p>Each point is one kind of op of device " + std::to_string(d) +
         " (all its instances together): FLOPs over HBM bytes against the FLOP rate it achieved, under the chip's "
         "roof (dense bf16 peak and HBM bandwidth). Ops without FLOPs sit at the left edge.</p>\n" +
         svg.finish("roofline");
}

std::string plans_section(const std::vector<ReportPlanPoint>& plans) {
  if (plans.empty()) return "";
  const int left = 80, w = 800, h = 380;
  Svg svg(left + w + 30, h + 60);
  double t_lo = 1e300, t_hi = 0, m_lo = 1e300, m_hi = 0;
  for (const auto& p : plans) {
    t_lo = std::min(t_lo, p.step_time_s);
    t_hi = std::max(t_hi, p.step_time_s);
    m_lo = std::min(m_lo, static_cast<double>(p.peak_bytes));
    m_hi = std::max(m_hi, static_cast<double>(p.peak_bytes));
  }
  const double tpad = (t_hi - t_lo) * 0.05 + 1e-9, mpad = (m_hi - m_lo) * 0.05 + 1;
  t_lo -= tpad;
  t_hi += tpad;
  m_lo = std::max(0.0, m_lo - mpad);
  m_hi += mpad;
  auto X = [&](double b) { return left + w * (b - m_lo) / (m_hi - m_lo); };
  auto Y = [&](double t) { return 10 + h - h * (t - t_lo) / (t_hi - t_lo); };
  // Pareto front: no other plan is both faster and smaller.
  std::vector<const ReportPlanPoint*> sorted;
  for (const auto& p : plans) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    return a->peak_bytes != b->peak_bytes ? a->peak_bytes < b->peak_bytes : a->step_time_s < b->step_time_s;
  });
  std::vector<std::pair<double, double>> front;
  double best_t = 1e300;
  for (const auto* p : sorted) {
    if (p->step_time_s < best_t) {
      best_t = p->step_time_s;
      front.emplace_back(X(static_cast<double>(p->peak_bytes)), Y(p->step_time_s));
    }
  }
  svg.polyline(front, "#59a14f");
  for (const auto& p : plans) {
    const std::string fill = p.best ? "#e15759" : p.from_scenario ? "#f28e2b" : "#4e79a7";
    svg.circle(X(static_cast<double>(p.peak_bytes)), Y(p.step_time_s), p.best ? 7 : 5, fill,
               p.label + ": " + dur(p.step_time_s) + ", " + gib(static_cast<double>(p.peak_bytes)));
  }
  for (double b : ticks(m_lo, m_hi, 8)) svg.text(X(b), h + 28, gib(b), "middle", 10);
  for (double t : ticks(t_lo, t_hi, 8)) svg.text(left - 5, Y(t) + 4, dur(t), "end", 10);
  svg.text(left + w / 2.0, h + 48, "peak memory per device", "middle", 11);
  return "<h2>Plans simulated by the search</h2>\n<p>Step time against peak memory per device; the green line is the "
         "Pareto front (no plan is both faster and smaller), red the best plan, orange the scenario's own. Hover a "
         "point for its plan.</p>\n" +
         svg.finish("plans");
}

std::string evidence_section(const HtmlReportInput& in) {
  if (in.evidence_record.empty()) return "";
  std::string html =
      "<h2>How far to trust this prediction</h2>\n<p>The validation rows of published runs that share this "
      "scenario's framework, chip and GEMM precision, then fewer of them (" +
      esc(in.evidence_record) +
      "; <code>shardsim evidence</code>, docs/validation.md). Speed is predicted over measured speed, less 1: "
      "positive means predicted too fast. Held-out rows were never tuned on. The level that stands for this "
      "scenario is in bold.</p>\n";
  if (in.evidence.empty()) {
    return html + "<p>No published run shares this scenario's framework or chip: the prediction is unvalidated.</p>\n";
  }
  html +=
      "<table><tr><th>rows like it</th><th>side</th><th>rows</th><th>mean |error|</th><th>max</th><th>speed</th>"
      "<th>too fast</th></tr>\n";
  for (const ReportEvidenceRow& r : in.evidence) {
    const char* b = r.closest ? "<b>" : "";
    const char* e = r.closest ? "</b>" : "";
    html += std::string("<tr><td>") + b + esc(r.label) + e + "</td><td>" + esc(r.side) + "</td><td>" +
            std::to_string(r.rows) + "</td><td>" + fmt("%.1f%%", 100 * r.mean_abs_error) + "</td><td>" +
            fmt("%.1f%%", 100 * r.max_abs_error) + "</td><td>" + fmt("%+.1f%%", 100 * r.mean_bias) + "</td><td>" +
            std::to_string(r.rows_fast) + " of " + std::to_string(r.rows) + "</td></tr>\n";
  }
  return html + "</table>\n";
}

std::string comparison_section(const HtmlReportInput& in) {
  if (in.comparison.empty()) return "";
  const int left = 110, bar = 14, w = 700;
  const int h = 20 + static_cast<int>(in.comparison.size() + 1) * (2 * bar + 12) + 40;
  Svg svg(left + w + 180, h);
  double top = std::max(in.predicted_step_s, in.measured_step_s);
  for (const auto& r : in.comparison) top = std::max({top, r.predicted_s, r.measured_s});
  const double xs = top > 0 ? w / top : 0;
  double y = 20;
  auto pair = [&](const std::string& name, double p, double m) {
    svg.text(left - 6, y + bar + 4, name, "end");
    svg.rect(left, y, p * xs, bar, "#4e79a7", name + " predicted " + dur(p));
    svg.rect(left, y + bar, m * xs, bar, "#f28e2b", name + " measured " + dur(m));
    const std::string err = m > 0 ? fmt("%+.1f%%", 100 * (p - m) / m) : "n/a";
    svg.text(left + std::max(p, m) * xs + 6, y + bar + 4, dur(p) + " / " + dur(m) + " (" + err + ")");
    y += 2 * bar + 12;
  };
  pair("step", in.predicted_step_s, in.measured_step_s);
  for (const auto& r : in.comparison) pair(r.kind, r.predicted_s, r.measured_s);
  svg.rect(left, y + 6, 12, 12, "#4e79a7");
  svg.text(left + 16, y + 16, "predicted");
  svg.rect(left + 100, y + 6, 12, 12, "#f28e2b");
  svg.text(left + 116, y + 16, "measured");
  std::string html =
      "<h2>Predicted against measured</h2>\n<p>The step time and the compute time per op kind of the "
      "critical device (prediction) and of the measured run; errors are (predicted - measured) / "
      "measured.</p>\n" +
      svg.finish("comparison");
  if (!in.path_comparison.empty()) {
    html +=
        "<h2>Critical paths</h2>\n<p>The time each category of op accounts for on the step's critical path, "
        "predicted and measured (each side sums to its step time).</p>\n<table><tr><th>category</th><th>predicted"
        "</th><th>measured</th><th>error</th></tr>\n";
    for (const auto& r : in.path_comparison) {
      const std::string err =
          r.measured_s > 0 ? fmt("%+.1f%%", 100 * (r.predicted_s - r.measured_s) / r.measured_s) : std::string("n/a");
      html += "<tr><td>" + esc(r.kind) + "</td><td>" + dur(r.predicted_s) + "</td><td>" + dur(r.measured_s) +
              "</td><td>" + err + "</td></tr>\n";
    }
    html += "</table>\n";
  }
  return html;
}

}  // namespace

std::string html_report(const HtmlReportInput& in) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + esc(in.title) +
      "</title>\n<style>body{font-family:sans-serif;margin:24px;max-width:1400px;color:#222}"
      "table{border-collapse:collapse;margin:8px 24px 8px 0;display:inline-table;vertical-align:top}"
      "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}svg{display:block;margin:8px 0}"
      "h2{margin-top:32px;border-bottom:1px solid #ddd}</style>\n</head>\n<body>\n<h1>" +
      esc(in.title) + "</h1>\n";
  if (in.step != nullptr) {
    const StepReport& r = *in.step;
    html += "<p>" + esc(r.model) + " on " + std::to_string(r.devices) + " &times; " + esc(r.chip) + "; " +
            esc(in.plan_summary) + "</p>\n<p><b>Step time " + dur(r.step_time_s) + "</b>, MFU " +
            fmt("%.1f%%", 100 * r.mfu) + " (HFU " + fmt("%.1f%%", 100 * r.hfu) + "), " + fmt("%.4g", r.tokens_per_s) +
            " tokens/s; peak memory " + gib(static_cast<double>(r.memory.peak_bytes_per_device)) + " of " +
            gib(static_cast<double>(r.memory.capacity_bytes)) + ". Scenario " + esc(r.scenario) + ", hash " +
            esc(r.config_hash) + ", shardsim " + esc(r.version) + ", backend " + esc(r.sim.backend) + ".</p>\n";
    html += evidence_section(in);
    html += breakdown_section(r);
    if (in.programs != nullptr && in.timeline != nullptr) {
      html += timeline_section(*in.programs, *in.timeline, r.step_time_s);
      html += memory_section(r, *in.programs, *in.timeline);
      html += roofline_section(*in.programs, *in.timeline, in.peak_flops_per_s, in.hbm_bytes_per_s);
    }
  }
  html += plans_section(in.plans);
  html += comparison_section(in);
  return html + "</body>\n</html>\n";
}

}  // namespace shardsim
