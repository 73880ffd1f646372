// Writing a rank's program as a Chakra execution trace (chakra.h).
//
// What ASTRA-sim reads (astra-sim workload/Workload.cc at 518bd51, Chakra's
// feeder et_feeder_node.cpp) is written with the types it reads: COMP nodes
// carry duration_micros (replay) and num_ops / tensor_size (its roofline
// mode); COMM_COLL nodes comm_type, comm_size and pg_name; sends and
// receives comm_src, comm_dst, comm_tag and comm_size; every node
// is_cpu_op = false. comm_size follows ASTRA-sim's collectives
// (system/astraccl/native_collectives/collective_algorithm/Ring.cc): an
// all-gather's is what each rank contributes (the gathered buffer is size ·
// ranks), every other collective's the whole buffer (all-reduce's, a
// reduce-scatter's input, an all-to-all's) — shardsim's comm_bytes is
// nccl-tests' "size", the gathered buffer of an all-gather. Everything
// shardsim needs to rebuild an op exactly goes into shardsim.* attributes,
// which other readers ignore.
#include <cmath>

#include "chakra_io.h"
#include "shardsim/core/error.h"
#include "shardsim/interop/chakra.h"

namespace shardsim::chakra {

namespace {

using ChakraProtoMsg::Node;
using detail::add_attr;

ChakraProtoMsg::CollectiveCommType comm_type(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllGather:
      return ChakraProtoMsg::ALL_GATHER;
    case CollectiveKind::kReduceScatter:
      return ChakraProtoMsg::REDUCE_SCATTER;
    case CollectiveKind::kAllReduce:
      return ChakraProtoMsg::ALL_REDUCE;
    case CollectiveKind::kAllToAll:
      return ChakraProtoMsg::ALL_TO_ALL;
    case CollectiveKind::kBroadcast:
      return ChakraProtoMsg::BROADCAST;
  }
  return ChakraProtoMsg::ALL_REDUCE;
}

ChakraProtoMsg::NodeType node_type(OpKind k) {
  switch (k) {
    case OpKind::kCompute:
      return ChakraProtoMsg::COMP_NODE;
    case OpKind::kCollective:
      return ChakraProtoMsg::COMM_COLL_NODE;
    case OpKind::kSend:
      return ChakraProtoMsg::COMM_SEND_NODE;
    case OpKind::kRecv:
      return ChakraProtoMsg::COMM_RECV_NODE;
  }
  return ChakraProtoMsg::INVALID_NODE;
}

void write_meta(const RankFile& f, ChakraProtoMsg::GlobalMetadata& m) {
  m.set_version("1.0.0");
  auto& a = *m.mutable_attr();
  add_attr(a, "shardsim.rank", f.rank);
  add_attr(a, "shardsim.streams", f.program->stream_names());
  if (!f.meta.model.empty()) add_attr(a, "shardsim.model", f.meta.model);
  add_attr(a, "shardsim.tokens_per_step", f.meta.tokens_per_step);
  add_attr(a, "shardsim.pipelined", f.meta.pipelined);
  const RankMemory& mem = f.meta.memory;
  if (!mem.present) return;
  std::vector<std::string> names;
  std::vector<int64_t> bytes;
  for (const auto& [name, b] : mem.resident) {
    names.push_back(name);
    bytes.push_back(b);
  }
  add_attr(a, "shardsim.memory.resident_names", names);
  add_attr(a, "shardsim.memory.resident_bytes", bytes);
  add_attr(a, "shardsim.memory.walk_program", mem.walk_program);
  add_attr(a, "shardsim.memory.finish", mem.finish);
  add_attr(a, "shardsim.memory.allocator_overhead", mem.allocator_overhead);
  add_attr(a, "shardsim.memory.reserved_bytes", mem.reserved_bytes);
}

}  // namespace

std::string rank_file_name(const std::string& prefix, int64_t rank) {
  return prefix + "." + std::to_string(rank) + ".et";
}

