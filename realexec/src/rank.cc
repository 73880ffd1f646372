#include "shardsim/realexec/rank.h"

#include <mpi.h>
#include <sys/prctl.h>
#include <unistd.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "comm_check.h"
#include "gather.h"
#include "group_comms.h"
#include "mpi_util.h"
#include "rank_frame.h"
#include "shardsim/core/atomic_file.h"
#include "shardsim/realexec/kernels.h"
#include "shardsim/realexec/measured.h"
#include "shardsim/realexec/op_sizing.h"
#include "shardsim/realexec/progress.h"
#include "shardsim/workloads/lower.h"

namespace shardsim::realexec {

namespace {

using detail::bf16_sum;
using detail::check_mpi;
using detail::from_bf16;
using detail::pattern;
using detail::to_bf16;
using Clock = std::chrono::steady_clock;

// ---- values of communication buffers (verify_pattern.h) --------------------
void store(std::byte* buf, int64_t width, int64_t i, float v) {
  if (width == 4) {
    std::memcpy(buf + 4 * i, &v, 4);
  } else if (width == 2) {
    const uint16_t h = to_bf16(v);
    std::memcpy(buf + 2 * i, &h, 2);
  } else {
    buf[i] = static_cast<std::byte>(static_cast<int8_t>(v));
  }
}
float load(const std::byte* buf, int64_t width, int64_t i) {
  if (width == 4) {
    float v = 0;
    std::memcpy(&v, buf + 4 * i, 4);
    return v;
  }
  if (width == 2) {
    uint16_t h = 0;
    std::memcpy(&h, buf + 2 * i, 2);
    return from_bf16(h);
  }
  return static_cast<float>(static_cast<int8_t>(buf[i]));
}

struct CommBuffers {
  std::vector<std::byte> send, recv;
};

struct InFlight {
  OpId op = 0;
  SimTime start;
};

class Executor {
 public:
  Executor(const Scenario& s, const ProgramSet& ps, int rank, const RankOptions& opt, ProgressWriter& progress)
      : mesh_(build_mesh(s.plan)),
        rank_(rank),
        stage_(static_cast<uint16_t>(mesh_.coord(rank, MeshAxis::kPp))),
        program_(ps.stages.at(stage_)),
        opt_(opt),
        progress_(progress) {
    ctx_.head_dim = s.model.head_dim;
    split_communicators(ps);
    allocate();
    check_mpi(MPI_Op_create(&bf16_sum, 1, &bf16_op_), "MPI_Op_create");
  }
  ~Executor() {
    for (auto& [key, comm] : comms_) MPI_Comm_free(&comm);
    MPI_Comm_free(&p2p_);
    MPI_Op_free(&bf16_op_);
  }

  /// Runs one step; returns this rank's seconds from the step's start
  /// (after a barrier) to its last op's end. Spans are kept when `record`.
  double run_step(int step, bool record);
  const std::vector<TimelineSpan>& spans() const { return spans_; }
  VerifyStats& stats() { return stats_; }

 private:
  void split_communicators(const ProgramSet& ps);
  void allocate();
  void dispatch(OpId op);
  void complete(OpId op);
  void compute_loop();
  void run_compute(const Op& op);
  void start_comm(OpId id, std::vector<InFlight>& inflight, std::vector<MPI_Request>& reqs);
  void finish_comm(const InFlight& f);
  void mismatch(const std::string& what);
  SimTime now() const { return SimTime::from_ps((Clock::now() - t0_).count() * 1000); }
  MPI_Comm comm_of(const Op& op) const { return comms_.at(detail::group_comm_key(op.axes, op.stream)); }
  int peer_of(const Op& op) const { return detail::peer_rank(mesh_, rank_, op); }

  Mesh mesh_;
  int rank_;
  uint16_t stage_;
  const Program& program_;
  const RankOptions& opt_;
  ProgressWriter& progress_;
  KernelContext ctx_;
  std::map<int, MPI_Comm> comms_;
  MPI_Comm p2p_ = MPI_COMM_NULL;
  MPI_Op bf16_op_ = MPI_OP_NULL;
  std::vector<float> in_, out_;         // compute arenas: read-only inputs, outputs
  std::vector<CommBuffers> comm_bufs_;  // per stream
  VerifyStats stats_;
  bool corrupted_ = false;  // the corrupt fault fired
  std::vector<TimelineSpan> spans_;

