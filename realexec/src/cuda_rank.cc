#include "shardsim/realexec/cuda_rank.h"

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "comm_check.h"
#include "cuda_kernels.h"
#include "cuda_math.h"
#include "cuda_util.h"
#include "gather.h"
#include "group_comms.h"
#include "mpi_util.h"
#include "rank_frame.h"
#include "shardsim/realexec/op_sizing.h"
#include "shardsim/realexec/progress.h"
#include "shardsim/workloads/lower.h"

namespace shardsim::realexec {
namespace {

using detail::check_cuda;
using detail::check_mpi;
using detail::check_nccl;

/// A transfer channel: the simulator matches transfers in order per (sender,
/// receiver, forward or not); each channel gets its own two-rank NCCL
/// communicator (sender rank 0), so no communicator is shared by two streams
/// and NCCL's per-communicator order is the channel's order.
struct Channel {
  int src = 0, dst = 0, backward = 0;
  auto operator<=>(const Channel&) const = default;  // NOLINT(modernize-use-nullptr): clang-tidy 14 false positive
};

ncclDataType_t nccl_type(int64_t width) {
  return width == 4 ? ncclFloat32 : width == 2 ? ncclBfloat16 : ncclInt8;
}

class CudaExecutor {
 public:
  CudaExecutor(const Scenario& s, const ProgramSet& ps, int rank, int world, const RankOptions& opt,
               ProgressWriter& progress);
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  /// Runs one step; returns this rank's seconds from the step's start
  /// (after a barrier) to its last op's end. Spans are kept when `record`.
  double run_step(int step, bool record);
  const std::vector<TimelineSpan>& spans() const { return spans_; }
  VerifyStats& stats() { return stats_; }

 private:
  struct Group {
    ncclComm_t comm = nullptr;
    int size = 1, rank = 0;
  };
  void create_collective_comms(const ProgramSet& ps);
  void create_channel_comms(const ProgramSet& ps);
  void allocate();
  void issue(OpId id);
  void issue_compute(const Op& op, cudaStream_t st);
  void issue_comm(OpId id, const Op& op, cudaStream_t st);
  void wait_for_step();
  void collect_verify();
  int peer_of(int rank, const Op& op) const { return detail::peer_rank(mesh_, rank, op); }
  Channel channel_of(const Op& op) const {
    const int backward = op.pass == Pass::kForward ? 0 : 1;
    return op.kind == OpKind::kSend ? Channel{rank_, peer_of(rank_, op), backward}
                                    : Channel{peer_of(rank_, op), rank_, backward};
  }