std::string comm_groups_json(const std::vector<std::vector<uint32_t>>& groups) {
  std::string out = "{";
  for (size_t g = 0; g < groups.size(); ++g) {
    out += (g > 0 ? ",\n  \"" : "\n  \"") + std::to_string(g + 1) + "\": [";
    for (size_t i = 0; i < groups[g].size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(groups[g][i]);
    out += "]";
  }
  return out + "\n}\n";
}

std::string encode_rank(const RankFile& f, const std::vector<std::vector<uint32_t>>& groups) {
  const Program& p = *f.program;
  SHARDSIM_ASSERT(f.alone.size() == p.size(), "a time alone per op");
  std::string out;
  ChakraProtoMsg::GlobalMetadata meta;
  write_meta(f, meta);
  detail::append_delimited(meta, out);
  // Memory events by op (they are sorted by op).
  const auto& events = p.memory_events();
  size_t next_event = 0;
  Node node;
  for (OpId i = 0; i < p.size(); ++i) {
    const Op& o = p.op(i);
    node.Clear();
    node.set_id(i);
    node.set_name(p.label(i));
    node.set_type(node_type(o.kind));
    for (OpId d : p.deps(i)) node.add_data_deps(d);
    auto& a = *node.mutable_attr();
    add_attr(a, "is_cpu_op", false);
    add_attr(a, "shardsim.name", std::string(p.name(o)));
    add_attr(a, "shardsim.stream", p.stream_names()[o.stream]);
    // shardsim's own attributes are left out at their defaults (an Op's).
    if (o.pass != Pass::kForward) add_attr(a, "shardsim.pass", std::string(to_string(o.pass)));
    if (o.layer >= 0) add_attr(a, "shardsim.layer", static_cast<int64_t>(o.layer));
    if (o.microbatch >= 0) add_attr(a, "shardsim.microbatch", static_cast<int64_t>(o.microbatch));
    if (o.dtype != DType::kBf16) add_attr(a, "shardsim.dtype", std::string(to_string(o.dtype)));
    if (o.model_flops.value() != 0) add_attr(a, "shardsim.model_flops", o.model_flops.value());
    std::vector<int64_t> mem;
    for (; next_event < events.size() && events[next_event].op == i; ++next_event) {
      const MemoryEvent& e = events[next_event];
      mem.insert(mem.end(), {static_cast<int64_t>(e.kind), e.alloc, e.free});
    }
    if (!mem.empty()) add_attr(a, "shardsim.mem", mem);
    if (o.mem_transient.value() != 0) add_attr(a, "shardsim.mem_transient", o.mem_transient.value());
    switch (o.kind) {
      case OpKind::kCompute: {
        const int64_t ps = f.alone[i].ps();
        node.set_duration_micros(static_cast<uint64_t>((ps + 999'999) / 1'000'000));
        add_attr(a, "num_ops", static_cast<int64_t>(std::llround(o.flops.value())));
        detail::add_attr_u64(a, "tensor_size", static_cast<uint64_t>(o.bytes_read.value() + o.bytes_written.value()));
        add_attr(a, "shardsim.duration_ps", ps);
        add_attr(a, "shardsim.compute", std::string(to_string(o.compute)));
        // FLOPs beyond num_ops' integer, and bytes read as tensor_size less
        // those written.
        if (static_cast<double>(std::llround(o.flops.value())) != o.flops.value()) {
          add_attr(a, "shardsim.flops", o.flops.value());
        }
        if (o.bytes_written.value() != 0) add_attr(a, "shardsim.bytes_written", o.bytes_written.value());
        if (o.m != 0 || o.n != 0 || o.k != 0 || o.batch != 1) {
          add_attr(a, "shardsim.shape", std::vector<int64_t>{o.m, o.n, o.k, o.batch});
        }
        if (o.kernel != AttentionKernel::kDefault) {
          add_attr(a, "shardsim.kernel", static_cast<int64_t>(o.kernel));
        }
        if (o.split_accumulator) add_attr(a, "shardsim.split_accumulator", true);
        if (o.memory_efficiency != 1.0f) add_attr(a, "shardsim.memory_efficiency", double{o.memory_efficiency});
        if (o.graphed) add_attr(a, "shardsim.graphed", true);
        break;
      }
      case OpKind::kCollective: {
        SHARDSIM_ASSERT(o.group >= 0 && static_cast<size_t>(o.group) < groups.size(), "a per-rank program's group");
        const auto n = static_cast<int64_t>(groups[static_cast<size_t>(o.group)].size());
        const int64_t bytes = o.comm_bytes.value();
        add_attr(a, "comm_type", static_cast<int64_t>(comm_type(o.collective)));
        add_attr(a, "comm_size", o.collective == CollectiveKind::kAllGather ? bytes / n : bytes);
        add_attr(a, "pg_name", std::to_string(o.group + 1));
        add_attr(a, "shardsim.comm_bytes", bytes);
        break;
      }
      case OpKind::kSend:
      case OpKind::kRecv: {
        SHARDSIM_ASSERT(o.peer_device >= 0, "a per-rank program's peer");
        const bool send = o.kind == OpKind::kSend;
        detail::add_attr_i32(a, "comm_src", static_cast<int32_t>(send ? f.rank : o.peer_device));
        detail::add_attr_i32(a, "comm_dst", static_cast<int32_t>(send ? o.peer_device : f.rank));
        detail::add_attr_i32(a, "comm_tag", static_cast<int32_t>(o.tag));
        add_attr(a, "comm_size", o.comm_bytes.value());
        break;
      }
    }
    if (o.kind != OpKind::kCompute) {
      add_attr(a, "shardsim.holds_sms", o.holds_sms);
      if (o.sms != 0) add_attr(a, "shardsim.sms", static_cast<int64_t>(o.sms));
    }
    detail::append_delimited(node, out);
  }
  return out;
}

}  // namespace shardsim::chakra