  // Per step.
  int step_ = 0;
  Clock::time_point t0_;
  std::unique_ptr<std::atomic<uint32_t>[]> remaining_;
  std::atomic<size_t> done_{0};
  std::atomic<bool> failed_{false};
  std::exception_ptr compute_error_;
  std::mutex compute_mu_;
  std::condition_variable compute_cv_;
  std::deque<OpId> compute_ready_;
  std::mutex comm_mu_;
  std::condition_variable comm_cv_;
  std::vector<OpId> comm_ready_;
  std::vector<TimelineSpan> compute_spans_, comm_spans_;
};

void Executor::split_communicators(const ProgramSet& ps) {
  detail::split_group_comms(ps, mesh_, rank_, [&](int key, MPI_Comm c) { comms_[key] = c; });
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &p2p_), "MPI_Comm_dup");
}

void Executor::allocate() {
  const RankFootprint f = rank_footprint(program_, ctx_, [&](uint8_t axes) { return mesh_.group_size(axes); });
  in_.resize(static_cast<size_t>(f.compute_input_floats));
  out_.assign(static_cast<size_t>(f.compute_output_floats), 0.0f);
  // Inputs: uniform in [-0.5, 0.5) from a fixed LCG; kernels never write them,
  // so values stay bounded however many ops run.
  uint64_t x = 0x2545f4914f6cdd1dull + static_cast<uint64_t>(rank_);
  for (float& v : in_) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<float>(static_cast<double>(x >> 40) / static_cast<double>(1ull << 24)) - 0.5f;
  }
  comm_bufs_.resize(program_.num_streams());
  for (const Op& op : program_.ops()) {
    if (op.kind == OpKind::kCompute) continue;
    const CommFootprint c = comm_footprint(op, op.kind == OpKind::kCollective ? mesh_.group_size(op.axes) : 1);
    CommBuffers& b = comm_bufs_[op.stream];
    if (static_cast<int64_t>(b.send.size()) < c.send_bytes) b.send.resize(static_cast<size_t>(c.send_bytes));
    if (static_cast<int64_t>(b.recv.size()) < c.recv_bytes) b.recv.resize(static_cast<size_t>(c.recv_bytes));
  }
}

void Executor::mismatch(const std::string& what) {
  if (stats_.mismatches++ == 0) stats_.first_mismatch = "rank " + std::to_string(rank_) + ": " + what;
}

void Executor::dispatch(OpId op) {
  if (program_.op(op).kind == OpKind::kCompute) {
    std::lock_guard<std::mutex> lk(compute_mu_);
    compute_ready_.push_back(op);
    compute_cv_.notify_one();
  } else {
    std::lock_guard<std::mutex> lk(comm_mu_);
    comm_ready_.push_back(op);
    comm_cv_.notify_one();
  }
}

void Executor::complete(OpId op) {
  progress_.record().ops_done.fetch_add(1, std::memory_order_relaxed);
  progress_.touch();
  for (OpId s : program_.succs(op)) {
    if (remaining_[s].fetch_sub(1) == 1) dispatch(s);
  }
  if (done_.fetch_add(1) + 1 == program_.size()) {
    // Notify under the locks so that no waiter misses the end.
    {
      std::lock_guard<std::mutex> lk(compute_mu_);
      compute_cv_.notify_all();
    }
    std::lock_guard<std::mutex> lk(comm_mu_);
    comm_cv_.notify_all();
  }
}

void Executor::compute_loop() {
#if defined(__SSE__)
  // Flush denormals to zero (as GPUs do): a denormal costs ~100 cycles on x86.
  _mm_setcsr(_mm_getcsr() | 0x8040);
#endif
  try {
    for (;;) {
      OpId op = 0;
      {
        std::unique_lock<std::mutex> lk(compute_mu_);
        compute_cv_.wait(lk, [&] { return !compute_ready_.empty() || done_ == program_.size() || failed_; });
        if (compute_ready_.empty() || failed_) return;
        op = compute_ready_.front();
        compute_ready_.pop_front();
      }
      ProgressRecord& rec = progress_.record();
      rec.compute_op.store(static_cast<int32_t>(op), std::memory_order_relaxed);
      rec.compute_busy.store(1, std::memory_order_relaxed);
      progress_.touch();
      apply_fault(opt_.fault, rank_, op, step_);
      const SimTime start = now();
      run_compute(program_.op(op));
      const SimTime end = now();
      rec.compute_busy.store(0, std::memory_order_relaxed);
      compute_spans_.push_back({static_cast<uint32_t>(rank_), stage_, program_.op(op).stream, op, start, end});
      complete(op);
    }
  } catch (...) {
    compute_error_ = std::current_exception();
    failed_ = true;
    std::lock_guard<std::mutex> lk(comm_mu_);
    comm_cv_.notify_all();
  }
}

