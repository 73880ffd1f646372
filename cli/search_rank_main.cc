// shardsim-search-rank: one MPI rank of a plan search. `mpirun -n N shardsim
// search SCENARIO ...` becomes this program on every rank (shardsim links no
// MPI). Every rank enumerates and prunes the same plans; each wave's
// simulations are dealt out across the ranks (realexec/mpi_search.h) and
// their results shared, so every rank takes the same next wave and the
// answer does not depend on N. Rank 0 prints and writes files; errors are
// reported by rank 0 as `shardsim search` reports them.
//
//   mpirun -n N shardsim-search-rank SCENARIO [shardsim search's options]
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "shardsim/core/error.h"
#include "shardsim/realexec/mpi_search.h"

int main(int argc, char** argv) {
  using namespace shardsim;
  realexec::MpiWorld world(&argc, &argv);
  const std::vector<std::string> args(argv + 1, argv + argc);
  const bool lead = world.rank() == 0;
  auto fail = [&](const std::string& line, int status) {
    if (lead) std::fprintf(stderr, "%s\n", line.c_str());
    return status;
  };
  try {
    cli::SearchHooks hooks;
    hooks.lead = lead;
    hooks.make_runner = [](int jobs) { return WaveRunner(realexec::mpi_wave_runner(jobs)); };
    return cli::run_search(args, hooks);
  } catch (const InputError& e) {
    return fail(e.what(), 2);
  } catch (const cli::UsageError& e) {
    return fail(std::string("shardsim: error: ") + e.what(), 2);
  } catch (const std::bad_alloc&) {
    return fail("shardsim: error: out of memory", 1);
  } catch (const std::exception& e) {
    return fail(std::string("shardsim: error: ") + e.what(), 1);
  }
}
