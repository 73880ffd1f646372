// The requests of a serving run: generated (seeded, with arrivals of the
// chosen benchmark mode) or read from a trace file; and the percentile rule
// the serving figures use.
#include <algorithm>
#include <cmath>
#include <random>

#include "json_reader.h"
#include "shardsim/core/error.h"
#include "shardsim/core/read_file.h"
#include "shardsim/workloads/serving.h"
#include "uniform01.h"

namespace shardsim {
namespace {

using detail::uniform01;

int64_t draw_length(const LengthDistribution& d, std::mt19937_64& rng) {
  switch (d.kind) {
    case LengthDistribution::Kind::kFixed:
      return d.min;
    case LengthDistribution::Kind::kUniform:
      return d.min + static_cast<int64_t>(uniform01(rng) * static_cast<double>(d.max - d.min + 1));
    case LengthDistribution::Kind::kLognormal: {
      // Box-Muller; the normal's mean is set so the lognormal's mean is d.mean.
      const double u1 = 1.0 - uniform01(rng), u2 = uniform01(rng);
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      const double mu = std::log(d.mean) - d.sigma * d.sigma / 2;
      const auto v = static_cast<int64_t>(std::llround(std::exp(mu + d.sigma * z)));
      return std::clamp(v, d.min, d.max);
    }
  }
  return d.min;
}

std::string dir_of(const std::string& file) {
  const size_t slash = file.find_last_of('/');
  return slash == std::string::npos ? std::string() : file.substr(0, slash + 1);
}

std::vector<ServeRequest> read_trace(const std::string& path) {
  const detail::Json j = detail::parse_json_text(read_file_text(path, "cannot read the request trace"), path);
  if (!j.is_array() || j.empty() || j.size() > 1'000'000) {
    throw InputError(path, "/",
                     "expected a non-empty array of {\"arrival_s\", \"prompt_tokens\", \"output_tokens\"} "
                     "(and optionally \"prefix_id\", \"prefix_tokens\")");
  }
  std::vector<ServeRequest> out;
  for (size_t i = 0; i < j.size(); ++i) {
    detail::ObjectReader r(j[i], path, "/" + std::to_string(i));
    ServeRequest q;
    q.arrival_s = r.number_in("arrival_s", 0, 1e9, 0);
    q.prompt_tokens = r.int_in("prompt_tokens", 1, int64_t{1} << 20, 1);
    q.output_tokens = r.int_in("output_tokens", 1, int64_t{1} << 20, 1);
    // A shared prefix: the first prefix_tokens of the prompt are those of
    // every other request with the same prefix_id.
    if (r.has("prefix_id") != r.has("prefix_tokens")) {
      r.fail(r.has("prefix_id") ? "prefix_tokens" : "prefix_id",
             "missing: a shared prefix needs both prefix_id and prefix_tokens");
    }
    if (r.has("prefix_id")) {
      q.prefix_id = r.int_in("prefix_id", 0, INT64_MAX, 0);
      q.prefix_tokens = r.int_in("prefix_tokens", 1, q.prompt_tokens, 1);
    }
    r.done();
    out.push_back(q);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.arrival_s < b.arrival_s; });
  return out;
}

/// Keeps a serving run bounded: at most 2^28 tokens generated in all.
void check_total_tokens(const std::vector<ServeRequest>& reqs, const std::string& file, const std::string& ptr) {
  int64_t total = 0;
  for (const ServeRequest& q : reqs) total += q.output_tokens;
  if (total > (int64_t{1} << 28)) {
    throw InputError(file, ptr,
                     "the requests generate " + std::to_string(total) +
                         " tokens, more than the supported 2^28 (268,435,456); use fewer or shorter requests");
  }
}

}  // namespace

std::vector<ServeRequest> serving_requests(const Scenario& s) {
  const ServingSpec& sv = s.serving;
  if (!sv.trace_file.empty()) {
    const std::string path = sv.trace_file.front() == '/' ? sv.trace_file : dir_of(s.file) + sv.trace_file;
    std::vector<ServeRequest> reqs = read_trace(path);
    check_total_tokens(reqs, path, "/");
    return reqs;
  }
  std::mt19937_64 rng(sv.seed);
  std::vector<ServeRequest> out;
  double t = 0;
  for (int64_t i = 0; i < sv.requests; ++i) {
    // Poisson: exponential gaps. A burst (every request queued at once, a
    // benchmark's maximum load) and a closed loop (the scheduler issues each
    // request when a client is free) start at 0.
    if (sv.arrivals == Arrivals::kPoisson) t += -std::log(1.0 - uniform01(rng)) / sv.rate_per_s;
    ServeRequest q;
    q.arrival_s = t;
    q.prompt_tokens = draw_length(sv.prompt, rng);
    q.output_tokens = draw_length(sv.output, rng);
    if (sv.shared_prefix_tokens > 0) {
      // Drawn last, so a stream without a prefix is the one it always was.
      q.prefix_id = std::min(sv.shared_prefix_groups - 1,
                             static_cast<int64_t>(uniform01(rng) * static_cast<double>(sv.shared_prefix_groups)));
      q.prefix_tokens = sv.shared_prefix_tokens;
      q.prompt_tokens += sv.shared_prefix_tokens;
    }
    out.push_back(q);
  }
  check_total_tokens(out, s.file, "/serving/requests");
  return out;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double percentile_counted(const std::vector<std::pair<double, int64_t>>& counted, double p) {
  int64_t n = 0;
  for (const auto& [v, c] : counted) n += c;
  if (n == 0) return 0;
  const double pos = p / 100.0 * static_cast<double>(n - 1);
  const auto lo = static_cast<int64_t>(std::floor(pos));
  // The values at ranks lo and lo + 1 of the expanded vector.
  double at_lo = counted.back().first, at_hi = counted.back().first;
  int64_t seen = 0;
  for (size_t i = 0; i < counted.size(); ++i) {
    const int64_t end = seen + counted[i].second;  // ranks [seen, end) hold this value
    if (lo >= seen && lo < end) {
      at_lo = counted[i].first;
      at_hi = lo + 1 < end ? at_lo : (i + 1 < counted.size() ? counted[i + 1].first : at_lo);
      break;
    }
    seen = end;
  }
  return at_lo + (at_hi - at_lo) * (pos - static_cast<double>(lo));
}

}  // namespace shardsim