  Mesh mesh_;
  int rank_;
  uint16_t stage_;
  const Program& program_;
  const RankOptions& opt_;
  ProgressWriter& progress_;
  KernelContext ctx_;
  std::map<int, Group> groups_;
  std::map<Channel, ncclComm_t> channels_;
  std::vector<cudaStream_t> streams_;
  std::vector<std::unique_ptr<detail::CudaMath>> math_;  // per stream with compute ops
  std::vector<cudaEvent_t> start_, end_;
  cudaEvent_t step_start_ = nullptr;
  char* in_ = nullptr;  // compute arenas (device)
  char* out_ = nullptr;
  std::vector<char*> send_, recv_;  // per stream (device)
  // --verify (device): per op, mismatches [0, n) and the first bad index [n, 2n).
  unsigned long long* bad_ = nullptr;
  std::vector<unsigned long long> bad_host_;
  VerifyStats stats_;
  bool corrupted_ = false;
  int step_ = 0;
  std::vector<TimelineSpan> spans_;
};

CudaExecutor::CudaExecutor(const Scenario& s, const ProgramSet& ps, int rank, int world, const RankOptions& opt,
                           ProgressWriter& progress)
    : mesh_(build_mesh(s.plan)),
      rank_(rank),
      stage_(static_cast<uint16_t>(mesh_.coord(rank, MeshAxis::kPp))),
      program_(ps.stages.at(stage_)),
      opt_(opt),
      progress_(progress) {
  (void)world;
  ctx_.head_dim = s.model.head_dim;
  streams_.resize(program_.num_streams());
  for (cudaStream_t& st : streams_)
    check_cuda(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
  const size_t n = program_.size();
  start_.resize(n);
  end_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    check_cuda(cudaEventCreate(&start_[i]), "cudaEventCreate");
    check_cuda(cudaEventCreate(&end_[i]), "cudaEventCreate");
  }
  check_cuda(cudaEventCreate(&step_start_), "cudaEventCreate");
  create_collective_comms(ps);
  create_channel_comms(ps);
  allocate();
}

CudaExecutor::~CudaExecutor() {
  // Best effort: a failed run aborts the job before it gets here.
  cudaDeviceSynchronize();
  for (auto& [key, g] : groups_) ncclCommDestroy(g.comm);
  for (auto& [ch, c] : channels_) ncclCommDestroy(c);
  math_.clear();
  for (cudaEvent_t e : start_) cudaEventDestroy(e);
  for (cudaEvent_t e : end_) cudaEventDestroy(e);
  if (step_start_ != nullptr) cudaEventDestroy(step_start_);
  for (char* p : send_) cudaFree(p);
  for (char* p : recv_) cudaFree(p);
  cudaFree(in_);
  cudaFree(out_);
  cudaFree(bad_);
  for (cudaStream_t st : streams_) cudaStreamDestroy(st);
}

void CudaExecutor::create_collective_comms(const ProgramSet& ps) {
  // The CPU executor's groups; each group's unique id is broadcast over its
  // MPI communicator and the blocking ncclCommInitRank calls line up.
  detail::split_group_comms(ps, mesh_, rank_, [&](int key, MPI_Comm c) {
    Group g;
    MPI_Comm_size(c, &g.size);
    MPI_Comm_rank(c, &g.rank);
    ncclUniqueId id;
    if (g.rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    check_mpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, c), "MPI_Bcast");
    MPI_Comm_free(&c);
    check_nccl(ncclCommInitRank(&g.comm, g.size, id, g.rank), "ncclCommInitRank");
    groups_[key] = g;
  });
}

void CudaExecutor::create_channel_comms(const ProgramSet& ps) {
  // Every channel of the run, from every rank's sends (each rank lowers the
  // same ProgramSet, so all ranks list the same channels in the same order).
  std::vector<Channel> all;
  for (int r = 0; r < static_cast<int>(mesh_.devices()); ++r) {
    const Program& p = ps.stages.at(static_cast<size_t>(mesh_.coord(r, MeshAxis::kPp)));
    for (const Op& op : p.ops()) {
      if (op.kind == OpKind::kSend) all.push_back({r, peer_of(r, op), op.pass == Pass::kForward ? 0 : 1});
    }
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  // This rank's side of each channel must stay on one stream.
  std::map<Channel, StreamId> stream_of;
  for (const Op& op : program_.ops()) {
    if (op.kind != OpKind::kSend && op.kind != OpKind::kRecv) continue;
    const auto [it, fresh] = stream_of.emplace(channel_of(op), op.stream);
    if (!fresh && it->second != op.stream) {
      throw std::runtime_error("the CUDA executor needs each transfer channel on one stream; \"" +
                               std::string(program_.name(op)) + "\" uses two");
    }
  }
  // Senders make the ids and send them to the receivers, in channel order.
  std::vector<ncclUniqueId> ids(all.size());
  std::vector<MPI_Request> reqs;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].src != rank_ || all[i].dst == rank_) continue;
    check_nccl(ncclGetUniqueId(&ids[i]), "ncclGetUniqueId");
    MPI_Request req = MPI_REQUEST_NULL;
    check_mpi(MPI_Isend(&ids[i], sizeof(ncclUniqueId), MPI_BYTE, all[i].dst, 0, MPI_COMM_WORLD, &req), "MPI_Isend");
    reqs.push_back(req);
  }
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].dst != rank_ || all[i].src == rank_) continue;
    check_mpi(MPI_Recv(&ids[i], sizeof(ncclUniqueId), MPI_BYTE, all[i].src, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Recv");
  }
  if (!reqs.empty()) {
    check_mpi(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }
  for (const Channel& ch : all) {
    if (ch.src == ch.dst && ch.src == rank_) {
      throw std::runtime_error("a transfer to itself (a pipeline of one stage cannot send)");
    }
  }
  // One grouped initialization: the two-rank communicators do not wait on
  // each other.
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].src != rank_ && all[i].dst != rank_) continue;
    ncclComm_t c = nullptr;
    check_nccl(ncclCommInitRank(&c, 2, ids[i], all[i].src == rank_ ? 0 : 1), "ncclCommInitRank");
    channels_[all[i]] = c;
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
}

