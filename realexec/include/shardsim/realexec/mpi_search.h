// A plan search over MPI ranks (`mpirun -n N shardsim search ...`): each
// wave's simulations dealt out across the ranks of MPI_COMM_WORLD, their
// results shared with every rank so that all of them take the same next
// wave. Used by shardsim-search-rank (cli/search_rank_main.cc).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "shardsim/core/step_report.h"

namespace shardsim::realexec {

/// A wave runner (app/search.h WaveRunner): item k of a wave runs on rank
/// k mod N, on `jobs` threads there (0: every core), and every rank ends
/// with every item's step_time_s, mfu, hfu, memory.peak_bytes_per_device,
/// memory.fits and binding (what a search reads); the other fields of
/// another rank's report are left at their defaults. Needs MPI initialised;
/// every rank must call it with the same n.
using MpiWaveRunner =
    std::function<void(size_t n, const std::function<StepReport(size_t)>& simulate, std::vector<StepReport>& reports)>;
MpiWaveRunner mpi_wave_runner(int jobs);

/// MPI_Init (funneled: only the calling thread talks MPI) and
/// MPI_Finalize, with this process's rank and the world's size.
class MpiWorld {
 public:
  MpiWorld(int* argc, char*** argv);
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace shardsim::realexec
