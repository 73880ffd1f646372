// One pipeline stage's training Program: the forward and backward of its
// chunks, gradient reduction and the optimizer (see stage_lowering.h).
#include "stage_lowering.h"

#include <algorithm>

#include "loss_memory.h"

namespace shardsim::detail {
namespace {
int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
}  // namespace

// ---- forward of one chunk for one microbatch ----------------------------------------
void StageLowering::forward(int32_t local) {
  const std::vector<int64_t> us = units(local);
  OpId cur = first_chunk(local) ? kNone : received(Pass::kForward);
  // FSDP: unit i+1's gather is issued when unit i-1 ends, so it runs during
  // unit i (prefetch); without prefetch, when unit i ends.
  std::vector<OpId>& gathered = fwd_gather_[static_cast<size_t>(local)][static_cast<size_t>(mb_)];
  gathered.assign(us.size(), kNone);
  // Without per-microbatch sync a unit is gathered by its first forward and
  // stays gathered for the step.
  const bool once = !p_.fsdp_sync_each_microbatch;
  if (once && mb_ > 0) gathered = fwd_gather_[static_cast<size_t>(local)][0];
  // FSDP2's root (fsdp_keep_root) is one unit: the head is gathered with
  // the embedding when the step starts.
  const bool root_here = root_in(us);
  auto issue = [&](size_t i, OpId after) {
    if (i >= us.size() || (once && mb_ > 0) || (root_here && i == us.size() - 1 && gathered[i] != kNone)) return;
    gathered[i] = gather(us[i], Pass::kForward, after);
  };
  issue(0, kNone);
  if (root_here) issue(us.size() - 1, kNone);
  if (p_.fsdp_prefetch) issue(1, kNone);
  for (size_t i = 0; i < us.size(); ++i) {
    const int64_t u = us[i];
    // ZeRO-1/2 with overlapped parameter gathers: the first forward of a
    // unit waits for the all-gather of its bucket (issued at the step's start).
    OpId weights = once && mb_ > 0 ? gathered[i] : copied_out(u, gathered[i], Pass::kForward);
    if (mb_ == 0 && !param_gather_.empty()) weights = param_gather_[unit_index(local, i)];
    if (u == kEmbedUnit) {
      cur = embedding_forward(weights);
    } else if (u == kHeadUnit) {
      cur = head_forward(cur, weights);
    } else {
      cur = layer_forward(unit_layer(u), cur, weights);
      offload(unit_layer(u), cur);
    }
    // Resharded after the forward, or kept for the backward.
    if (gathered[i] != kNone && resharded_after_forward(u)) {
      b_.memory(cur, MemKind::kParams, Bytes(0), Bytes(gathered_bytes(u)));
    }
    issue(p_.fsdp_prefetch ? i + 2 : i + 1, cur);
  }
  fwd_end_[static_cast<size_t>(local)][static_cast<size_t>(mb_)] = cur;
  if (!last_chunk(local)) {
    if (keeps_stage_outputs()) b_.memory(cur, MemKind::kActivation, Bytes(stage_output_bytes()), Bytes(0));
    send(Pass::kForward, cur);
  }
}

OpId StageLowering::gather(int64_t unit, Pass pass, OpId after) {
  if (!fsdp_) return kNone;
  OpId last = kNone;
  // One all-gather per unit, or per fsdp_bucket_params slice of it
  // (DeepSpeed ZeRO-3 gathers in prefetch buckets).
  const int64_t bucket = p_.fsdp_bucket_params > 0 ? p_.fsdp_bucket_params : unit_params(unit);
  for (int64_t done = 0; done < unit_params(unit); done += bucket) {
    const int64_t n = std::min(bucket, unit_params(unit) - done);
    last = collective(CollectiveKind::kAllGather, fsdp_axes_, kGather, "fsdp all-gather", unit_layer(unit), pass,
                      n * param_gather_bytes(), param_gather_dtype(), {done == 0 ? after : kNone});
  }
  if (unit_expert_params(unit) > 0 && expert_shards_ > 1) {
    last = collective(CollectiveKind::kAllGather, expert_axes_, kGather, "fsdp expert all-gather", unit_layer(unit),
                      pass, unit_expert_params(unit) * param_gather_bytes(), param_gather_dtype(), {after});
  }
  // The unit's gathered parameters live until its forward (or backward)
  // ends (reshard after forward).
  if (last != kNone) b_.memory(last, MemKind::kParams, Bytes(gathered_bytes(unit)), Bytes(0));
  return last;
}

OpId StageLowering::copied_out(int64_t unit, OpId gathered, Pass pass) {
  if (!p_.fsdp_copy_out || gathered == kNone) return gathered;
  const int64_t bytes = gathered_bytes(unit);
  const OpId x = memop(ComputeKind::kElementwise, "fsdp copy-out", unit_layer(unit), pass, bytes / param_gather_bytes(),
                       bytes, bytes, 0, {gathered});
  b_.op(x).mem_transient = Bytes(bytes);
  return x;
}

OpId StageLowering::embedding_forward(OpId weights) {
  OpId x = kNoOp;
  if (p_.embedding_matmul) {
    // MaxText's use_iota_embed (layers/embeddings.py): dot(one_hot(ids),
    // table). XLA makes the one-hot inside the matmul's fusion, so the
    // kernel reads the ids and the table; no model FLOPs (a lookup).
    x = matmul("embedding one-hot", -1, Pass::kForward, T_, h_, v_, {weights}, 0.0, 1, Operands::kWeights,
               Precision::kHigh);
    b_.op(x).bytes_read = Bytes(v_ * h_ * kAct + T_ * 4);
  } else {
    Op o = base("embedding", -1, Pass::kForward, kC);
    o.compute = ComputeKind::kEmbedding;
    o.m = T_;
    o.n = h_;
    o.k = 1;
    o.bytes_read = Bytes(T_ * h_ * kAct + T_ * 4);
    o.bytes_written = Bytes(T_ * h_ * kAct);
    x = b_.add(o, {weights});
  }
  if (m_.position == PositionKind::kLearned) {
    x = memop(ComputeKind::kElementwise, "position add", -1, Pass::kForward, T_ * h_, 2 * T_ * h_ * kAct,
              T_ * h_ * kAct, 1, {x});
  }
  // Vocabulary-parallel lookup: partial rows are summed over tp.
  return row_parallel_out("embedding all-reduce", -1, Pass::kForward, x);
}

// The head's memory follows the stack's loss kernel (loss_memory.h): the
// logits the GEMM writes, what the loss keeps for the backward and what is
// live while each runs. With vocabulary tiling only one chunk of the logits
// exists at a time and nothing is kept: the backward recomputes each chunk.
OpId StageLowering::head_forward(OpId cur, OpId weights) {
  OpId x = b_.add(norm_op("final norm", -1, Pass::kForward, head_eager()), {cur, weights});
  b_.memory(x, MemKind::kHead, Bytes(2 * Ts_ * h_ * kAct), Bytes(0));  // the norm's input and output, kept
  x = column_parallel_in("head all-gather", -1, Pass::kForward, x);
  x = matmul("unembedding", -1, Pass::kForward, T_, v_, h_, {x}, vocab_model_, 1, Operands::kWeights, Precision::kHigh);
  const LossBytes lb = loss_bytes(p_.loss_kernel);
  const int64_t L = T_ * v_;
  const int64_t tiles = std::min<int64_t>(p_.vocab_tiling, T_);
  b_.op(x).mem_transient = Bytes(T_ * h_ * kAct);  // its input; the logits are charged below
  if (tiles == 1) b_.memory(x, MemKind::kHead, Bytes(L * lb.logits), Bytes(0));
  x = memop(ComputeKind::kLoss, "cross-entropy", -1, Pass::kForward, L, L * (loss_eager() ? 14 : kAct),
            loss_eager() ? L * 8 : T_ * 4, 4, {x});
  if (tiles == 1) {
    b_.op(x).mem_transient = Bytes(L * lb.forward_extra);
    b_.memory(x, MemKind::kHead, Bytes(L * lb.saved), Bytes(lb.logits_kept ? 0 : L * lb.logits));
  } else {
    b_.op(x).mem_transient = Bytes(ceil_div(L, tiles) * (lb.logits + lb.saved + lb.forward_extra));
  }
  // Vocabulary-parallel softmax: max and sum over tp (fp32).
  if (t_ > 1) x = tp_coll(CollectiveKind::kAllReduce, "loss all-reduce", -1, Pass::kForward, T_ * 8, x);
  return x;
}

// ---- backward of one chunk for one microbatch ----------------------------------------
void StageLowering::backward(int32_t local, bool last_microbatch) {
  record_buckets_ = last_microbatch;  // the parameter all-gathers follow the last buckets
  const std::vector<int64_t> us = units(local);
  OpId cur =
      last_chunk(local) ? fwd_end_[static_cast<size_t>(local)][static_cast<size_t>(mb_)] : received(Pass::kBackward);
  // Without resharding after the forward, the backward uses the forward's
  // gathered parameters.
  std::vector<OpId> gathered(us.size(), kNone);
  const bool once = !p_.fsdp_sync_each_microbatch;
  // A unit resharded after its forward is gathered again (but the
  // embedding, whose backward needs no weights); the others use the
  // forward's gathered parameters.
  auto regathered = [&](int64_t u) { return resharded_after_forward(u) && u != kEmbedUnit; };
  const std::vector<OpId>& forward_gathered =
      fwd_gather_[static_cast<size_t>(local)][static_cast<size_t>(once ? 0 : mb_)];
  for (size_t i = 0; i < us.size(); ++i) {
    if (!resharded_after_forward(us[i])) gathered[i] = forward_gathered[i];
  }
  // FSDP2's root (fsdp_keep_root): the head's parameters stay gathered and
  // its gradients are reduced once the whole root, embedding included, has
  // run its backward.
  const bool root_here = root_in(us);
  // A tied table has two uses on this stage: its gradient is whole once the
  // embedding's backward has added its part, so the head's reduction waits
  // for that (Megatron's DDP hook and FSDP fire once per parameter; XLA
  // reduces the summed gradient).
  const bool tied_here =
      !root_here && m_.tied_embeddings && us.size() > 1 && us.front() == kEmbedUnit && us.back() == kHeadUnit;
  // Backward runs the units in reverse; the embedding's backward (a
  // scatter-add) needs no weights.
  auto issue = [&](size_t back_index, OpId after) {
    if (back_index >= us.size()) return;
    const size_t i = us.size() - 1 - back_index;
    if (regathered(us[i])) gathered[i] = gather(us[i], Pass::kBackward, after);
  };
  issue(0, kNone);
  if (p_.fsdp_prefetch) issue(1, kNone);
  OpId unit_start = cur;  // where the unit before this one in the backward could start
  for (size_t k = 0; k < us.size(); ++k) {
    const size_t i = us.size() - 1 - k;
    const int64_t u = us[i];
    const OpId issue_reload = unit_start;
    unit_start = cur;
    OpId wgrad = kNone;
    // Gathered again for the backward (resharded after the forward): copied
    // out again.
    const OpId weights = regathered(u) ? copied_out(u, gathered[i], Pass::kBackward) : gathered[i];
    if (u == kHeadUnit) {
      cur = head_backward(cur, weights, wgrad);
    } else if (u == kEmbedUnit) {
      cur = embedding_backward(cur);
      wgrad = cur;
    } else {
      reload(unit_layer(u), issue_reload);
      cur = layer_backward(unit_layer(u), cur, weights, wgrad);
    }
    if (!(root_here && u == kHeadUnit)) {  // the head is freed and reduced with the embedding, below
      if (gathered[i] != kNone && (!once || last_microbatch)) {
        b_.memory(cur, MemKind::kParams, Bytes(0), Bytes(gathered_bytes(u)));
      }
      if (!(tied_here && u == kHeadUnit)) reduce_unit(u, wgrad, last_microbatch);
    }
    if (tied_here && u == kEmbedUnit) reduce_unit(kHeadUnit, cur, last_microbatch);
    if (root_here && u == kEmbedUnit) {
      if (gathered.back() != kNone && (!once || last_microbatch)) {
        b_.memory(cur, MemKind::kParams, Bytes(0), Bytes(gathered_bytes(kHeadUnit)));
      }
      reduce_unit(kHeadUnit, cur, last_microbatch);
    }
    issue(p_.fsdp_prefetch ? k + 2 : k + 1, cur);
  }
  flush_bucket();
  // The root's post-backward callback waits for the last reduce-scatter and
  // drops its input (released with that reduce-scatter, lowered after it).
  if (rs_held_bytes_ > 0) {
    b_.memory(b_.last(kReduce), MemKind::kGradBuffers, Bytes(0), Bytes(rs_held_bytes_));
    rs_held_bytes_ = 0;
    rs_held_unit_ = -1;
  }
  if (!last_chunk(local) && keeps_stage_outputs()) {
    b_.memory(cur, MemKind::kActivation, Bytes(0), Bytes(stage_output_bytes()));
  }
  if (!first_chunk(local)) send(Pass::kBackward, cur);
}

OpId StageLowering::head_backward(OpId cur, OpId weights, OpId& wgrad) {
  const LossBytes lb = loss_bytes(p_.loss_kernel);
  const int64_t L = T_ * v_;
  const int64_t tiles = std::min<int64_t>(p_.vocab_tiling, T_);
  if (tiles > 1) {
    // Each chunk's logits again, for its loss gradient.
    cur = matmul("unembedding recompute", -1, Pass::kBackward, T_, v_, h_, {cur, weights}, vocab_model_, 1,
                 Operands::kWeights, Precision::kHigh);
    b_.op(cur).mem_transient = Bytes(T_ * h_ * kAct + ceil_div(L, tiles) * lb.logits);
  }
  Op lg = base("cross-entropy", -1, Pass::kBackward, kC);
  lg.compute = ComputeKind::kLoss;
  lg.m = L;
  lg.n = lg.k = 1;
  lg.flops = Flops(4.0 * static_cast<double>(L));
  lg.bytes_read = Bytes(loss_eager() ? L * 12 : L * kAct);
  lg.bytes_written = Bytes(loss_eager() ? L * 10 : L * kAct);
  const int64_t kept = L * lb.kept();
  lg.mem_transient = Bytes(tiles > 1 ? ceil_div(L, tiles) * (lb.kept() + lb.backward_extra + lb.reserved_extra)
                                     : L * (lb.backward_extra + lb.reserved_extra));
  OpId x = b_.add(lg, {cur, weights});
  if (tiles == 1) b_.memory(x, MemKind::kHead, Bytes(0), Bytes(kept));
  const OpId dg = matmul("unembedding dgrad", -1, Pass::kBackward, T_, h_, v_, {x}, vocab_model_, 1, Operands::kWeights,
                         Precision::kHigh);
  wgrad = matmul("unembedding wgrad", -1, Pass::kBackward, h_, v_, T_, {x}, vocab_model_, 1, Operands::kWeightGrad,
                 Precision::kHigh);
  if (tiles > 1) {
    // Chunk by chunk: one chunk's logit gradients beside the hidden states.
    for (const OpId g : {dg, wgrad}) b_.op(g).mem_transient = Bytes(T_ * h_ * kAct + ceil_div(L, tiles) * kAct);
    // Each chunk's table gradient is added into an accumulator (the one
    // wgrad above writes the table's gradient once). MaxText: the backward
    // scan's carry, zeros_like(gathered_params) in the parameters' dtype
    // (fp32; all_gather_over_fsdp gathers them uncast), tree_map(acc +
    // update) a chunk (AI-Hypercomputer/maxtext@50bafeb98
    // src/MaxText/maxtext_utils.py:1677, 1773-1780): the accumulator read
    // and written each chunk, the chunk's update assumed fused into the add.
    // PyTorch (torchtitan's ChunkedLossWrapper): autograd's AccumulateGrad
    // adds each later chunk's bf16 gradient into the unsharded one: the
    // chunk's GEMM writes it, the add reads both and writes one.
    const int64_t table = v_ * h_;
    const bool scan = p_.framework == Framework::kMaxtext;
    const int64_t g = scan ? dtype_bytes(p_.master_weights_dtype) : kAct;
    const int64_t adds = scan ? tiles : tiles - 1, moved = adds * table * (scan ? g : 2 * g);  // each way
    wgrad = memop(ComputeKind::kElementwise, "vocab tile grad accumulate", -1, Pass::kBackward, adds * table, moved,
                  moved, 1, {wgrad});
    // Held beside it: MaxText's fp32 accumulator; PyTorch's chunk gradient.
    b_.op(wgrad).mem_transient = Bytes(table * g);
  }
  x = column_parallel_grad("head grad all-reduce", -1, dg, wgrad);
  x = b_.add(norm_op("final norm", -1, Pass::kBackward, head_eager()), {x, wgrad});
  b_.memory(x, MemKind::kHead, Bytes(0), Bytes(2 * Ts_ * h_ * kAct));
  return x;
}

OpId StageLowering::embedding_backward(OpId cur) {
  OpId x = row_parallel_grad("embedding grad all-gather", -1, cur);
  if (p_.embedding_matmul) {
    // The table's gradient as dot(one_hot(ids)^T, dY): reads dY and the ids.
    x = matmul("embedding one-hot wgrad", -1, Pass::kBackward, v_, h_, T_, {x}, 0.0, 1, Operands::kWeightGrad,
               Precision::kHigh);
    b_.op(x).bytes_read = Bytes(T_ * h_ * kAct + T_ * 4);
    return x;
  }
  return memop(ComputeKind::kEmbedding, "embedding grad", -1, Pass::kBackward, T_ * h_, T_ * h_ * kAct + T_ * 4,
               T_ * h_ * 4, 1, {x});
}

// ---- gradient reduction and optimizer ------------------------------------------------
/// FSDP reduce-scatters each unit's gradients every microbatch. Otherwise
/// gradients fill buckets in backward order: all-reduced (zero 0) or
/// reduce-scattered (zero 1, 2). Zero 0 and 1 accumulate full gradients
/// locally and reduce in the last microbatch only; zero 2 keeps only its
/// gradient shard, so it reduce-scatters every microbatch (DeepSpeed).
void StageLowering::reduce_unit(int64_t u, OpId wgrad, bool last_microbatch) {
  // Without gradient-accumulation fusion the weight-gradient matmuls wrote
  // fresh gradients (bf16/fp16, as every matmul output) that one more pass adds into the
  // accumulated buffer (grad_reduce_dtype): read both, write the buffer.
  // Memory-bound, on the compute stream, every microbatch (Megatron-LM's
  // local DDP hook `main_grad.add_(grad)`, megatron/model/distributed.py of
  // 2021). ZeRO-2 and FSDP reduce every microbatch and accumulate nothing.
  if (!p_.grad_accumulation_fusion && !fsdp_ && p_.zero < 2) {
    const int64_t n = unit_params(u) + unit_expert_params(u);
    const int64_t g = dtype_bytes(p_.grad_reduce_dtype);
    if (n > 0) {
      wgrad = memop(ComputeKind::kElementwise, "grad accumulate", unit_layer(u), Pass::kBackward, n, n * (kAct + g),
                    n * g, 1, {wgrad});
    }
  }
  reduce_group(dense_, unit_params(u), fsdp_ ? fsdp_axes_ : kDpAxis, fsdp_ ? fsdp_shards_ : shards_, u, wgrad,
               last_microbatch);
  // Hybrid FSDP: after the last microbatch, the replicas all-reduce their
  // gradient shards (PyTorch HSDP).
  if (fsdp_ && replicas_ > 1 && last_microbatch && unit_params(u) > 0) {
    collective(CollectiveKind::kAllReduce, kReplicaAxis, kReduce, "hsdp grad all-reduce", unit_layer(u),
               Pass::kBackward, unit_params(u) / fsdp_shards_ * dtype_bytes(p_.grad_reduce_dtype), p_.grad_reduce_dtype,
               {b_.last(kReduce)});
  }
  reduce_group(expert_, unit_expert_params(u), expert_axes_, expert_shards_, u, wgrad, last_microbatch);
}
void StageLowering::reduce_group(Bucket& b, int64_t params, uint8_t axes, int64_t replicas, int64_t u, OpId wgrad,
                                 bool last_microbatch) {
  if (replicas == 1 || params == 0) return;
  const int64_t grad_bytes = params * dtype_bytes(p_.grad_reduce_dtype);
  if (fsdp_) {
    // Without per-microbatch sync, each microbatch's bf16 gradients are
    // added into the unit's unsharded accumulator (FSDP2's post-backward:
    // an upcast for the first microbatch, an add for each later one; both
    // charged as the add, which reads the accumulator too).
    const bool accumulated = !p_.fsdp_sync_each_microbatch && p_.microbatches() > 1;
    const int64_t acc = accumulated_grad_bytes(p_);
    if (accumulated) {
      wgrad = memop(ComputeKind::kElementwise, "fsdp grad accumulate", unit_layer(u), Pass::kBackward, params,
                    params * (kAct + acc), params * acc, 1, {wgrad});
    }
    if (accumulated && !last_microbatch) return;
    // FSDP2's chunk_cat packs the unit's gradients (bf16, or the
    // accumulator) into the reduce-scatter input, cast to grad_reduce_dtype
    // (fsdp_copy_out). It runs on FSDP2's reduce-scatter stream, beside the
    // next unit's backward; the engine runs one kernel at a time per device,
    // so it is charged on the compute stream.
    if (p_.fsdp_copy_out) {
      wgrad = memop(ComputeKind::kElementwise, "fsdp grad copy-in", unit_layer(u), Pass::kBackward, params,
                    params * (accumulated ? acc : kAct), grad_bytes, 0, {wgrad});
      // What FSDP2 holds on the gradient side (_fsdp_collectives.py
      // foreach_reduce, _fsdp_param_group.py post_backward): the unit's
      // unsharded bf16 gradients until they are copied in (then cleared;
      // an accumulator is resident instead), and the reduce-scatter input,
      // kept in reduce_scatter_state until the next unit's post-backward
      // frees it.
      b_.op(wgrad).mem_transient = Bytes(accumulated ? 0 : params * kAct);
      int64_t release = 0;
      if (rs_held_unit_ != u) {
        release = rs_held_bytes_;
        rs_held_bytes_ = 0;
        rs_held_unit_ = u;
      }
      rs_held_bytes_ += grad_bytes;
      b_.memory(wgrad, MemKind::kGradBuffers, Bytes(grad_bytes), Bytes(release));
    }
    // One reduce-scatter per unit; with fsdp_bucket_params set, in
    // grad_bucket_bytes pieces (DeepSpeed's reduce buckets).
    const int64_t piece = p_.fsdp_bucket_params > 0 ? p_.grad_bucket_bytes : grad_bytes;
    for (int64_t done = 0; done < grad_bytes; done += piece) {
      collective(CollectiveKind::kReduceScatter, axes, kReduce, "fsdp reduce-scatter", unit_layer(u), Pass::kBackward,
                 std::min(piece, grad_bytes - done), p_.grad_reduce_dtype, {wgrad});
    }
    return;
  }
  if (!last_microbatch && p_.zero != 2) return;
  b.bytes += grad_bytes;
  b.params += params;
  b.dep = wgrad;
  if (b.bytes >= p_.grad_bucket_bytes) flush(b, axes);
}
void StageLowering::flush(Bucket& b, uint8_t axes) {
  if (b.bytes == 0) return;
  const bool sharded = p_.zero >= 1;
  if (!p_.overlap_grad_reduce && p_.zero < 2) {
    // Reduced after the backward (Megatron-Core without overlap_grad_reduce,
    // Megatron-LM 2021's local DDP): emitted when the optimizer is.
    deferred_.push_back({b.bytes, axes});
  } else {
    collective(sharded ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, axes, kReduce,
               sharded ? "grad reduce-scatter" : "grad all-reduce", -1, Pass::kBackward, b.bytes, p_.grad_reduce_dtype,
               {b.dep});
  }
  if (record_buckets_) b.flushed.push_back(b.params);
  b.bytes = 0;
  b.params = 0;
}
void StageLowering::flush_bucket() {
  flush(dense_, kDpAxis);
  flush(expert_, expert_axes_);
}

/// A memory-bound op (declared, and described, in stage_lowering.h).
OpId StageLowering::memop(ComputeKind kind, std::string_view name, int32_t layer, Pass pass, int64_t elems,
                          int64_t read_b, int64_t write_b, double flops_per_elem, const std::vector<OpId>& deps) {
  Op o = base(name, layer, pass, kC);
  o.compute = kind;
  o.m = elems;
  o.n = 1;
  o.k = 1;
  o.flops = Flops(flops_per_elem * static_cast<double>(elems));
  o.bytes_read = Bytes(read_b);
  o.bytes_written = Bytes(write_b);
  o.mem_transient = Bytes(std::min(read_b + write_b, kEagerLiveBytes * elems));
  return b_.add(o, deps);
}

/// A ring step or an exchange along a mesh axis (declared, and described, in
/// stage_lowering.h).
OpId StageLowering::ring_exchange(std::string_view send_name, std::string_view recv_name, int32_t layer, Pass pass,
                                  MeshAxis axis, StreamId send_stream, StreamId recv_stream, int64_t bytes,
                                  const std::vector<OpId>& deps, bool holds_sms, int8_t send_peer, int8_t recv_peer) {
  auto transfer = [&](std::string_view name, OpKind kind, StreamId stream, int8_t peer) {
    Op o = base(name, layer, pass, stream);
    o.kind = kind;
    o.peer = peer;
    o.peer_axis = axis;
    o.comm_bytes = Bytes(bytes);
    o.holds_sms = holds_sms;
    return o;
  };
  b_.add(transfer(send_name, OpKind::kSend, send_stream, send_peer), deps);
  return b_.add(transfer(recv_name, OpKind::kRecv, recv_stream, recv_peer));
}

/// Adam with master weights, first and second moments (fp32 by default):
/// per parameter it reads the gradient and the three states and writes the
/// states and the bf16 weight. ZeRO-1/2 then all-gather the updated bf16 weights
/// in the gradient buckets.
void StageLowering::optimizer() {
  int64_t dense = 0, experts = 0;
  for (int32_t c = 0; c < v_chunks_; ++c) {
    for (int64_t u : units(c)) {
      dense += unit_params(u);
      experts += unit_expert_params(u);
    }
  }
  // Gradients reduced after the backward: every bucket now, in order.
  for (const auto& [bytes, axes] : deferred_) {
    collective(p_.zero >= 1 ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, axes, kReduce,
               p_.zero >= 1 ? "grad reduce-scatter" : "grad all-reduce", -1, Pass::kBackward, bytes,
               p_.grad_reduce_dtype, {b_.last(kC)});
  }
  // Experts replicated over tp (expert_tp 1) shard their states over those
  // replicas even where dp·cp is 1 (Megatron-Core's expert data-parallel
  // group): a dense shard of one is the whole.
  const bool sharded = p_.zero >= 1 && (shards_ > 1 || expert_shards_ > 1);
  auto shard = [&](int64_t x, int64_t n) { return sharded ? (x + n - 1) / n : x; };
  const int64_t params = shard(dense, fsdp_ ? fsdp_shards_ : shards_) + shard(experts, expert_shards_);
  // Tied embeddings over pp > 1: the first stage's table and the last
  // stage's output layer are one weight, their gradients summed between
  // the two after the data-parallel reduction and before the step
  // (Megatron-Core's finalize_model_grads, _allreduce_word_embedding_grads;
  // an all-reduce of two: each side sends its whole gradient).
  OpId tied = kNone;
  if (tied_copy_ > 0 && (stage_ == 0 || stage_ == p_.pp - 1)) {
    const int8_t toward = stage_ == 0 ? -1 : 1;  // the other end, round the pp ring
    tied = ring_exchange("embedding grad send", "embedding grad recv", -1, Pass::kOptimizer, MeshAxis::kPp,
                         p2p_stream(TrainStreams::kSendPrev), p2p_stream(TrainStreams::kRecv),
                         tied_copy_ * dtype_bytes(p_.grad_reduce_dtype),
                         {b_.has_last(kReduce) ? b_.last(kReduce) : kNone, b_.last(kC)}, /*holds_sms=*/true, toward,
                         toward);
  }
  Op o = base("adam", -1, Pass::kOptimizer, kC);
  o.compute = ComputeKind::kOptimizer;
  o.dtype = DType::kFp32;
  o.m = params;
  o.n = o.k = 1;
  // Master weight and the two moments, at their configured precision; the
  // bf16 parameter is written back. Where the optimizer keeps a remainder or
  // no master copy (Plan::master_copy), the parameter's shard is the rest of
  // the master weight: read too.
  const int64_t state = master_copy_bytes(p_) + 2 * dtype_bytes(p_.optimizer_state_dtype);
  const int64_t param_read = p_.master_copy == Plan::MasterCopy::kFull ? 0 : 2;
  o.flops = Flops(12.0 * static_cast<double>(params));
  o.bytes_read = Bytes(params * (dtype_bytes(p_.grad_reduce_dtype) + state + param_read));
  o.bytes_written = Bytes(params * (state + 2));
  const OpId adam = b_.add(o, {b_.has_last(kReduce) ? b_.last(kReduce) : kNone, tied});
  if (!sharded || fsdp_ || p_.overlap_param_gather) return;
  for (const auto& [bucket, axes] : {std::pair{&dense_, kDpAxis}, std::pair{&expert_, expert_axes_}}) {
    if (bucket == &dense_ && shards_ == 1) continue;  // nothing to gather back
    for (int64_t params_in_bucket : bucket->flushed) {
      collective(CollectiveKind::kAllGather, axes, kGather, "param all-gather", -1, Pass::kOptimizer,
                 params_in_bucket * param_gather_bytes(), param_gather_dtype(), {adam});
    }
  }
}

/// ZeRO-1/2 with overlap_param_gather (Megatron-Core): the updated
/// parameters of the previous step are all-gathered bucket by bucket while
/// this step's forward runs, each layer waiting only for its own bucket. In
/// a steady-state step the gathers therefore start the step, in forward
/// order, on the gather stream; buckets hold grad_bucket_bytes of
/// gradients, as the reduce-scatters do.
void StageLowering::gather_params_at_start() {
  if (!(p_.zero >= 1 && p_.zero < 3 && (shards_ > 1 || expert_shards_ > 1) && p_.overlap_param_gather)) return;
  int64_t bucket_params = 0, bucket_experts = 0;
  std::vector<size_t> waiting;  // unit indices whose bucket is not issued yet
  auto issue = [&] {
    if (bucket_params + bucket_experts == 0) return;
    OpId op = kNone;
    if (bucket_params > 0 && shards_ > 1) {
      op = collective(CollectiveKind::kAllGather, kDpAxis, kGather, "param all-gather", -1, Pass::kForward,
                      bucket_params * param_gather_bytes(), param_gather_dtype(), {});
    }
    if (bucket_experts > 0 && expert_shards_ > 1) {
      op = collective(CollectiveKind::kAllGather, expert_axes_, kGather, "param all-gather", -1, Pass::kForward,
                      bucket_experts * param_gather_bytes(), param_gather_dtype(), {});
    }
    for (size_t u : waiting) param_gather_[u] = op;
    waiting.clear();
    bucket_params = bucket_experts = 0;
  };
  const int64_t grad = dtype_bytes(p_.grad_reduce_dtype);
  for (int32_t c = 0; c < v_chunks_; ++c) {
    const std::vector<int64_t> us = units(c);
    for (size_t i = 0; i < us.size(); ++i) {
      bucket_params += unit_params(us[i]);
      bucket_experts += unit_expert_params(us[i]);
      waiting.push_back(unit_index(c, i));
      param_gather_.resize(std::max(param_gather_.size(), unit_index(c, i) + 1), kNone);
      if ((bucket_params + bucket_experts) * grad >= p_.grad_bucket_bytes) issue();
    }
    issue();  // buckets do not span model chunks (one buffer per chunk)
  }
}

}  // namespace shardsim::detail
