// Calibration micro-benchmarks of the CUDA backend: the same profile as the
// CPU backend's (calibrate.cc; read by cluster.calibration), measured with
// the kernels a CUDA run uses — cuBLAS bf16 matmuls by size, the chunked
// cuBLAS attention, a streaming kernel, the cross-entropy kernel — and NCCL
// collectives by kind, group and message size, each timed by cudaEvents on
// the GPU (the slowest rank's median, every rank running at once).
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibrate_util.h"
#include "cuda_kernels.h"
#include "cuda_math.h"
#include "cuda_util.h"
#include "mpi_util.h"
#include "shardsim/core/atomic_file.h"
#include "shardsim/realexec/cuda_rank.h"
#include "shardsim/realexec/progress.h"

namespace shardsim::realexec {
namespace {

using detail::check_cuda;
using detail::check_mpi;
using detail::check_nccl;
using detail::fit;
using detail::time_median;
using Json = nlohmann::ordered_json;

/// Device memory freed on scope exit, filled with bf16 values in [-0.5, 0.5).
class Buffer {
 public:
  Buffer(int64_t bytes, cudaStream_t st) {
    check_cuda(cudaMalloc(&p_, static_cast<size_t>(std::max<int64_t>(bytes, 2))), "cudaMalloc");
    check_cuda(cuda::fill_uniform(p_, bytes, 0x2545f4914f6cdd1dull, st), "fill");
  }
  ~Buffer() { cudaFree(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return p_; }
  float* f() const { return static_cast<float*>(p_); }

 private:
  void* p_ = nullptr;
};

/// Times what `enqueue` puts on `st` with a pair of events (seconds).
class EventTimer {
 public:
  explicit EventTimer(cudaStream_t st) : st_(st) {
    check_cuda(cudaEventCreate(&a_), "cudaEventCreate");
    check_cuda(cudaEventCreate(&b_), "cudaEventCreate");
  }
  ~EventTimer() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  template <typename Enqueue>
  double operator()(Enqueue enqueue) {
    check_cuda(cudaEventRecord(a_, st_), "cudaEventRecord");
    enqueue();
    check_cuda(cudaEventRecord(b_, st_), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(b_), "cudaEventSynchronize");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, a_, b_), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
  }

