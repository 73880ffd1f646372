// What the calibration benchmarks of every backend share (private to
// realexec): timing a benchmark on a group of ranks, and the latency +
// size / bandwidth fit.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <vector>

#include "mpi_util.h"

namespace shardsim::realexec::detail {

/// Median seconds of `fn` over repetitions (host clock around fn(), or the
/// seconds fn() returns when it returns them): at least `min_reps`, and more
/// until `budget_s` is spent (at most 200). The whole group synchronizes
/// before each repetition; each rank times its own call, and the slowest
/// rank's median is returned (collective over `comm`).
template <typename Fn>
double time_median(MPI_Comm comm, int min_reps, double budget_s, Fn fn) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> t;
  const auto start = Clock::now();
  int reps = 0;
  int more = 1;
  while (more) {
    barrier_polling(comm);
    if constexpr (std::is_void_v<std::invoke_result_t<Fn&>>) {
      const auto a = Clock::now();
      fn();
      t.push_back(std::chrono::duration<double>(Clock::now() - a).count());
    } else {
      t.push_back(fn());  // the benchmark timed itself (a GPU's events)
    }
    ++reps;
    // Every rank must agree on whether to go on.
    int local =
        reps < min_reps || (reps < 200 && std::chrono::duration<double>(Clock::now() - start).count() < budget_s);
    check_mpi(MPI_Allreduce(&local, &more, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
    more = more || reps < min_reps;
  }
  std::sort(t.begin(), t.end());
  double med = t[t.size() / 2], worst = 0;
  check_mpi(MPI_Allreduce(&med, &worst, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
  return worst;
}

/// Group sizes the collective benchmarks measure: 2, 4, 8, ... and the
/// whole world (groups of consecutive ranks).
inline std::vector<int> benchmark_group_sizes(int world) {
  std::vector<int> groups;
  for (int g = 2; g <= world; g *= 2) groups.push_back(g);
  if (world > 1 && groups.back() != world) groups.push_back(world);
  return groups;
}

/// Fit of t = latency + bytes / bandwidth minimizing the squared relative
/// error Σ((latency + bytes·b − t) / t)² (weights 1/t²), so the small sizes
/// fix the latency and the large ones the bandwidth; plain least squares
/// lets the largest size decide everything.
inline nlohmann::ordered_json fit(const std::vector<double>& bytes, const std::vector<double>& secs) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const double w = 1.0 / (secs[i] * secs[i]);
    sw += w;
    sx += w * bytes[i];
    sy += w * secs[i];
    sxx += w * bytes[i] * bytes[i];
    sxy += w * bytes[i] * secs[i];
  }
  const double slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx);
  const double icept = (sy - slope * sx) / sw;
  nlohmann::ordered_json j = {{"latency_us", std::max(0.0, icept) * 1e6}, {"bandwidth_GBps", nullptr}};
  if (slope > 0) j["bandwidth_GBps"] = 1e-9 / slope;
  return j;
}

}  // namespace shardsim::realexec::detail