void Executor::run_compute(const Op& op) {
  using K = KernelCall::Kernel;
  const KernelCall c = kernel_call(op, ctx_, program_.name(op).find("ring") != std::string_view::npos);
  const float* in = in_.data();
  float* out = out_.data();
  switch (c.kernel) {
    case K::kMatmul:
      matmul(in, in + c.in[1], out, c.batch, c.m, c.n, c.k);
      return;
    case K::kAttentionForward:
      attention_forward(c.attention, in, in + c.in[1], in + c.in[2], out, out + c.out[1]);
      return;
    case K::kAttentionBackward:
      attention_backward(c.attention, in, in + c.in[3], in + c.in[4], in + c.in[1], in + c.in[2], in + c.in[5], out,
                         out + c.out[1], out + c.out[2]);
      return;
    case K::kRmsnorm:
      rmsnorm(in, in + c.in[1], c.with_grad ? in + c.in[2] : nullptr, out, c.n_out, c.row);
      return;
    case K::kSoftmax:
      softmax(in, out, c.n_out, c.row);
      if (c.with_grad) {  // backward: times the incoming gradient
        const float* g = in + c.in[1];
        for (int64_t i = 0; i < c.n_out; ++i) out[i] *= g[i];
      }
      return;
    case K::kCrossEntropy:
      cross_entropy(in, out, c.n_out, c.row);
      return;
    case K::kEmbeddingLookup:
      embedding_lookup(in, c.n_in / c.row, out, c.n_out / c.row, c.row);
      return;
    case K::kEmbeddingScatterAdd:
      embedding_scatter_add(in, c.n_in / c.row, out, c.n_out / c.row, c.row);
      return;
    case K::kAdam:
      adam(out, in, out + c.out[1], out + c.out[2], c.n_out);
      return;
    case K::kElementwise:
      elementwise(in, c.n_in, out, c.n_out);
      return;
  }
}

void Executor::start_comm(OpId id, std::vector<InFlight>& inflight, std::vector<MPI_Request>& reqs) {
  const Op& op = program_.op(id);
  progress_.record().comm_op.store(static_cast<int32_t>(id), std::memory_order_relaxed);
  progress_.touch();
  apply_fault(opt_.fault, rank_, id, step_);
  CommBuffers& buf = comm_bufs_[op.stream];
  const int64_t w = comm_value_bytes(op.dtype);
  MPI_Datatype type = w == 4 ? MPI_FLOAT : w == 2 ? MPI_UINT16_T : MPI_INT8_T;
  MPI_Op sum = w == 2 ? bf16_op_ : MPI_SUM;
  MPI_Request req = MPI_REQUEST_NULL;
  if (op.kind == OpKind::kCollective) {
    MPI_Comm comm = comm_of(op);
    int g = 1, gr = 0;
    MPI_Comm_size(comm, &g);
    MPI_Comm_rank(comm, &gr);
    const CommFootprint f = comm_footprint(op, g);
    const int64_t n_send = f.send_bytes / w, n_recv = f.recv_bytes / w;
    if (opt_.verify) {
      const int64_t n = op.collective == CollectiveKind::kBroadcast ? n_recv : n_send;
      std::byte* dst = op.collective == CollectiveKind::kBroadcast ? buf.recv.data() : buf.send.data();
      for (int64_t i = 0; i < n; ++i) store(dst, w, i, pattern(gr, i));
    }
    const SimTime start = now();
    const int chunk = static_cast<int>(std::min(n_send, n_recv) / (op.collective == CollectiveKind::kAllToAll ? g : 1));
    switch (op.collective) {
      case CollectiveKind::kAllReduce:
        check_mpi(MPI_Iallreduce(buf.send.data(), buf.recv.data(), static_cast<int>(n_send), type, sum, comm, &req),
                  "MPI_Iallreduce");
        break;
      case CollectiveKind::kAllGather:
        check_mpi(MPI_Iallgather(buf.send.data(), chunk, type, buf.recv.data(), chunk, type, comm, &req),
                  "MPI_Iallgather");
        break;
      case CollectiveKind::kReduceScatter:
        check_mpi(MPI_Ireduce_scatter_block(buf.send.data(), buf.recv.data(), chunk, type, sum, comm, &req),
                  "MPI_Ireduce_scatter_block");
        break;
      case CollectiveKind::kAllToAll:
        check_mpi(MPI_Ialltoall(buf.send.data(), chunk, type, buf.recv.data(), chunk, type, comm, &req),
                  "MPI_Ialltoall");
        break;
      case CollectiveKind::kBroadcast:
        check_mpi(MPI_Ibcast(buf.recv.data(), static_cast<int>(n_recv), type, 0, comm, &req), "MPI_Ibcast");
        break;
    }
    inflight.push_back({id, start});
    reqs.push_back(req);
    return;
  }
  const CommFootprint f = comm_footprint(op, 1);
  const int peer = peer_of(op);
  const int tag = op.pass == Pass::kForward ? 0 : 1;  // the simulator's channel: (sender, receiver, forward or not)
  if (op.kind == OpKind::kSend) {
    if (opt_.verify) {
      for (int64_t i = 0; i < f.send_bytes / w; ++i) store(buf.send.data(), w, i, pattern(rank_, i));
    }
    const SimTime start = now();
    check_mpi(MPI_Isend(buf.send.data(), static_cast<int>(f.send_bytes), MPI_BYTE, peer, tag, p2p_, &req), "MPI_Isend");
    inflight.push_back({id, start});
  } else {
    const SimTime start = now();
    check_mpi(MPI_Irecv(buf.recv.data(), static_cast<int>(f.recv_bytes), MPI_BYTE, peer, tag, p2p_, &req), "MPI_Irecv");
    inflight.push_back({id, start});
  }
  reqs.push_back(req);
}