 private:
  cudaStream_t st_;
  cudaEvent_t a_ = nullptr, b_ = nullptr;
};

Json compute_benchmarks(bool quick, cudaStream_t st, ProgressWriter& progress) {
  Json out;
  const double budget = quick ? 0.02 : 0.3;
  detail::CudaMath math(st);
  EventTimer timer(st);
  const std::vector<int64_t> sizes =
      quick ? std::vector<int64_t>{256, 1024} : std::vector<int64_t>{256, 512, 1024, 2048, 4096, 8192};
  // bf16 products, then fp8 (e4m3, cuBLASLt, the executor's path for an
  // fp8 plan) where the device has fp8 tensor cores. Every size is a
  // multiple of 16, so each fp8 product runs as fp8 (else it would be bf16).
  auto sweep = [&](DType dtype) {
    Json points = Json::array();
    for (int64_t n : sizes) {
      progress.touch();
      Buffer a(2 * n * n, st), b(2 * n * n, st), c(2 * n * n, st);
      const double s = time_median(MPI_COMM_WORLD, 3, budget, [&] {
        return timer([&] { math.matmul(dtype, a.get(), b.get(), c.get(), 1, n, n, n); });
      });
      points.push_back({{"m", n}, {"n", n}, {"k", n}, {"time_s", s}, {"flops_per_s", 2.0 * n * n * n / s}});
    }
    return points;
  };
  out["matmul"] = sweep(DType::kBf16);
  if (math.fp8_supported()) out["matmul_fp8"] = sweep(DType::kFp8);
  {  // causal attention forward: one sequence, 16 heads of 128
    AttentionShape sh;
    sh.queries = sh.keys = quick ? 512 : 4096;
    sh.heads = 16;
    sh.head_dim = 128;
    const int64_t n = sh.queries * sh.heads * sh.head_dim;
    Buffer q(2 * n, st), k(2 * n, st), v(2 * n, st), o(2 * n, st), lse(4 * sh.queries * sh.heads, st);
    math.reserve(sh);
    const double s = time_median(MPI_COMM_WORLD, 3, budget, [&] {
      return timer([&] { math.attention_forward(sh, q.get(), k.get(), v.get(), o.get(), lse.f()); });
    });
    // Causal FLOPs as the lowering counts them: 2·2·d·heads·s(s+1)/2.
    const double t = static_cast<double>(sh.queries);
    const double flops = 2.0 * static_cast<double>(sh.head_dim * sh.heads) * t * (t + 1);
    out["attention"] = {{"tokens", sh.queries},
                        {"heads", sh.heads},
                        {"head_dim", sh.head_dim},
                        {"time_s", s},
                        {"flops_per_s", flops / s}};
  }
  {  // streaming: read 2 x, write x (elementwise); 512 MiB read in the full run
    const int64_t n_out = quick ? (int64_t{4} << 20) : (int64_t{64} << 20);
    Buffer in(8 * n_out, st), o(4 * n_out, st);
    const double s = time_median(MPI_COMM_WORLD, 3, budget, [&] {
      return timer([&] { check_cuda(cuda::elementwise(in.f(), 2 * n_out, o.f(), n_out, st), "elementwise"); });
    });
    out["memory"] = {{"bytes", 12 * n_out}, {"time_s", s}, {"GBps", 12.0 * static_cast<double>(n_out) / s * 1e-9}};
  }
  {  // cross-entropy over a vocabulary-sized row
    const int64_t rows = quick ? 256 : 4096, row = 32768;
    Buffer logits(4 * rows * row, st), o(4 * rows, st);
    const double s = time_median(MPI_COMM_WORLD, 3, budget, [&] {
      return timer([&] { check_cuda(cuda::cross_entropy(logits.f(), o.f(), rows, row, st), "cross-entropy"); });
    });
    out["loss"] = {{"values", rows * row}, {"time_s", s}, {"values_per_s", static_cast<double>(rows * row) / s}};
  }
  return out;
}

/// A communicator of `ranks` ranks for the group holding this rank (MPI
/// split by `color`, id broadcast over it); null when color is MPI_UNDEFINED.
struct NcclGroup {
  MPI_Comm mpi = MPI_COMM_NULL;
  ncclComm_t nccl = nullptr;
  int size = 0, rank = 0;
  NcclGroup(int color, int world_rank) {
    check_mpi(MPI_Comm_split(MPI_COMM_WORLD, color, world_rank, &mpi), "MPI_Comm_split");
    if (mpi == MPI_COMM_NULL) return;
    MPI_Comm_size(mpi, &size);
    MPI_Comm_rank(mpi, &rank);
    ncclUniqueId id;
    if (rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    check_mpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi), "MPI_Bcast");
    check_nccl(ncclCommInitRank(&nccl, size, id, rank), "ncclCommInitRank");
  }
  ~NcclGroup() {
    if (nccl != nullptr) ncclCommDestroy(nccl);
    if (mpi != MPI_COMM_NULL) MPI_Comm_free(&mpi);
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
};

Json collective_benchmarks(bool quick, int rank, int world, cudaStream_t st, ProgressWriter& progress) {
  const std::vector<int> groups = detail::benchmark_group_sizes(world);
  const std::vector<int64_t> sizes =
      quick ? std::vector<int64_t>{int64_t{4} << 10, int64_t{1} << 20}
            : std::vector<int64_t>{int64_t{4} << 10,  int64_t{64} << 10, int64_t{1} << 20,
                                   int64_t{16} << 20, int64_t{64} << 20, int64_t{256} << 20};
  const double budget = quick ? 0.01 : 0.2;
  const char* kinds[] = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast"};
  EventTimer timer(st);
  Json out = Json::array();
  const int64_t largest = sizes.back();
  Buffer send(largest, st), recv(largest, st);
  for (int g : groups) {
    // Groups of g consecutive ranks (within a node first); ranks beyond the
    // last whole group sit out.
    NcclGroup grp(rank / g < world / g ? rank / g : MPI_UNDEFINED, rank);
    for (const char* kind : kinds) {
      Json points = Json::array();
      std::vector<double> xs, ys;
      for (int64_t bytes : sizes) {
        progress.touch();
        if (grp.mpi == MPI_COMM_NULL) continue;
        const size_t values = static_cast<size_t>(bytes / 2 / g * g);  // bf16, divisible by the group
        const size_t chunk = values / static_cast<size_t>(g);
        const std::string k = kind;
        auto* s = static_cast<char*>(send.get());
        auto* r = static_cast<char*>(recv.get());
        const double sec = time_median(grp.mpi, 3, budget, [&] {
          return timer([&] {
            if (k == "all-reduce") {
              check_nccl(ncclAllReduce(s, r, values, ncclBfloat16, ncclSum, grp.nccl, st), "ncclAllReduce");
            } else if (k == "all-gather") {
              check_nccl(ncclAllGather(s, r, chunk, ncclBfloat16, grp.nccl, st), "ncclAllGather");
            } else if (k == "reduce-scatter") {
              check_nccl(ncclReduceScatter(s, r, chunk, ncclBfloat16, ncclSum, grp.nccl, st), "ncclReduceScatter");
            } else if (k == "all-to-all") {
              check_nccl(ncclGroupStart(), "ncclGroupStart");
              for (int p = 0; p < g; ++p) {
                check_nccl(ncclSend(s + 2 * chunk * static_cast<size_t>(p), chunk, ncclBfloat16, p, grp.nccl, st),
                           "ncclSend");
                check_nccl(ncclRecv(r + 2 * chunk * static_cast<size_t>(p), chunk, ncclBfloat16, p, grp.nccl, st),
                           "ncclRecv");
              }
              check_nccl(ncclGroupEnd(), "ncclGroupEnd");
            } else {
              check_nccl(ncclBroadcast(r, r, values, ncclBfloat16, 0, grp.nccl, st), "ncclBroadcast");
            }
          });
        });
        points.push_back({{"bytes", 2 * values}, {"time_s", sec}});
        xs.push_back(static_cast<double>(2 * values));
        ys.push_back(sec);
      }
      if (grp.mpi != MPI_COMM_NULL) {
        Json row = {{"kind", kind}, {"group", g}, {"points", points}};
        row.update(fit(xs, ys));
        out.push_back(row);
      }
    }
  }
  // Point to point: ping-pong between ranks 0 and 1; one-way time is half.
  if (world >= 2) {
    NcclGroup pair(rank < 2 ? 0 : MPI_UNDEFINED, rank);
    if (pair.mpi != MPI_COMM_NULL) {
      Json points = Json::array();
      std::vector<double> xs, ys;
      for (int64_t bytes : sizes) {
        const auto n = static_cast<size_t>(bytes);
        const double sec = time_median(pair.mpi, 3, budget, [&] {
          return timer([&] {
            for (int turn = 0; turn < 2; ++turn) {
              if ((turn == 0) == (rank == 0)) {
                check_nccl(ncclSend(send.get(), n, ncclInt8, 1 - rank, pair.nccl, st), "ncclSend");
              } else {
                check_nccl(ncclRecv(recv.get(), n, ncclInt8, 1 - rank, pair.nccl, st), "ncclRecv");
              }
            }
          });
        });
        points.push_back({{"bytes", bytes}, {"time_s", sec / 2}});
        xs.push_back(static_cast<double>(bytes));
        ys.push_back(sec / 2);
      }
      Json row = {{"kind", "send-recv"}, {"group", 2}, {"points", points}};
      row.update(fit(xs, ys));
      out.push_back(row);
    }
  }
  return out;
}

}  // namespace

int run_calibration_cuda(const CalibrateOptions& opt) {
  return detail::run_mpi_rank([&](int rank, int world) {
    detail::select_cuda_device();
    ProgressWriter progress(opt.progress_dir, rank);
    progress.record().state.store(static_cast<int32_t>(RankState::kRunning));
    cudaStream_t st = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
    cudaDeviceProp prop{};
    int device = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    Json profile;
    profile["backend"] = "cuda";
    profile["ranks"] = world;
    profile["note"] = std::string(
                          "bf16 matmuls through cuBLAS, attention as chunked cuBLAS products (not fused), "
                          "the backend's own memory-bound kernels, NCCL collectives of bf16 values, on ") +
                      prop.name + "; each figure is the slowest rank's median with every rank running";
    profile["compute"] = compute_benchmarks(opt.quick, st, progress);
    profile["collectives"] = collective_benchmarks(opt.quick, rank, world, st, progress);
    check_cuda(cudaStreamDestroy(st), "cudaStreamDestroy");
    progress.record().state.store(static_cast<int32_t>(RankState::kDone));
    if (rank == 0 && !opt.result_file.empty()) {
      std::string err;
      if (!write_file_atomic(opt.result_file, profile.dump(2) + "\n", err)) throw std::runtime_error(err);
    }
    return 0;
  });
}

}  // namespace shardsim::realexec