void CudaExecutor::allocate() {
  const RankFootprint f = rank_footprint(program_, ctx_, [&](uint8_t axes) { return mesh_.group_size(axes); });
  const size_t in_bytes = static_cast<size_t>(4 * std::max<int64_t>(1, f.compute_input_floats));
  const size_t out_bytes = static_cast<size_t>(4 * std::max<int64_t>(1, f.compute_output_floats));
  check_cuda(cudaMalloc(&in_, in_bytes), "cudaMalloc (input arena)");
  check_cuda(cudaMalloc(&out_, out_bytes), "cudaMalloc (output arena)");
  // Inputs: bf16 values in [-0.5, 0.5) (finite as fp32 and fp8 too); kernels
  // never write them, so values stay bounded however many ops run.
  check_cuda(cuda::fill_uniform(in_, static_cast<int64_t>(in_bytes), 0x2545f4914f6cdd1dull + rank_, streams_[0]),
             "fill");
  check_cuda(cudaMemsetAsync(out_, 0, out_bytes, streams_[0]), "cudaMemset");
  std::vector<int64_t> send(program_.num_streams()), recv(program_.num_streams());
  for (const Op& op : program_.ops()) {
    if (op.kind == OpKind::kCompute) continue;
    const CommFootprint c = comm_footprint(op, op.kind == OpKind::kCollective ? mesh_.group_size(op.axes) : 1);
    send[op.stream] = std::max(send[op.stream], c.send_bytes);
    recv[op.stream] = std::max(recv[op.stream], c.recv_bytes);
  }
  send_.assign(program_.num_streams(), nullptr);
  recv_.assign(program_.num_streams(), nullptr);
  for (size_t s = 0; s < program_.num_streams(); ++s) {
    if (send[s] > 0) {
      check_cuda(cudaMalloc(&send_[s], static_cast<size_t>(send[s])), "cudaMalloc (send buffer)");
      check_cuda(cudaMemsetAsync(send_[s], 0, static_cast<size_t>(send[s]), streams_[0]), "cudaMemset");
    }
    if (recv[s] > 0) check_cuda(cudaMalloc(&recv_[s], static_cast<size_t>(recv[s])), "cudaMalloc (recv buffer)");
  }
  // cuBLAS handles and attention workspaces, per stream that computes.
  math_.resize(program_.num_streams());
  for (const Op& op : program_.ops()) {
    if (op.kind != OpKind::kCompute) continue;
    if (op.compute != ComputeKind::kMatmul && op.compute != ComputeKind::kAttention) continue;
    auto& m = math_[op.stream];
    if (!m) m = std::make_unique<detail::CudaMath>(streams_[op.stream]);
    if (op.compute == ComputeKind::kAttention) {
      m->reserve(kernel_call(op, ctx_, program_.name(op).find("ring") != std::string_view::npos).attention);
    }
  }
  if (opt_.verify) {
    check_cuda(cudaMalloc(&bad_, 2 * program_.size() * sizeof(unsigned long long)), "cudaMalloc (verify counters)");
  }
  check_cuda(cudaStreamSynchronize(streams_[0]), "cudaStreamSynchronize");
}

