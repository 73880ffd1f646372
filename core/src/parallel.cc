#include "shardsim/core/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace shardsim {

int default_jobs() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void parallel_for(size_t n, int jobs, const std::function<void(size_t)>& body) {
  if (n == 0) return;
  if (jobs <= 0) jobs = default_jobs();
  const size_t threads = std::min(static_cast<size_t>(jobs), n);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      const size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        body(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  try {
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  } catch (...) {
    // No thread could be started (std::system_error): the caller's thread
    // and those that did start do the work.
  }
  work();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace shardsim
