// The Program: one device's step as a DAG of compute ops, collectives and
// point-to-point transfers, each on a stream of that device.
//
// Devices that run the same code (SPMD) share one Program body; collectives name
// their device group by mesh axes (not by device ids), so one body serves every
// device of a data- or tensor-parallel mesh. Ops on one stream run in program
// order: ProgramBuilder adds that order as an explicit dependency, so the engine
// needs no separate stream queues.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "shardsim/core/units.h"

namespace shardsim {

enum class OpKind : uint8_t { kCompute, kCollective, kSend, kRecv };
/// kHostCopy: a copy between device memory and the host's over the chip's
/// host link (offloaded activations: bytes_read leave HBM, bytes_written
/// arrive); it holds no compute units and runs beside compute.
enum class ComputeKind : uint8_t {
  kMatmul,
  kAttention,
  kElementwise,
  kNorm,
  kSoftmax,
  kEmbedding,
  kLoss,
  kOptimizer,
  kHostCopy
};
inline constexpr int kComputeKinds = 9;
enum class CollectiveKind : uint8_t { kAllGather, kReduceScatter, kAllReduce, kAllToAll, kBroadcast };
/// Element types. kFp4 is E2M1 (OCP MX / NVFP4 element), half a byte: code
/// that sizes buffers of it uses dtype_bits (block scales are the recipe's,
/// not the element type's).
enum class DType : uint8_t { kBf16, kFp16, kFp32, kFp8, kInt8, kFp4 };
inline constexpr int kDTypes = 6;
/// The fused attention kernel an attention op runs (each chip preset gives
/// the measured rate of the ones it knows): kDefault uses the chip's
/// attention_efficiency.
enum class AttentionKernel : uint8_t { kDefault, kFlash2, kFlash3, kCudnn, kSplash };
inline constexpr int kAttentionKernels = 5;
/// kRecompute marks forward ops re-run during the backward pass.
enum class Pass : uint8_t { kForward, kBackward, kOptimizer, kRecompute };
inline constexpr int kPasses = 4;

/// Mesh axes, in the fixed bit order used by Op::axes. kEp is the
/// expert-parallel part of data parallelism: dp = ep · (dp / ep), and the dp
/// axis then holds the outer dp / ep replicas.
/// kDs is the sharding part of hybrid FSDP: dp = ds · (dp / ds) with
/// parameters sharded over ds and replicated over the outer dp axis.
enum class MeshAxis : uint8_t { kTp = 0, kCp = 1, kPp = 2, kDp = 3, kEp = 4, kDs = 5 };
/// Axes a user orders in plan.mesh_order (ep and ds sit just inside dp).
inline constexpr int kNumMeshAxes = 4;
/// Axes of the mesh, ep and ds included.
inline constexpr int kNumMeshAxesWithEp = 6;
constexpr uint8_t axis_bit(MeshAxis a) {
  return static_cast<uint8_t>(1u << static_cast<unsigned>(a));
}

/// Bits of one element.
int dtype_bits(DType d);
/// Bytes of one element of a byte-sized type (every type but kFp4, which
/// asserts: size fp4 data with dtype_bits).
int dtype_bytes(DType d);
std::string_view to_string(OpKind k);
std::string_view to_string(ComputeKind k);
std::string_view to_string(CollectiveKind k);
std::string_view to_string(DType d);
std::string_view to_string(Pass p);
std::string_view to_string(MeshAxis a);

using OpId = uint32_t;
/// "No op": a dependency slot that ProgramBuilder::add ignores.
inline constexpr OpId kNoOp = 0xffffffffu;
using StreamId = uint8_t;

/// How long a compute op takes: what the compute model says (from its
/// FLOPs, bytes and shape), or a duration recorded for it (Op::recorded):
/// measured (kept as it is, beside communication too: the measurement holds
/// whatever overlap it had) or its time alone (shardsim's own export:
/// beside communication it slows as the model slows the op).
enum class OpTiming : uint8_t { kModel, kMeasured, kAlone };

/// One op. Shapes (m, n, k, batch) are what produced flops and bytes, so a real
/// backend can run the op: a matmul is batch x [m,k]·[k,n]; attention is
/// batch sequences of m query tokens, n key tokens, k = heads·head_dim.
struct Op {
  OpKind kind = OpKind::kCompute;
  ComputeKind compute = ComputeKind::kElementwise;
  CollectiveKind collective = CollectiveKind::kAllReduce;
  DType dtype = DType::kBf16;
  Pass pass = Pass::kForward;
  StreamId stream = 0;
  uint8_t axes = 0;         ///< collective group: bitmask of MeshAxis
  uint32_t name = 0;        ///< index into Program::names()
  int32_t layer = -1;       ///< transformer layer, -1 for none
  int32_t microbatch = -1;  ///< microbatch, -1 for none
  Flops flops{0.0};         ///< FLOPs executed
  Flops model_flops{0.0};   ///< the part of `flops` that is model work (no recompute, no replicas)
  Bytes bytes_read{0};      ///< HBM bytes read
  Bytes bytes_written{0};   ///< HBM bytes written
  Bytes comm_bytes{0};      ///< collective: buffer size as nccl-tests' "size"
  int64_t m = 0, n = 0, k = 0, batch = 1;
  /// send / recv: the peer's coordinate on `peer_axis` relative to this
  /// device's (+1 next, -1 previous, wrapping around). A transfer is matched
  /// by order on its (sender, receiver, forward-or-not) channel.
  int8_t peer = 0;
  MeshAxis peer_axis = MeshAxis::kPp;
  /// Launched as part of a captured CUDA graph: no per-op launch overhead.
  bool graphed = false;
  /// Attention ops: the kernel that runs them.
  AttentionKernel kernel = AttentionKernel::kDefault;
  /// fp8 matmuls: partial sums promoted to fp32 as the GEMM goes (no fast
  /// accumulation: ChipSpec::fp8_split_accumulator_efficiency).
  bool split_accumulator = false;
  /// The fraction of the chip's streaming bandwidth the software stack's
  /// kernel reaches on the op's memory traffic (a named, fitted parameter
  /// of a stack: Plan::memory_kernel_efficiency).
  float memory_efficiency = 1.0f;
  /// A communication op whose kernels hold SMs while it runs (NCCL: one
  /// thread block per channel), slowing compute beside it; false for
  /// transfers by copy engines (Transformer Engine's ring exchange).
  bool holds_sms = true;
  /// The SMs it holds when holds_sms: 0 for the chip's comm_compute_units
  /// (NCCL's channels), fewer for kernels that use a few SMs on purpose
  /// (Transformer Engine's userbuffers reduce-scatter).
  uint16_t sms = 0;
  /// Device memory the op holds only while it runs (its working set); what
  /// outlives an op is a MemoryEvent of its program.
  Bytes mem_transient{0};