void CudaExecutor::issue_compute(const Op& op, cudaStream_t st) {
  using K = KernelCall::Kernel;
  const KernelCall c = kernel_call(op, ctx_, program_.name(op).find("ring") != std::string_view::npos);
  // Offsets are in fp32 slots (KernelCall).
  auto in = [&](int i) { return in_ + 4 * c.in[i]; };
  auto out = [&](int i) { return out_ + 4 * c.out[i]; };
  auto inf = [&](int i) { return reinterpret_cast<const float*>(in(i)); };
  auto outf = [&](int i) { return reinterpret_cast<float*>(out(i)); };
  cudaError_t e = cudaSuccess;
  switch (c.kernel) {
    case K::kMatmul:
      math_[op.stream]->matmul(op.dtype, in(0), in(1), out(0), c.batch, c.m, c.n, c.k);
      return;
    case K::kAttentionForward:
      math_[op.stream]->attention_forward(c.attention, in(0), in(1), in(2), out(0), outf(1));
      return;
    case K::kAttentionBackward:
      math_[op.stream]->attention_backward(c.attention, in(0), in(3), in(4), in(1), in(2), inf(5), outf(0), outf(1),
                                           outf(2));
      return;
    case K::kRmsnorm:
      e = cuda::rmsnorm(inf(0), inf(1), c.with_grad ? inf(2) : nullptr, outf(0), c.n_out, c.row, st);
      break;
    case K::kSoftmax:
      e = cuda::softmax(inf(0), c.with_grad ? inf(1) : nullptr, outf(0), c.n_out, c.row, st);
      break;
    case K::kCrossEntropy:
      e = cuda::cross_entropy(inf(0), outf(0), c.n_out, c.row, st);
      break;
    case K::kEmbeddingLookup:
      e = cuda::embedding_lookup(inf(0), c.n_in / c.row, outf(0), c.n_out / c.row, c.row, st);
      break;
    case K::kEmbeddingScatterAdd:
      e = cuda::embedding_scatter_add(inf(0), c.n_in / c.row, outf(0), c.n_out / c.row, c.row, st);
      break;
    case K::kAdam:
      e = cuda::adam(outf(0), inf(0), outf(1), outf(2), c.n_out, st);
      break;
    case K::kElementwise:
      e = cuda::elementwise(inf(0), c.n_in, outf(0), c.n_out, st);
      break;
  }
  check_cuda(e, "kernel launch");
}

void CudaExecutor::issue_comm(OpId id, const Op& op, cudaStream_t st) {
  const int64_t w = comm_value_bytes(op.dtype);
  const ncclDataType_t type = nccl_type(w);
  char* send = send_[op.stream];
  char* recv = recv_[op.stream];
  if (op.kind == OpKind::kCollective) {
    const Group& g = groups_.at(detail::group_comm_key(op.axes, op.stream));
    const CommFootprint f = comm_footprint(op, g.size);
    const auto n_send = static_cast<size_t>(f.send_bytes / w), n_recv = static_cast<size_t>(f.recv_bytes / w);
    if (opt_.verify) {
      const bool bcast = op.collective == CollectiveKind::kBroadcast;
      check_cuda(cuda::fill_pattern(bcast ? recv : send, static_cast<int>(w),
                                    static_cast<int64_t>(bcast ? n_recv : n_send), g.rank, st),
                 "fill");
    }
    check_cuda(cudaEventRecord(start_[id], st), "cudaEventRecord");
    switch (op.collective) {
      case CollectiveKind::kAllReduce:
        check_nccl(ncclAllReduce(send, recv, n_send, type, ncclSum, g.comm, st), "ncclAllReduce");
        break;
      case CollectiveKind::kAllGather:
        check_nccl(ncclAllGather(send, recv, n_send, type, g.comm, st), "ncclAllGather");
        break;
      case CollectiveKind::kReduceScatter:
        check_nccl(ncclReduceScatter(send, recv, n_recv, type, ncclSum, g.comm, st), "ncclReduceScatter");
        break;
      case CollectiveKind::kAllToAll: {
        // NCCL has no all-to-all: one grouped send and receive per peer.
        const size_t chunk = std::min(n_send, n_recv) / static_cast<size_t>(g.size);
        check_nccl(ncclGroupStart(), "ncclGroupStart");
        for (int p = 0; p < g.size; ++p) {
          check_nccl(ncclSend(send + static_cast<size_t>(p) * chunk * w, chunk, type, p, g.comm, st), "ncclSend");
          check_nccl(ncclRecv(recv + static_cast<size_t>(p) * chunk * w, chunk, type, p, g.comm, st), "ncclRecv");
        }
        check_nccl(ncclGroupEnd(), "ncclGroupEnd");
        break;
      }
      case CollectiveKind::kBroadcast:
        check_nccl(ncclBroadcast(recv, recv, n_recv, type, 0, g.comm, st), "ncclBroadcast");
        break;
    }
    check_cuda(cudaEventRecord(end_[id], st), "cudaEventRecord");
    return;
  }
  const CommFootprint f = comm_footprint(op, 1);
  ncclComm_t comm = channels_.at(channel_of(op));
  if (op.kind == OpKind::kSend) {
    if (opt_.verify) {
      check_cuda(cuda::fill_pattern(send, static_cast<int>(w), f.send_bytes / w, rank_, st), "fill");
    }
    check_cuda(cudaEventRecord(start_[id], st), "cudaEventRecord");
    check_nccl(ncclSend(send, static_cast<size_t>(f.send_bytes), ncclInt8, 1, comm, st), "ncclSend");
  } else {
    check_cuda(cudaEventRecord(start_[id], st), "cudaEventRecord");
    check_nccl(ncclRecv(recv, static_cast<size_t>(f.recv_bytes), ncclInt8, 0, comm, st), "ncclRecv");
  }
  check_cuda(cudaEventRecord(end_[id], st), "cudaEventRecord");
}