void Executor::finish_comm(const InFlight& fl) {
  const SimTime end = now();
  const Op& op = program_.op(fl.op);
  comm_spans_.push_back({static_cast<uint32_t>(rank_), stage_, op.stream, fl.op, fl.start, end});
  if (opt_.verify && op.kind != OpKind::kSend) {
    CommBuffers& buf = comm_bufs_[op.stream];
    const int64_t w = comm_value_bytes(op.dtype);
    const FaultSpec& fault = opt_.fault;
    if (fault.kind == FaultSpec::Kind::kCorrupt && fault.rank == rank_ && !corrupted_ &&
        static_cast<int64_t>(fl.op) >= fault.op) {
      corrupted_ = true;
      store(buf.recv.data(), w, 0, load(buf.recv.data(), w, 0) + 1.0f);
    }
    auto expect = [&](int64_t i, float want, float got) {
      if (got == want) return true;
      mismatch(program_.label(fl.op) + ": value " + std::to_string(i) + " is " + std::to_string(got) + ", expected " +
               std::to_string(want));
      return false;
    };
    detail::ReceiveCheck c;
    if (op.kind == OpKind::kRecv) {
      ++stats_.transfers_checked;
      c = detail::receive_check(op, 1, 0, peer_of(op));
    } else {
      ++stats_.collectives_checked;
      MPI_Comm comm = comm_of(op);
      int g = 1, gr = 0;
      MPI_Comm_size(comm, &g);
      MPI_Comm_rank(comm, &gr);
      c = detail::receive_check(op, g, gr, 0);
    }
    for (int64_t i = 0; i < c.n_recv; ++i) {
      if (!expect(i, detail::expected_value(c, i), load(buf.recv.data(), w, i))) break;
    }
  }
  complete(fl.op);
}

