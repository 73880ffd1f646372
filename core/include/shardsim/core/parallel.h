// The one thread pool of the library: search, the serving search, sweeps
// and validation run their independent simulations through parallel_for.
#pragma once

#include <cstddef>
#include <functional>

namespace shardsim {

/// The thread count that `jobs <= 0` stands for: every core, at least 1.
int default_jobs();

/// Runs body(i) once for every i in [0, n) on min(jobs, n) threads, the
/// caller's included (jobs <= 0: default_jobs()). Indices are claimed in
/// order, so body(i) for a small i starts no later than for a larger one.
/// When a body throws, no further index is claimed, every thread joins,
/// and the first exception (in time) is rethrown on the caller's thread:
/// never std::terminate. body must be safe to call concurrently for
/// different indices.
void parallel_for(size_t n, int jobs, const std::function<void(size_t)>& body);

}  // namespace shardsim
