#include "shardsim/viz/chrome_trace.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace shardsim {
namespace {

void append_escaped(std::string& out, std::string_view s) {
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
}

/// Picoseconds as microseconds with full precision ("12.345678").
void append_us(std::string& out, SimTime t) {
  char buf[40];
  const int64_t ps = t.ps();
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%06" PRId64, ps / 1000000, ps % 1000000);
  out += buf;
}

std::string_view category(const Op& o) {
  return o.kind == OpKind::kCompute ? to_string(o.compute) : to_string(o.collective);
}

/// Writes the trace into `out`, handing it to `flush` whenever it grows past
/// a megabyte (flush may write it out and clear it) and once at the end.
void emit_trace(const ProgramSet& ps, const Timeline& tl, std::string& out,
                const std::function<void(std::string&)>& flush) {
  const Program& any = ps.stages.front();  // every stage declares the same streams
  out += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
    if (out.size() > (1u << 20)) flush(out);
  };
  char buf[160];
  for (uint32_t d : tl.devices) {
    sep();
    std::snprintf(buf, sizeof buf,
                  "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"args\":{\"name\":\"device %u\"}}", d, d);
    out += buf;
    for (size_t s = 0; s < any.num_streams(); ++s) {
      sep();
      std::snprintf(buf, sizeof buf,
                    "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%zu,\"args\":{\"name\":\"", d, s);
      out += buf;
      append_escaped(out, any.stream_names()[s]);
      out += "\"}}";
    }
  }
  // Sorted, so the order in which same-instant events were handled does not
  // change the file.
  std::vector<TimelineSpan> spans = tl.spans;
  std::sort(spans.begin(), spans.end(), [](const TimelineSpan& a, const TimelineSpan& b) {
    return std::tie(a.device, a.start, a.end, a.stream, a.op) < std::tie(b.device, b.start, b.end, b.stream, b.op);
  });
  std::vector<TimelineFlow> flows = tl.flows;
  std::sort(flows.begin(), flows.end(), [](const TimelineFlow& a, const TimelineFlow& b) {
    return std::tie(a.src, a.start, a.end, a.dst, a.op) < std::tie(b.src, b.start, b.end, b.dst, b.op);
  });
  // Spans of recorded devices that are on the path say so.
  std::vector<std::pair<uint32_t, OpId>> on_path;
  on_path.reserve(tl.critical_path.size());
  for (const TimelineSpan& s : tl.critical_path) on_path.emplace_back(s.device, s.op);
  std::sort(on_path.begin(), on_path.end());
  for (const TimelineSpan& s : spans) {
    const Program& p = ps.stages[s.program];
    const Op& o = p.op(s.op);
    sep();
    out += "{\"ph\":\"X\",\"name\":\"";
    append_escaped(out, p.label(s.op));
    out += "\",\"cat\":\"";
    append_escaped(out, category(o));
    std::snprintf(buf, sizeof buf, "\",\"pid\":%u,\"tid\":%u,\"ts\":", s.device, static_cast<unsigned>(s.stream));
    out += buf;
    append_us(out, s.start);
    out += ",\"dur\":";
    append_us(out, s.end - s.start);
    std::snprintf(buf, sizeof buf, ",\"args\":{\"op\":%u,\"flops\":%.17g,\"bytes\":%" PRId64, s.op, o.flops.value(),
                  o.kind == OpKind::kCompute ? o.bytes_read.value() + o.bytes_written.value() : o.comm_bytes.value());
    out += buf;
    if (o.kind == OpKind::kCompute) {
      std::snprintf(buf, sizeof buf, ",\"m\":%" PRId64 ",\"n\":%" PRId64 ",\"k\":%" PRId64, o.m, o.n, o.k);
      out += buf;
    }
    if (std::binary_search(on_path.begin(), on_path.end(), std::pair<uint32_t, OpId>{s.device, s.op})) {
      out += ",\"critical_path\":true";
    }
    out += "}}";
  }
  // The critical path: a process of its own, shown first, one slice per
  // path op with the stretch of the step it accounts for.
  if (!tl.critical_path.empty()) {
    uint32_t pid = 0;
    for (uint32_t d : tl.devices) pid = std::max(pid, d + 1);
    for (const TimelineSpan& s : tl.critical_path) pid = std::max(pid, s.device + 1);
    sep();
    std::snprintf(buf, sizeof buf,
                  "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"args\":{\"name\":\"critical path\"}},\n"
                  "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%u,\"args\":{\"sort_index\":-1}}",
                  pid, pid);
    out += buf;
    for (const TimelineSpan& s : tl.critical_path) {
      const Program& p = ps.stages[s.program];
      sep();
      out += "{\"ph\":\"X\",\"name\":\"";
      append_escaped(out, p.label(s.op));
      out += "\",\"cat\":\"critical_path,";
      append_escaped(out, category(p.op(s.op)));
      std::snprintf(buf, sizeof buf, "\",\"pid\":%u,\"tid\":0,\"ts\":", pid);
      out += buf;
      append_us(out, s.start);
      out += ",\"dur\":";
      append_us(out, s.end - s.start);
      std::snprintf(buf, sizeof buf, ",\"args\":{\"device\":%u,\"op\":%u,\"stream\":\"", s.device, s.op);
      out += buf;
      append_escaped(out, p.stream_names()[s.stream]);
      out += "\"}}";
    }
  }
  // Flow arrows: one "s" at the sender when the transfer starts and one "f"
  // at the receiver when it ends, each bound to the enclosing collective span.
  std::vector<uint8_t> traced;
  for (uint32_t d : tl.devices) {
    if (traced.size() <= d) traced.resize(d + 1, 0);
    traced[d] = 1;
  }
  uint64_t id = 0;
  for (const TimelineFlow& f : flows) {
    if (f.dst >= traced.size() || !traced[f.dst]) continue;
    const unsigned tid = ps.stages[f.program].op(f.op).stream;
    ++id;
    sep();
    std::snprintf(
        buf, sizeof buf,
        "{\"ph\":\"s\",\"name\":\"transfer\",\"cat\":\"flow\",\"id\":%" PRIu64 ",\"pid\":%u,\"tid\":%u,\"ts\":", id,
        f.src, tid);
    out += buf;
    append_us(out, f.start);
    std::snprintf(buf, sizeof buf, ",\"args\":{\"bytes\":%" PRId64 ",\"to\":%u}}", f.bytes.value(), f.dst);
    out += buf;
    sep();
    std::snprintf(buf, sizeof buf,
                  "{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"transfer\",\"cat\":\"flow\",\"id\":%" PRIu64
                  ",\"pid\":%u,\"tid\":%u,\"ts\":",
                  id, f.dst, tid);
    out += buf;
    append_us(out, f.end);
    out += "}";
  }
  out += "\n]}\n";
  flush(out);
}

}  // namespace

std::string chrome_trace_json(const ProgramSet& ps, const Timeline& tl) {
  std::string out;
  out.reserve(256 + tl.spans.size() * 200 + tl.flows.size() * 200);
  emit_trace(ps, tl, out, [](std::string&) {});
  return out;
}

bool write_chrome_trace(std::FILE* file, const ProgramSet& ps, const Timeline& tl) {
  std::string out;
  bool ok = true;
  emit_trace(ps, tl, out, [&](std::string& chunk) {
    ok = ok && std::fwrite(chunk.data(), 1, chunk.size(), file) == chunk.size();
    chunk.clear();
  });
  return ok;
}

}  // namespace shardsim
