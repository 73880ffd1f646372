#include "shardsim/realexec/calibrate.h"

#include <mpi.h>
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "calibrate_util.h"
#include "mpi_util.h"
#include "shardsim/core/atomic_file.h"
#include "shardsim/realexec/kernels.h"
#include "shardsim/realexec/progress.h"

namespace shardsim::realexec {
namespace {

using detail::bf16_sum;
using detail::check_mpi;
using detail::fit;
using detail::time_median;
using detail::wait_polling;
using Json = nlohmann::ordered_json;

void fill(std::vector<float>& v) {
  uint64_t x = 0x2545f4914f6cdd1dull;
  for (float& f : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    f = static_cast<float>(static_cast<double>(x >> 40) / static_cast<double>(1ull << 24)) - 0.5f;
  }
}

Json compute_benchmarks(bool quick, ProgressWriter& progress) {
  Json out;
  const double budget = quick ? 0.02 : 0.2;
  Json mm = Json::array();
  const std::vector<int64_t> sizes =
      quick ? std::vector<int64_t>{64, 256} : std::vector<int64_t>{64, 128, 256, 512, 1024};
  for (int64_t n : sizes) {
    progress.touch();
    std::vector<float> a(static_cast<size_t>(n * n)), b(a.size()), c(a.size());
    fill(a);
    fill(b);
    const double s = time_median(MPI_COMM_WORLD, 3, budget, [&] { matmul(a.data(), b.data(), c.data(), 1, n, n, n); });
    mm.push_back({{"m", n}, {"n", n}, {"k", n}, {"time_s", s}, {"flops_per_s", 2.0 * n * n * n / s}});
  }
  out["matmul"] = mm;
  {  // causal attention forward: 1 sequence of 256 tokens, 4 heads of 64
    AttentionShape sh;
    sh.queries = sh.keys = 256;
    sh.heads = 4;
    sh.head_dim = 64;
    const size_t n = static_cast<size_t>(sh.queries * sh.heads * sh.head_dim);
    std::vector<float> q(n), k(n), v(n), o(n), lse(static_cast<size_t>(sh.queries * sh.heads));
    fill(q);
    fill(k);
    fill(v);
    const double s = time_median(MPI_COMM_WORLD, 3, budget,
                                 [&] { attention_forward(sh, q.data(), k.data(), v.data(), o.data(), lse.data()); });
    // Causal FLOPs as the lowering counts them: 2·2·d·heads·s(s+1)/2.
    const double flops = 2.0 * 256 * 256 * 257;
    out["attention"] = {{"tokens", 256}, {"heads", 4}, {"head_dim", 64}, {"time_s", s}, {"flops_per_s", flops / s}};
  }
  {  // streaming: read 2 x, write x (elementwise), 64 MiB read in the full run
    const int64_t n_out = quick ? (int64_t{1} << 20) : (int64_t{8} << 20);
    std::vector<float> in(static_cast<size_t>(2 * n_out)), o(static_cast<size_t>(n_out));
    fill(in);
    const double s =
        time_median(MPI_COMM_WORLD, 3, budget, [&] { elementwise(in.data(), 2 * n_out, o.data(), n_out); });
    out["memory"] = {{"bytes", 12 * n_out}, {"time_s", s}, {"GBps", 12.0 * static_cast<double>(n_out) / s * 1e-9}};
  }
  {  // cross-entropy: exp-bound on a CPU
    const int64_t rows = 256, row = 2048;
    std::vector<float> logits(static_cast<size_t>(rows * row)), o(static_cast<size_t>(rows));
    fill(logits);
    const double s = time_median(MPI_COMM_WORLD, 3, budget, [&] { cross_entropy(logits.data(), o.data(), rows, row); });
    out["loss"] = {{"values", rows * row}, {"time_s", s}, {"values_per_s", static_cast<double>(rows * row) / s}};
  }
  return out;
}

Json collective_benchmarks(bool quick, int rank, int world, ProgressWriter& progress) {
  MPI_Op bf16 = MPI_OP_NULL;
  check_mpi(MPI_Op_create(&bf16_sum, 1, &bf16), "MPI_Op_create");
  const std::vector<int> groups = detail::benchmark_group_sizes(world);
  const std::vector<int64_t> sizes = quick ? std::vector<int64_t>{int64_t{4} << 10, int64_t{1} << 20}
                                           : std::vector<int64_t>{int64_t{4} << 10, int64_t{64} << 10, int64_t{1} << 20,
                                                                  int64_t{4} << 20, int64_t{16} << 20};
  const double budget = quick ? 0.01 : 0.1;
  const char* kinds[] = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast"};
  Json out = Json::array();
  for (int g : groups) {
    // Groups of g consecutive ranks; ranks beyond the last whole group sit out
    // (and still take part in the world-wide agreement below).
    const int color = rank / g < world / g ? rank / g : MPI_UNDEFINED;
    MPI_Comm comm = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(MPI_COMM_WORLD, color, rank, &comm), "MPI_Comm_split");
    for (const char* kind : kinds) {
      Json points = Json::array();
      std::vector<double> xs, ys;
      for (int64_t bytes : sizes) {
        progress.touch();
        if (comm == MPI_COMM_NULL) continue;
        const int64_t values = bytes / 2 / g * g;  // bf16 values, divisible by the group
        std::vector<uint16_t> send(static_cast<size_t>(values)), recv(static_cast<size_t>(values));
        const int all = static_cast<int>(values), chunk = static_cast<int>(values / g);
        const std::string k = kind;
        const double s = time_median(comm, 3, budget, [&] {
          MPI_Request req = MPI_REQUEST_NULL;
          if (k == "all-reduce") {
            check_mpi(MPI_Iallreduce(send.data(), recv.data(), all, MPI_UINT16_T, bf16, comm, &req), "MPI_Iallreduce");
          } else if (k == "all-gather") {
            check_mpi(MPI_Iallgather(send.data(), chunk, MPI_UINT16_T, recv.data(), chunk, MPI_UINT16_T, comm, &req),
                      "MPI_Iallgather");
          } else if (k == "reduce-scatter") {
            check_mpi(MPI_Ireduce_scatter_block(send.data(), recv.data(), chunk, MPI_UINT16_T, bf16, comm, &req),
                      "MPI_Ireduce_scatter_block");
          } else if (k == "all-to-all") {
            check_mpi(MPI_Ialltoall(send.data(), chunk, MPI_UINT16_T, recv.data(), chunk, MPI_UINT16_T, comm, &req),
                      "MPI_Ialltoall");
          } else {
            check_mpi(MPI_Ibcast(recv.data(), all, MPI_UINT16_T, 0, comm, &req), "MPI_Ibcast");
          }
          wait_polling(req);
        });
        points.push_back({{"bytes", 2 * values}, {"time_s", s}});
        xs.push_back(static_cast<double>(2 * values));
        ys.push_back(s);
      }
      if (comm != MPI_COMM_NULL) {
        Json row = {{"kind", kind}, {"group", g}, {"points", points}};
        row.update(fit(xs, ys));
        out.push_back(row);
      }
    }
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
  // Point to point: ping-pong between ranks 0 and 1; one-way time is half.
  if (world >= 2) {
    MPI_Comm pair = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair), "MPI_Comm_split");
    if (pair != MPI_COMM_NULL) {
      Json points = Json::array();
      std::vector<double> xs, ys;
      for (int64_t bytes : sizes) {
        std::vector<char> buf(static_cast<size_t>(bytes));
        const int n = static_cast<int>(bytes);
        const double s = time_median(pair, 3, budget, [&] {
          const int peer = 1 - rank;
          MPI_Request req = MPI_REQUEST_NULL;
          for (int turn = 0; turn < 2; ++turn) {
            if ((turn == 0) == (rank == 0)) {
              check_mpi(MPI_Isend(buf.data(), n, MPI_BYTE, peer, 0, pair, &req), "MPI_Isend");
            } else {
              check_mpi(MPI_Irecv(buf.data(), n, MPI_BYTE, peer, 0, pair, &req), "MPI_Irecv");
            }
            wait_polling(req);
          }
        });
        points.push_back({{"bytes", bytes}, {"time_s", s / 2}});
        xs.push_back(static_cast<double>(bytes));
        ys.push_back(s / 2);
      }
      Json row = {{"kind", "send-recv"}, {"group", 2}, {"points", points}};
      row.update(fit(xs, ys));
      out.push_back(row);
      MPI_Comm_free(&pair);
    }
  }
  MPI_Op_free(&bf16);
  return out;
}

}  // namespace

int run_calibration(const CalibrateOptions& opt) {
  return detail::run_mpi_rank([&](int rank, int world) {
    set_blas_threads(1);
    ::prctl(PR_SET_TIMERSLACK, 1000UL);  // 1 us timer slack, as in real runs: polls wake on time
    ProgressWriter progress(opt.progress_dir, rank);
    progress.record().state.store(static_cast<int32_t>(RankState::kRunning));
    Json profile;
    profile["backend"] = "cpu";
    profile["ranks"] = world;
    profile["note"] =
        "bf16 matmuls run as fp32 sgemm (OpenBLAS, 1 thread per rank); collectives move bf16 values; each figure is "
        "the slowest rank's median with every rank running";
    profile["compute"] = compute_benchmarks(opt.quick, progress);
    profile["collectives"] = collective_benchmarks(opt.quick, rank, world, progress);
    progress.record().state.store(static_cast<int32_t>(RankState::kDone));
    if (rank == 0 && !opt.result_file.empty()) {
      std::string err;
      if (!write_file_atomic(opt.result_file, profile.dump(2) + "\n", err)) throw std::runtime_error(err);
    }
    return 0;
  });
}

}  // namespace shardsim::realexec
