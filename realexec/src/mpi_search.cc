#include "shardsim/realexec/mpi_search.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "mpi_util.h"
#include "shardsim/core/parallel.h"

namespace shardsim::realexec {
namespace {

/// What a search reads of a report, in a fixed layout for MPI_Allgather.
struct Summary {
  double step_time_s = 0;
  double mfu = 0;
  double hfu = 0;
  int64_t peak_bytes = 0;
  int64_t fits = 0;
  char binding[64] = {};
  char error[256] = {};  ///< non-empty: the simulation threw this
};

}  // namespace

MpiWaveRunner mpi_wave_runner(int jobs) {
  return [jobs](size_t n, const std::function<StepReport(size_t)>& simulate, std::vector<StepReport>& reports) {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const auto r = static_cast<size_t>(rank), ranks = static_cast<size_t>(size);
    // This rank's items: r, r + N, r + 2N, ...
    std::vector<size_t> mine;
    for (size_t k = r; k < n; k += ranks) mine.push_back(k);
    // A simulation that throws must not leave the other ranks waiting in
    // the gather: its message travels with the results and every rank
    // throws it.
    std::vector<Summary> out(n), all(n * ranks);
    parallel_for(mine.size(), jobs, [&](size_t i) {
      try {
        reports[mine[i]] = simulate(mine[i]);
      } catch (const std::exception& e) {
        std::strncpy(out[mine[i]].error, e.what(), sizeof out[mine[i]].error - 1);
        if (out[mine[i]].error[0] == '\0') out[mine[i]].error[0] = '?';
      }
    });
    // Every rank sends a summary slot per item (its own filled), and takes
    // item k from rank k mod N.
    for (size_t k : mine) {
      const StepReport& s = reports[k];
      Summary& m = out[k];
      m.step_time_s = s.step_time_s;
      m.mfu = s.mfu;
      m.hfu = s.hfu;
      m.peak_bytes = s.memory.peak_bytes_per_device;
      m.fits = s.memory.fits ? 1 : 0;
      std::strncpy(m.binding, s.binding.c_str(), sizeof m.binding - 1);
    }
    const int bytes = static_cast<int>(n * sizeof(Summary));
    detail::check_mpi(MPI_Allgather(out.data(), bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, MPI_COMM_WORLD),
                      "search: MPI_Allgather");
    for (size_t k = 0; k < n; ++k) {
      const Summary& m = all[(k % ranks) * n + k];
      if (m.error[0] != '\0') {
        throw std::runtime_error("search: simulating a plan failed on rank " + std::to_string(k % ranks) + ": " +
                                 std::string(m.error, strnlen(m.error, sizeof m.error)));
      }
      if (k % ranks == r) continue;
      StepReport& s = reports[k];
      s.step_time_s = m.step_time_s;
      s.mfu = m.mfu;
      s.hfu = m.hfu;
      s.memory.peak_bytes_per_device = m.peak_bytes;
      s.memory.fits = m.fits != 0;
      s.binding = std::string(m.binding, strnlen(m.binding, sizeof m.binding));
    }
  };
}

MpiWorld::MpiWorld(int* argc, char*** argv) {
  int provided = 0;
  detail::check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiWorld::~MpiWorld() {
  MPI_Finalize();
}

}  // namespace shardsim::realexec