void CudaExecutor::issue(OpId id) {
  const Op& op = program_.op(id);
  ProgressRecord& rec = progress_.record();
  (op.kind == OpKind::kCompute ? rec.compute_op : rec.comm_op)
      .store(static_cast<int32_t>(id), std::memory_order_relaxed);
  progress_.touch();
  apply_fault(opt_.fault, rank_, id, step_);
  cudaStream_t st = streams_[op.stream];
  // The previous op of the stream is a dependency by stream order; the
  // others wait on their end events.
  for (OpId d : program_.deps(id)) {
    if (program_.op(d).stream != op.stream) check_cuda(cudaStreamWaitEvent(st, end_[d], 0), "cudaStreamWaitEvent");
  }
  if (op.kind == OpKind::kCompute) {
    check_cuda(cudaEventRecord(start_[id], st), "cudaEventRecord");
    issue_compute(op, st);
    check_cuda(cudaEventRecord(end_[id], st), "cudaEventRecord");
    return;
  }
  issue_comm(id, op, st);
  if (!opt_.verify || op.kind == OpKind::kSend) return;
  // --verify: check what arrived, on the stream, after the op's end event.
  const int64_t w = comm_value_bytes(op.dtype);
  const FaultSpec& fault = opt_.fault;
  if (fault.kind == FaultSpec::Kind::kCorrupt && fault.rank == rank_ && !corrupted_ &&
      static_cast<int64_t>(id) >= fault.op) {
    corrupted_ = true;
    check_cuda(cuda::corrupt_first(recv_[op.stream], static_cast<int>(w), st), "corrupt");
  }
  detail::ReceiveCheck c;
  if (op.kind == OpKind::kRecv) {
    c = detail::receive_check(op, 1, 0, peer_of(rank_, op));
  } else {
    const Group& g = groups_.at(detail::group_comm_key(op.axes, op.stream));
    c = detail::receive_check(op, g.size, g.rank, 0);
  }
  check_cuda(cuda::check_pattern(recv_[op.stream], static_cast<int>(w), c, bad_ + id, bad_ + program_.size() + id, st),
             "check");
}

void CudaExecutor::wait_for_step() {
  // Poll the end events in program order (sleeping between polls, so the
  // host thread leaves the core to others), recording progress for the
  // launcher, and NCCL's asynchronous errors (a peer that died).
  using Us = std::chrono::microseconds;
  auto last_progress = std::chrono::steady_clock::now();
  for (OpId i = 0; i < program_.size();) {
    const cudaError_t e = cudaEventQuery(end_[i]);
    if (e == cudaSuccess) {
      progress_.record().ops_done.fetch_add(1, std::memory_order_relaxed);
      ++i;
      last_progress = std::chrono::steady_clock::now();
      continue;
    }
    if (e != cudaErrorNotReady) check_cuda(e, "cudaEventQuery");
    progress_.touch();
    for (auto& [key, g] : groups_) {
      ncclResult_t async = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(g.comm, &async), "ncclCommGetAsyncError");
      check_nccl(async, "NCCL (collective)");
    }
    for (auto& [ch, c] : channels_) {
      ncclResult_t async = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(c, &async), "ncclCommGetAsyncError");
      check_nccl(async, "NCCL (transfer)");
    }
    const auto waited = std::chrono::duration_cast<Us>(std::chrono::steady_clock::now() - last_progress);
    std::this_thread::sleep_for(std::clamp(waited / 4, Us(10), Us(200)));
  }
}