  // Per-rank programs (ProgramSet::per_rank(): an imported trace, or a
  // step written out rank by rank) name their peers and groups outright.
  /// Collectives: the group, an index into ProgramSet::groups (-1: the
  /// group of `axes` on the mesh).
  int32_t group = -1;
  /// Send / recv: the peer device (-1: `peer` steps along `peer_axis`).
  int32_t peer_device = -1;
  /// Send / recv with peer_device: the channel (a trace's comm_tag): the
  /// k-th send on (sender, receiver, tag) meets the k-th receive on it.
  uint16_t tag = 0;
  /// Compute: a recorded duration (a trace's) the op takes instead of its
  /// compute model time, where `timing` says so.
  SimTime recorded{};
  OpTiming timing = OpTiming::kModel;
};

/// What a memory event holds.
enum class MemKind : uint8_t {
  kActivation,   ///< a layer's tensors kept from its forward to its backward
  kRecomputed,   ///< tensors a recomputation holds during a layer's backward
  kHead,         ///< the embedding's and the head's kept tensors (logits)
  kParams,       ///< gathered (unsharded) parameters
  kGradBuffers,  ///< gradients on their way to a reduce-scatter (FSDP2's reduce-scatter input)
};
inline constexpr int kMemKinds = 5;
std::string_view to_string(MemKind k);

/// Device memory that outlives an op: `alloc` bytes of `kind` taken when op
/// starts, `free` bytes released when it ends (workloads/memory.h walks
/// them in program order).
struct MemoryEvent {
  OpId op = 0;
  MemKind kind = MemKind::kActivation;
  int64_t alloc = 0;
  int64_t free = 0;
};

/// An immutable per-device program. Dependencies and successors are stored as
/// compressed rows. Invariant: every dependency of op i has an id < i (ops are
/// in a topological order).
class Program {
 public:
  size_t size() const { return ops_.size(); }
  const Op& op(OpId id) const { return ops_[id]; }
  const std::vector<Op>& ops() const { return ops_; }
  std::span<const OpId> deps(OpId id) const {
    return {deps_.data() + dep_begin_[id], deps_.data() + dep_begin_[id + 1]};
  }
  std::span<const OpId> succs(OpId id) const {
    return {succs_.data() + succ_begin_[id], succs_.data() + succ_begin_[id + 1]};
  }
  std::string_view name(const Op& op) const { return names_[op.name]; }
  /// Memory events, ordered by op.
  const std::vector<MemoryEvent>& memory_events() const { return memory_; }
  const std::vector<std::string>& stream_names() const { return stream_names_; }
  size_t num_streams() const { return stream_names_.size(); }