double Executor::run_step(int step, bool record) {
  step_ = step;
  const size_t n = program_.size();
  remaining_ = std::make_unique<std::atomic<uint32_t>[]>(n);
  for (OpId i = 0; i < n; ++i) remaining_[i].store(static_cast<uint32_t>(program_.deps(i).size()));
  done_ = 0;
  compute_spans_.clear();
  comm_spans_.clear();
  compute_ready_.clear();
  comm_ready_.clear();
  progress_.record().step.store(step);
  detail::barrier_polling(MPI_COMM_WORLD);
  t0_ = Clock::now();
  for (OpId i = 0; i < n; ++i) {
    if (program_.deps(i).empty()) dispatch(i);
  }
  std::thread compute([this] { compute_loop(); });
  ::prctl(PR_SET_TIMERSLACK, 1000UL);  // 1 us timer slack (default 50 us): polls wake on time
  // An MPI error on this thread must still stop and join the compute thread
  // (a joinable std::thread's destructor would terminate the process).
  std::exception_ptr comm_error;
  try {
    std::vector<InFlight> inflight;
    std::vector<MPI_Request> reqs;
    std::vector<OpId> ready;
    std::vector<int> indices;
    // Polling: MPI progresses non-blocking operations only inside MPI calls, so
    // this thread tests its requests in a loop, sleeping between tests (woken
    // early when an op becomes ready). It never spins: on a machine with fewer
    // cores than threads, a rank spinning while it waits for a peer takes the
    // core that peer needs. The sleep is a quarter of the time since the last
    // progress (clamped to [kPollMin, kPollMax]): an op is seen done at most
    // ~25% (or 10 us) late, and a long wait (a pipeline receive) costs a few
    // thousand wake-ups per second, not tens of thousands.
    using Us = std::chrono::microseconds;
    constexpr Us kPollMin(10), kPollMax(200);
    auto last_progress = Clock::now();
    while (done_ < n && !failed_) {
      {
        std::lock_guard<std::mutex> lk(comm_mu_);
        ready.swap(comm_ready_);
      }
      if (!ready.empty()) last_progress = Clock::now();
      for (OpId id : ready) start_comm(id, inflight, reqs);
      ready.clear();
      if (inflight.empty()) {
        std::unique_lock<std::mutex> lk(comm_mu_);
        comm_cv_.wait(lk, [&] { return !comm_ready_.empty() || done_ == n || failed_; });
        continue;
      }
      int count = 0;
      indices.resize(reqs.size());
      check_mpi(MPI_Testsome(static_cast<int>(reqs.size()), reqs.data(), &count, indices.data(), MPI_STATUSES_IGNORE),
                "MPI_Testsome");
      if (count > 0 && count != MPI_UNDEFINED) {
        for (int k = 0; k < count; ++k) finish_comm(inflight[static_cast<size_t>(indices[static_cast<size_t>(k)])]);
        size_t keep = 0;
        for (size_t i = 0; i < reqs.size(); ++i) {
          if (reqs[i] == MPI_REQUEST_NULL) continue;
          reqs[keep] = reqs[i];
          inflight[keep] = inflight[i];
          ++keep;
        }
        reqs.resize(keep);
        inflight.resize(keep);
        last_progress = Clock::now();
        continue;
      }
      std::unique_lock<std::mutex> lk(comm_mu_);
      const auto waited = std::chrono::duration_cast<Us>(Clock::now() - last_progress);
      comm_cv_.wait_for(lk, std::clamp(waited / 4, kPollMin, kPollMax),
                        [&] { return !comm_ready_.empty() || failed_.load(); });
    }
  } catch (...) {
    comm_error = std::current_exception();
    failed_ = true;
  }
  {
    std::lock_guard<std::mutex> lk(compute_mu_);
    compute_cv_.notify_all();
  }
  compute.join();
  if (comm_error) std::rethrow_exception(comm_error);
  if (compute_error_) std::rethrow_exception(compute_error_);
  SimTime last;
  auto keep = [&](const std::vector<TimelineSpan>& v) {
    for (const TimelineSpan& s : v) last = std::max(last, s.end);
  };
  keep(compute_spans_);
  keep(comm_spans_);
  const double local_s = last.seconds();
  if (record) {
    spans_.clear();
    spans_.insert(spans_.end(), compute_spans_.begin(), compute_spans_.end());
    spans_.insert(spans_.end(), comm_spans_.begin(), comm_spans_.end());
  }
  return local_s;
}

int run(const Scenario& s, const RankOptions& opt, int rank, int world, MeasuredRun* measured) {
  set_blas_threads(1);
  return detail::run_rank_steps(
      s, opt, rank, world, measured, "cpu",
      [&](const ProgramSet& ps, ProgressWriter& progress) {
        return std::make_unique<Executor>(s, ps, rank, opt, progress);
      },
      [] { return kernel_self_check(); }, [] { return std::string(); });
}

}  // namespace

int run_rank(const Scenario& s, const RankOptions& opt, MeasuredRun* measured) {
  return detail::run_mpi_rank([&](int rank, int world) { return run(s, opt, rank, world, measured); });
}

}  // namespace shardsim::realexec
