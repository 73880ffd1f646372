#include "gather.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

#include "mpi_util.h"
#include "shardsim/core/atomic_file.h"

namespace shardsim::realexec::detail {

void gather_measured_run(const std::vector<double>& local_s, const std::vector<TimelineSpan>& spans,
                         const VerifyStats& local, const RankOptions& opt, int rank, int world, MeasuredRun* measured,
                         const std::string& backend, const std::string& device) {
  // Gather at rank 0: slowest rank per step, every rank's spans, verify counts.
  std::vector<double> slowest(local_s.size());
  check_mpi(MPI_Reduce(local_s.data(), slowest.data(), static_cast<int>(local_s.size()), MPI_DOUBLE, MPI_MAX, 0,
                       MPI_COMM_WORLD),
            "MPI_Reduce");
  std::vector<int64_t> packed;
  for (const TimelineSpan& sp : spans) {
    packed.insert(packed.end(), {sp.device, sp.program, sp.stream, sp.op, sp.start.ps(), sp.end.ps()});
  }
  const int mine = static_cast<int>(packed.size());
  std::vector<int> counts(static_cast<size_t>(world)), displs(static_cast<size_t>(world));
  check_mpi(MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  int total_count = 0;
  for (int r = 0; r < world; ++r) {
    displs[static_cast<size_t>(r)] = total_count;
    total_count += counts[static_cast<size_t>(r)];
  }
  std::vector<int64_t> all(static_cast<size_t>(rank == 0 ? total_count : 0));
  check_mpi(MPI_Gatherv(packed.data(), mine, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, 0,
                        MPI_COMM_WORLD),
            "MPI_Gatherv");
  int64_t counts_in[4] = {local.kernels_checked, local.collectives_checked, local.transfers_checked, local.mismatches};
  int64_t counts_out[4] = {0, 0, 0, 0};
  check_mpi(MPI_Reduce(counts_in, counts_out, 4, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
  constexpr int kMsg = 256;
  char msg[kMsg] = {};
  std::snprintf(msg, kMsg, "%s", local.first_mismatch.c_str());
  std::vector<char> msgs(static_cast<size_t>(rank == 0 ? world * kMsg : 0));
  check_mpi(MPI_Gather(msg, kMsg, MPI_CHAR, msgs.data(), kMsg, MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Gather");
  if (rank != 0) return;
  MeasuredRun r;
  r.backend = backend;
  r.device = device;
  r.ranks = world;
  r.warmup_steps = opt.warmup_steps;
  r.step_times_s = slowest;
  r.trace_step = static_cast<int>(slowest.size()) - 1;
  for (size_t i = 0; i + 6 <= all.size(); i += 6) {
    r.timeline.spans.push_back({static_cast<uint32_t>(all[i]), static_cast<uint32_t>(all[i + 1]),
                                static_cast<StreamId>(all[i + 2]), static_cast<OpId>(all[i + 3]),
                                SimTime::from_ps(all[i + 4]), SimTime::from_ps(all[i + 5])});
  }
  std::stable_sort(r.timeline.spans.begin(), r.timeline.spans.end(),
                   [](const TimelineSpan& a, const TimelineSpan& b) { return a.end < b.end; });
  for (int d = 0; d < world; ++d) r.timeline.devices.push_back(static_cast<uint32_t>(d));
  r.verify.enabled = opt.verify;
  r.verify.kernels_checked = counts_out[0];
  r.verify.collectives_checked = counts_out[1];
  r.verify.transfers_checked = counts_out[2];
  r.verify.mismatches = counts_out[3];
  for (int d = 0; d < world && r.verify.first_mismatch.empty(); ++d) {
    r.verify.first_mismatch = std::string(msgs.data() + static_cast<size_t>(d) * kMsg);
  }
  if (!opt.result_file.empty()) {
    std::string err;
    if (!write_file_atomic(opt.result_file, measured_run_json(r), err)) throw std::runtime_error(err);
  }
  if (measured != nullptr) *measured = std::move(r);
}

}  // namespace shardsim::realexec::detail