void CudaExecutor::collect_verify() {
  const size_t n = program_.size();
  // The check kernels run after their ops' end events: wait for them too.
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  bad_host_.resize(2 * n);
  check_cuda(cudaMemcpy(bad_host_.data(), bad_, 2 * n * sizeof(unsigned long long), cudaMemcpyDeviceToHost),
             "cudaMemcpy");
  for (OpId i = 0; i < n; ++i) {
    const Op& op = program_.op(i);
    if (op.kind == OpKind::kCompute || op.kind == OpKind::kSend) continue;
    ++(op.kind == OpKind::kRecv ? stats_.transfers_checked : stats_.collectives_checked);
    const unsigned long long bad = bad_host_[i];
    if (bad == 0) continue;
    // One mismatch per wrong buffer, as the CPU executor counts.
    if (stats_.mismatches++ == 0) {
      stats_.first_mismatch = "rank " + std::to_string(rank_) + ": " + program_.label(i) + ": value " +
                              std::to_string(bad_host_[n + i]) + " differs from the expected value (" +
                              std::to_string(bad) + " values differ)";
    }
  }
}

double CudaExecutor::run_step(int step, bool record) {
  step_ = step;
  const size_t n = program_.size();
  if (opt_.verify) {
    // Counts 0, first bad index ULLONG_MAX (all ones) for every op.
    check_cuda(cudaMemsetAsync(bad_, 0, n * sizeof(unsigned long long), streams_[0]), "cudaMemset");
    check_cuda(cudaMemsetAsync(bad_ + n, 0xff, n * sizeof(unsigned long long), streams_[0]), "cudaMemset");
  }
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  progress_.record().step.store(step);
  detail::barrier_polling(MPI_COMM_WORLD);
  check_cuda(cudaEventRecord(step_start_, streams_[0]), "cudaEventRecord");
  for (size_t s = 1; s < streams_.size(); ++s) {
    check_cuda(cudaStreamWaitEvent(streams_[s], step_start_, 0), "cudaStreamWaitEvent");
  }
  for (OpId i = 0; i < n; ++i) issue(i);
  wait_for_step();
  if (opt_.verify) collect_verify();
  // Times from the step's start event (cudaEventElapsedTime: ms, about 0.5 us
  // resolution).
  double last_s = 0;
  if (record) spans_.clear();
  for (OpId i = 0; i < n; ++i) {
    float a_ms = 0, b_ms = 0;
    check_cuda(cudaEventElapsedTime(&a_ms, step_start_, start_[i]), "cudaEventElapsedTime");
    check_cuda(cudaEventElapsedTime(&b_ms, step_start_, end_[i]), "cudaEventElapsedTime");
    last_s = std::max(last_s, static_cast<double>(b_ms) * 1e-3);
    if (record) {
      const Op& op = program_.op(i);
      spans_.push_back({static_cast<uint32_t>(rank_), stage_, op.stream, i,
                        SimTime::from_ps(static_cast<int64_t>(static_cast<double>(a_ms) * 1e9)),
                        SimTime::from_ps(static_cast<int64_t>(static_cast<double>(b_ms) * 1e9))});
    }
  }
  return last_s;
}

}  // namespace

void detail::select_cuda_device() {
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
  int local_rank = 0, local_size = 1;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    throw std::runtime_error(std::string("no usable CUDA device (") +
                             (e != cudaSuccess ? cudaGetErrorString(e) : "no device") + ")");
  }
  if (local_size > devices) {
    throw std::runtime_error(std::to_string(local_size) + " ranks on this node but " + std::to_string(devices) +
                             " CUDA devices: the CUDA backend runs one rank per GPU");
  }
  check_cuda(cudaSetDevice(local_rank), "cudaSetDevice");
}

namespace {

int run(const Scenario& s, const RankOptions& opt, int rank, int world, MeasuredRun* measured) {
  detail::select_cuda_device();
  return detail::run_rank_steps(
      s, opt, rank, world, measured, "cuda",
      [&](const ProgramSet& ps, ProgressWriter& progress) {
        return std::make_unique<CudaExecutor>(s, ps, rank, world, opt, progress);
      },
      [] { return cuda_kernel_self_check(); },
      [] {
        cudaDeviceProp prop{};
        int device = 0;
        check_cuda(cudaGetDevice(&device), "cudaGetDevice");
        check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
        return std::string(prop.name);
      });
}

}  // namespace

int run_rank_cuda(const Scenario& s, const RankOptions& opt, MeasuredRun* measured) {
  return detail::run_mpi_rank([&](int rank, int world) { return run(s, opt, rank, world, measured); });
}

}  // namespace shardsim::realexec