  /// Human-readable op label: "L3 qkv fwd mb1".
  std::string label(OpId id) const;

 private:
  friend class ProgramBuilder;
  std::vector<Op> ops_;
  std::vector<uint32_t> dep_begin_{0};
  std::vector<OpId> deps_;
  std::vector<uint32_t> succ_begin_;
  std::vector<OpId> succs_;
  std::vector<std::string> names_;
  std::vector<std::string> stream_names_;
  std::vector<MemoryEvent> memory_;
};

/// The programs of one step: one per pipeline stage; every device of a stage
/// runs its stage's program (SPMD). Or per rank (an imported trace, a step
/// written out rank by rank): device d runs stages[program_of[d]], its
/// collectives name groups of `groups` and its transfers their peers.
struct ProgramSet {
  std::vector<Program> stages;
  /// Per rank: the program each device runs (empty: its pipeline stage's).
  std::vector<uint32_t> program_of;
  /// Per rank: the communicator groups collectives name (Op::group), each
  /// its member devices in ring order.
  std::vector<std::vector<uint32_t>> groups;
  /// Per rank: a device's idle time is pipeline bubble (a trace of a
  /// pipelined step), not waiting.
  bool pipelined = false;
  bool per_rank() const { return !program_of.empty(); }
};

/// Which collective ops of per-rank programs meet: the k-th collective (in
/// op order) on group g of each member's program is the group's k-th
/// instance. A program with collectives is run by one device.
struct CollectiveInstances {
  std::vector<std::vector<int64_t>> of;  ///< [program][op]: its instance, -1 for other ops
  std::vector<int32_t> group;            ///< per instance: its group
  std::vector<size_t> first;             ///< per instance: where its members' ops start in `ops` (one past: size)
  std::vector<OpId> ops;                 ///< per instance, per member (in group order): the member's op
};
/// Throws std::logic_error where members disagree (a count, a kind or a
/// size); importers check traces for that first, with the trace's words.
CollectiveInstances match_collectives(const ProgramSet& ps);

/// Builds a Program. add() makes each op depend on the previous op of its
/// stream, so streams run their ops in order.

class ProgramBuilder {
 public:
  /// Declares a stream and returns its id. Stream 0 should be "compute".
  StreamId add_stream(std::string name);
  uint32_t intern(std::string_view name);
  /// Appends an op that depends on `deps` (ids of earlier ops; kNoOp entries
  /// are skipped) and on the previous op of its stream. Returns its id.
  OpId add(Op op, std::initializer_list<OpId> deps = {});
  OpId add(Op op, std::span<const OpId> deps);
  /// An op already added, to annotate it (its working set); its stream and
  /// dependencies are fixed.
  Op& op(OpId id) { return p_.ops_[id]; }
  /// Records memory that op `id` takes when it starts (`alloc`) and releases
  /// when it ends (`free`).
  void memory(OpId id, MemKind kind, Bytes alloc, Bytes free);
  /// The last op added on a stream, if any.
  bool has_last(StreamId s) const { return s < last_on_stream_.size() && last_on_stream_[s] != kNone; }
  OpId last(StreamId s) const { return last_on_stream_[s]; }
  /// The next op added on stream `s` also depends on `dep` (kNoOp: none);
  /// the ops after it follow it in stream order.
  void gate_next(StreamId s, OpId dep) { gate_[s] = dep; }
  /// Ops added so far.
  size_t size() const { return p_.ops_.size(); }
  /// Room for `ops` ops in all, and for their dependencies at the rate of
  /// the ops added so far plus one in eight, so that the arrays are not copied as they grow
  /// (a 405B pipeline stage holds 10^5 ops: growing by doubling copied
  /// and first-touched them twice; docs/performance.md). A hint only.
  void reserve(size_t ops);
  Program finish() &&;

 private:
  static constexpr OpId kNone = kNoOp;
  Program p_;
  std::vector<OpId> last_on_stream_;
  std::vector<OpId> gate_;                                ///< by stream: gate_next's dependency, kNone when none
  std::unordered_map<std::string, uint32_t> name_index_;  ///< intern's: name -> index
};

}  // namespace shardsim
