// Reading one rank's Chakra trace as a program (rank_reader.h; the
// conventions are in docs/chakra.md).
//
// Nodes: COMP nodes become compute ops; COMM_COLL collectives on the group
// their pg_name names; COMM_SEND / COMM_RECV transfers to or from their
// peer, matched by comm_tag in order. METADATA and INVALID nodes run
// nothing: a node that depends on one depends on what it depended on.
// MEM_LOAD / MEM_STORE (ASTRA-sim's remote memory) are refused. A node
// depends on its data_deps and its ctrl_deps (ASTRA-sim's feeder honours
// both). Ops are ordered by Kahn's algorithm taking the smallest ready node
// id first, so a stream runs its nodes in id order wherever the
// dependencies allow; the k-th collective of a group on each member meets
// the others' k-th in that order (what NCCL does with the k-th call on a
// communicator).

#include "rank_reader.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <boost/graph/topological_sort.hpp>

#include <algorithm>
#include <array>
#include <functional>
#include <iterator>
#include <map>
#include <queue>
#include <span>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "chakra_checks.h"
#include "chakra_groups.h"
#include "chakra_io.h"
#include "shardsim/core/error.h"
#include "shardsim/interop/chakra.h"
#include "traced_tensors.h"

namespace shardsim::chakra {

namespace {

using ChakraProtoMsg::AttributeProto;
using ChakraProtoMsg::Node;
using detail::CommRecord;
using detail::find_attr;
using detail::GroupTable;
using detail::node_path;
using detail::RankBuild;

/// The schema versions whose numbering this reader knows: 0.0.4 (proto3,
/// October 2023) and 1.0.0 (the same schema, renumbered in May 2026).
/// Traces from before, in proto2, number node and collective types
/// differently and would parse with the wrong meaning.
bool known_schema(const std::string& s) {
  auto ends = [&](const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  return s == "0.0.4" || s == "1.0.0" || ends("chakra.0.0.4") || ends("chakra.1.0.0") || s == "symbolic_tensor_network";
}

template <typename E>
std::optional<E> enum_from(const std::string& s, int count) {
  for (int i = 0; i < count; ++i) {
    if (to_string(static_cast<E>(i)) == s) return static_cast<E>(i);
  }
  return std::nullopt;
}

/// The attributes this reader knows, each a slot of a node's index.
constexpr const char* kKnownAttrs[] = {"is_cpu_op",
                                       "stream",
                                       "num_ops",
                                       "tensor_size",
                                       "comm_type",
                                       "comm_size",
                                       "pg_name",
                                       "comm_src",
                                       "comm_dst",
                                       "comm_tag",
                                       "shardsim.name",
                                       "shardsim.stream",
                                       "shardsim.pass",
                                       "shardsim.dtype",
                                       "shardsim.layer",
                                       "shardsim.microbatch",
                                       "shardsim.model_flops",
                                       "shardsim.mem",
                                       "shardsim.mem_transient",
                                       "shardsim.holds_sms",
                                       "shardsim.sms",
                                       "shardsim.compute",
                                       "shardsim.flops",
                                       "shardsim.bytes_read",
                                       "shardsim.bytes_written",
                                       "shardsim.shape",
                                       "shardsim.kernel",
                                       "shardsim.split_accumulator",
                                       "shardsim.memory_efficiency",
                                       "shardsim.graphed",
                                       "shardsim.duration_ps",
                                       "shardsim.comm_bytes"};
constexpr size_t kKnownAttrCount = std::size(kKnownAttrs);

const std::unordered_map<std::string_view, size_t>& known_attr_slots() {
  static const std::unordered_map<std::string_view, size_t> slots = [] {
    std::unordered_map<std::string_view, size_t> m;
    for (size_t i = 0; i < kKnownAttrCount; ++i) m.emplace(kKnownAttrs[i], i);
    return m;
  }();
  return slots;
}

class RankReader {
 public:
  RankReader(std::string file, int64_t rank, int64_t ranks, const ReadOptions& opt, GroupTable& groups)
      : file_(std::move(file)), rank_(rank), ranks_(ranks), opt_(opt), groups_(groups) {}

  RankBuild read(const detail::Messages& m, std::string& producer) {
    read_meta(*m.meta, producer);
    nodes_ = m.nodes;
    index_nodes();
    order_nodes();
    build();
    return std::move(out_);
  }

 private:
  /// The node's attribute `name` (one of kKnownAttrs), from the index
  /// index_attrs(n) made: one pass over a node's attributes instead of one
  /// per name asked for.
  const AttributeProto* attr(const Node& n, const char* name) const {
    SHARDSIM_ASSERT(indexed_ == &n, "index_attrs before attr");
    return slot_[known_attr_slots().at(name)];
  }
  void index_attrs(const Node& n) {
    slot_.fill(nullptr);
    const auto& slots = known_attr_slots();
    for (const AttributeProto& a : n.attr()) {
      const auto it = slots.find(a.name());
      if (it != slots.end() && slot_[it->second] == nullptr) slot_[it->second] = &a;
    }
    indexed_ = &n;
  }
  std::string where(const Node& n) const { return node_path(n.id()); }

  void read_meta(const ChakraProtoMsg::GlobalMetadata& meta, std::string& producer) {
    std::string schema = meta.version();
    if (const auto s = detail::string_attr(find_attr(meta.attr(), "schema"), file_, "/metadata")) {
      schema = schema.empty() ? *s : schema;
      if (!known_schema(meta.version())) schema = *s;
    }
    if (!known_schema(schema)) {
      throw InputError(file_, "/metadata/version",
                       "expected a Chakra trace of schema 0.0.4 or 1.0.0 (GlobalMetadata version, or a schema "
                       "attribute such as \"1.1.1-chakra.1.0.0\"), got \"" +
                           schema + "\" (older traces number node types differently)");
    }
    if (producer.empty()) producer = schema;
    const auto& a = meta.attr();
    const std::string w = "/metadata";
    out_.file = file_;
    if (auto v = detail::string_attr(find_attr(a, "shardsim.model"), file_, w)) out_.meta.model = *v;
    if (auto v = detail::int_attr(find_attr(a, "shardsim.tokens_per_step"), file_, w)) out_.meta.tokens_per_step = *v;
    if (auto v = detail::bool_attr(find_attr(a, "shardsim.pipelined"), file_, w)) out_.meta.pipelined = *v;
    if (auto v = detail::string_list_attr(find_attr(a, "shardsim.streams"), file_, w)) {
      if (v->size() > 255) throw InputError(file_, w + "/shardsim.streams", "expected at most 255 streams");
      for (const std::string& s : *v) stream(s);
    }
    const auto names = detail::string_list_attr(find_attr(a, "shardsim.memory.resident_names"), file_, w);
    const auto bytes = detail::int_list_attr(find_attr(a, "shardsim.memory.resident_bytes"), file_, w);
    if (names.has_value() != bytes.has_value() || (names && names->size() != bytes->size())) {
      throw InputError(file_, w + "/shardsim.memory.resident_bytes", "expected one byte count per resident name");
    }
    if (names) {
      RankMemory& mem = out_.meta.memory;
      mem.present = true;
      for (size_t i = 0; i < names->size(); ++i) mem.resident.emplace_back((*names)[i], (*bytes)[i]);
      mem.walk_program = detail::bool_attr(find_attr(a, "shardsim.memory.walk_program"), file_, w).value_or(false);
      mem.finish = detail::bool_attr(find_attr(a, "shardsim.memory.finish"), file_, w).value_or(false);
      mem.allocator_overhead =
          detail::number_attr(find_attr(a, "shardsim.memory.allocator_overhead"), file_, w).value_or(0);
      mem.reserved_bytes = detail::int_attr(find_attr(a, "shardsim.memory.reserved_bytes"), file_, w).value_or(0);
    }
  }

  /// Each node's place in the file by id; its dependencies (data and
  /// control) as places; checks types, duplicates and missing nodes.
  void index_nodes() {
    if (nodes_.size() >= kNoOp) throw InputError(file_, "", "more than 2^32 - 1 nodes");
    place_.reserve(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node& n = *nodes_[i];
      if (!place_.try_emplace(n.id(), i).second) {
        throw InputError(file_, where(n), "a second node with this id (node ids are unique within a rank's file)");
      }
      switch (n.type()) {
        case ChakraProtoMsg::COMP_NODE:
        case ChakraProtoMsg::COMM_COLL_NODE:
        case ChakraProtoMsg::COMM_SEND_NODE:
        case ChakraProtoMsg::COMM_RECV_NODE:
        case ChakraProtoMsg::INVALID_NODE:
        case ChakraProtoMsg::METADATA_NODE:
          break;
        case ChakraProtoMsg::MEM_LOAD_NODE:
        case ChakraProtoMsg::MEM_STORE_NODE:
          throw InputError(file_, where(n) + "/type",
                           "MEM_LOAD / MEM_STORE (remote memory transfers in ASTRA-sim) are not modelled: expected "
                           "COMP, COMM_COLL, COMM_SEND, COMM_RECV, METADATA or INVALID nodes");
        case ChakraProtoMsg::STORAGE_NODE:
        case ChakraProtoMsg::BATCH_NODE:
        case ChakraProtoMsg::CHECKPOINT_NODE:
          throw InputError(file_, where(n) + "/type",
                           "storage, batch and checkpoint nodes (the schema's file-system and I/O extensions) are "
                           "not modelled: expected COMP, COMM_COLL, COMM_SEND, COMM_RECV, METADATA or INVALID nodes");
        default:
          throw InputError(file_, where(n) + "/type",
                           "unknown node type " + std::to_string(static_cast<int>(n.type())));
      }
    }
    deps_.resize(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const Node& n = *nodes_[i];
      for (const auto* list : {&n.data_deps(), &n.ctrl_deps()}) {
        for (uint64_t d : *list) {
          const auto it = place_.find(d);
          if (it == place_.end()) {
            throw InputError(file_, where(n) + "/deps",
                             "depends on node " + std::to_string(d) + ", which this file does not have");
          }
          deps_[i].push_back(it->second);
        }
      }
      std::sort(deps_[i].begin(), deps_[i].end());
      deps_[i].erase(std::unique(deps_[i].begin(), deps_[i].end()), deps_[i].end());
    }
  }

  /// Rejects a cycle (Boost.Graph: a topological sort throws not_a_dag; a
  /// depth-first search names a back edge), splices out nodes that run
  /// nothing and orders the rest (Kahn, smallest id first).
  void order_nodes() {
    using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
    Graph g(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      for (size_t d : deps_[i]) boost::add_edge(d, i, g);
    }
    std::vector<size_t> topo;
    topo.reserve(nodes_.size());
    try {
      boost::topological_sort(g, std::back_inserter(topo));
    } catch (const boost::not_a_dag&) {
      struct BackEdge {
        size_t from, to;
      };
      struct Finder : boost::default_dfs_visitor {
        void back_edge(Graph::edge_descriptor e, const Graph& gr) const {
          throw BackEdge{boost::source(e, gr), boost::target(e, gr)};
        }
      };
      try {
        boost::depth_first_search(g, boost::visitor(Finder()));
      } catch (const BackEdge& b) {
        throw InputError(file_, where(*nodes_[b.to]) + "/deps",
                         "a dependency cycle: node " + std::to_string(nodes_[b.to]->id()) + " depends on node " +
                             std::to_string(nodes_[b.from]->id()) + ", which depends on it");
      }
      throw InputError(file_, "", "a dependency cycle");
    }
    // topological_sort lists sinks first: walk it reversed. A node that
    // runs nothing passes on its own dependencies.
    auto runs = [&](size_t i) {
      return nodes_[i]->type() != ChakraProtoMsg::METADATA_NODE && nodes_[i]->type() != ChakraProtoMsg::INVALID_NODE;
    };
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      std::vector<size_t> eff;
      for (size_t d : deps_[*it]) {
        if (runs(d)) {
          eff.push_back(d);
        } else {
          eff.insert(eff.end(), deps_[d].begin(), deps_[d].end());
        }
      }
      std::sort(eff.begin(), eff.end());
      eff.erase(std::unique(eff.begin(), eff.end()), eff.end());
      deps_[*it] = std::move(eff);
    }
    // Kahn's algorithm over the nodes that run, smallest id first.
    std::vector<uint32_t> waiting(nodes_.size(), 0);
    std::vector<std::vector<size_t>> succs(nodes_.size());
    using Ready = std::pair<uint64_t, size_t>;  // id, place
    std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!runs(i)) continue;
      if (deps_[i].size() >= 65536) {
        throw InputError(file_, where(*nodes_[i]) + "/deps", "more than 65535 dependencies");
      }
      for (size_t d : deps_[i]) succs[d].push_back(i);
      waiting[i] = static_cast<uint32_t>(deps_[i].size());
      if (waiting[i] == 0) ready.emplace(nodes_[i]->id(), i);
    }
    op_of_.assign(nodes_.size(), kNoOp);
    while (!ready.empty()) {
      const size_t i = ready.top().second;
      ready.pop();
      op_of_[i] = static_cast<OpId>(order_.size());
      order_.push_back(i);
      for (size_t s : succs[i]) {
        if (--waiting[s] == 0) ready.emplace(nodes_[s]->id(), s);
      }
    }
  }

  StreamId stream(const std::string& name) {
    const auto [it, fresh] = streams_.try_emplace(name, 0);
    if (fresh) {
      if (streams_.size() > 255) throw InputError(file_, "", "more than 255 streams");
      it->second = b_.add_stream(name);
    }
    return it->second;
  }

  int64_t need_int(const Node& n, const char* name) const {
    const auto v = detail::int_attr(attr(n, name), file_, where(n));
    if (!v) throw InputError(file_, where(n) + "/" + name, "missing");
    return *v;
  }

  int64_t rank_attr(const Node& n, const char* name, std::optional<int64_t> fallback) const {
    const auto v = detail::int_attr(attr(n, name), file_, where(n));
    if (!v && !fallback) throw InputError(file_, where(n) + "/" + name, "missing");
    const int64_t r = v.value_or(fallback.value_or(0));
    if (r < 0 || r >= ranks_) {
      throw InputError(
          file_, where(n) + "/" + name,
          "expected a rank of the trace (0.." + std::to_string(ranks_ - 1) + "), got " + std::to_string(r));
    }
    return r;
  }

  /// The op of a node, from shardsim's description where it has one.
  Op make_op(const Node& n) {
    index_attrs(n);
    const std::string w = where(n);
    Op o;
    auto str = [&](const char* name) { return detail::string_attr(attr(n, name), file_, w); };
    auto num = [&](const char* name) { return detail::number_attr(attr(n, name), file_, w); };
    auto integer = [&](const char* name) { return detail::int_attr(attr(n, name), file_, w); };
    auto flag = [&](const char* name) { return detail::bool_attr(attr(n, name), file_, w); };
    const bool cpu = flag("is_cpu_op").value_or(false);
    const auto sstream = str("shardsim.stream");
    const auto torch_stream = integer("stream");
    const bool described = attr(n, "shardsim.compute") != nullptr;
    std::string default_stream = torch_stream ? "stream " + std::to_string(*torch_stream) : "";
    o.name = b_.intern(str("shardsim.name").value_or(n.name()));
    if (auto v = str("shardsim.pass")) {
      const auto p = enum_from<Pass>(*v, kPasses);
      if (!p) throw InputError(file_, w + "/shardsim.pass", "unknown pass \"" + *v + "\"");
      o.pass = *p;
    }
    if (auto v = str("shardsim.dtype")) {
      const auto d = enum_from<DType>(*v, kDTypes);
      if (!d) throw InputError(file_, w + "/shardsim.dtype", "unknown dtype \"" + *v + "\"");
      o.dtype = *d;
    }
    o.layer = static_cast<int32_t>(integer("shardsim.layer").value_or(-1));
    o.microbatch = static_cast<int32_t>(integer("shardsim.microbatch").value_or(-1));
    o.model_flops = Flops(num("shardsim.model_flops").value_or(0));
    o.mem_transient = Bytes(integer("shardsim.mem_transient").value_or(0));
    if (auto v = flag("shardsim.holds_sms")) o.holds_sms = *v;
    o.sms = static_cast<uint16_t>(std::clamp<int64_t>(integer("shardsim.sms").value_or(0), 0, 65535));
    switch (n.type()) {
      case ChakraProtoMsg::COMP_NODE: {
        o.kind = OpKind::kCompute;
        const uint64_t us = n.duration_micros();
        if (us > static_cast<uint64_t>(INT64_MAX / 1'000'000)) {
          throw InputError(file_, w + "/duration_micros", "longer than 106 days");
        }
        o.recorded = SimTime::from_ps(static_cast<int64_t>(us) * 1'000'000);
        if (described) {
          const auto k = enum_from<ComputeKind>(*str("shardsim.compute"), kComputeKinds);
          if (!k) throw InputError(file_, w + "/shardsim.compute", "unknown compute kind");
          o.compute = *k;
          // Bytes written are written out; tensor_size holds read + written.
          o.bytes_written = Bytes(integer("shardsim.bytes_written").value_or(0));
          o.bytes_read =
              Bytes(integer("shardsim.bytes_read")
                        .value_or(std::max<int64_t>(0, integer("tensor_size").value_or(0) - o.bytes_written.value())));
          o.flops = Flops(num("shardsim.flops").value_or(static_cast<double>(integer("num_ops").value_or(0))));
          if (auto shape = detail::int_list_attr(attr(n, "shardsim.shape"), file_, w)) {
            if (shape->size() != 4) throw InputError(file_, w + "/shardsim.shape", "expected [m, n, k, batch]");
            o.m = (*shape)[0], o.n = (*shape)[1], o.k = (*shape)[2], o.batch = (*shape)[3];
          }
          const int64_t kernel = integer("shardsim.kernel").value_or(0);
          if (kernel < 0 || kernel >= kAttentionKernels) throw InputError(file_, w + "/shardsim.kernel", "unknown");
          o.kernel = static_cast<AttentionKernel>(kernel);
          o.split_accumulator = flag("shardsim.split_accumulator").value_or(false);
          o.memory_efficiency = static_cast<float>(num("shardsim.memory_efficiency").value_or(1.0));
          o.graphed = flag("shardsim.graphed").value_or(false);
          if (auto ps = integer("shardsim.duration_ps")) o.recorded = SimTime::from_ps(std::max<int64_t>(0, *ps));
          o.timing = opt_.retime ? OpTiming::kModel : OpTiming::kAlone;
        } else {
          // A foreign node: its recorded time, or with retime (GPU nodes
          // with FLOPs or bytes) the roofline ASTRA-sim's roofline mode
          // applies: num_ops at the chip's matmul rate, tensor_size at
          // its memory rate.
          const int64_t flops = std::max<int64_t>(0, integer("num_ops").value_or(0));
          const int64_t bytes = std::max<int64_t>(0, integer("tensor_size").value_or(0));
          o.compute = flops > 0 ? ComputeKind::kMatmul : ComputeKind::kElementwise;
          o.flops = Flops(static_cast<double>(flops));
          o.bytes_read = Bytes(bytes);
          o.timing = opt_.retime && !cpu && (flops > 0 || bytes > 0) ? OpTiming::kModel : OpTiming::kMeasured;
        }
        o.stream = stream(sstream.value_or(cpu ? "host" : default_stream.empty() ? "compute" : default_stream));
        break;
      }
      case ChakraProtoMsg::COMM_COLL_NODE: {
        o.kind = OpKind::kCollective;
        const int64_t type = need_int(n, "comm_type");
        const int64_t size = need_int(n, "comm_size");
        if (size < 0) throw InputError(file_, w + "/comm_size", "expected bytes >= 0");
        o.group = groups_.use(str("pg_name").value_or(""), rank_, file_, w);
        const auto members = static_cast<int64_t>(groups_.list()[static_cast<size_t>(o.group)].size());
        o.comm_bytes = Bytes(size);
        switch (type) {
          case ChakraProtoMsg::ALL_REDUCE:
            o.collective = CollectiveKind::kAllReduce;
            break;
          case ChakraProtoMsg::ALL_GATHER:
            // ASTRA-sim's all-gather size is each rank's part; nccl-tests'
            // (shardsim's) the gathered buffer, the group's parts.
            o.collective = CollectiveKind::kAllGather;
            if (size > INT64_MAX / std::max<int64_t>(members, 1))
              throw InputError(file_, w + "/comm_size", "too large");
            o.comm_bytes = Bytes(size * members);
            break;
          case ChakraProtoMsg::BROADCAST:
            o.collective = CollectiveKind::kBroadcast;
            break;
          case ChakraProtoMsg::ALL_TO_ALL:
            o.collective = CollectiveKind::kAllToAll;
            break;
          case ChakraProtoMsg::REDUCE_SCATTER:
          case ChakraProtoMsg::REDUCE_SCATTER_BLOCK:
            o.collective = CollectiveKind::kReduceScatter;
            break;
          case ChakraProtoMsg::BARRIER:
            // PyTorch's NCCL barrier is an all-reduce of one element
            // (ProcessGroupNCCL::barrier): 4 bytes when none are recorded.
            o.collective = CollectiveKind::kAllReduce;
            if (size == 0) o.comm_bytes = Bytes(4);
            break;
          default:
            throw InputError(file_, w + "/comm_type",
                             "collective type " + std::to_string(type) +
                                 " is not modelled: expected ALL_REDUCE (0), ALL_GATHER (2), BROADCAST (5), "
                                 "ALL_TO_ALL (6), REDUCE_SCATTER (7, 8) or BARRIER (9)");
        }
        if (auto exact = integer("shardsim.comm_bytes")) o.comm_bytes = Bytes(*exact);
        o.stream = stream(sstream.value_or(default_stream.empty() ? "comm" : default_stream));
        break;
      }
      case ChakraProtoMsg::COMM_SEND_NODE:
      case ChakraProtoMsg::COMM_RECV_NODE: {
        const bool send = n.type() == ChakraProtoMsg::COMM_SEND_NODE;
        o.kind = send ? OpKind::kSend : OpKind::kRecv;
        const int64_t src = rank_attr(n, "comm_src", send ? std::optional<int64_t>(rank_) : std::nullopt);
        const int64_t dst = rank_attr(n, "comm_dst", send ? std::nullopt : std::optional<int64_t>(rank_));
        if ((send ? src : dst) != rank_) {
          throw InputError(file_, w + (send ? "/comm_src" : "/comm_dst"),
                           std::string("a ") + (send ? "send" : "receive") + " of rank " + std::to_string(rank_) +
                               " names rank " + std::to_string(send ? src : dst));
        }
        const int64_t peer = send ? dst : src;
        if (peer == rank_) throw InputError(file_, w, "a transfer to itself");
        const int64_t tag = integer("comm_tag").value_or(0);
        if (tag < 0 || tag > 65535) throw InputError(file_, w + "/comm_tag", "expected 0..65535");
        const int64_t size = need_int(n, "comm_size");
        if (size < 0) throw InputError(file_, w + "/comm_size", "expected bytes >= 0");
        o.peer_device = static_cast<int32_t>(peer);
        o.tag = static_cast<uint16_t>(tag);
        o.comm_bytes = Bytes(size);
        // Receives wait on their own stream (ASTRA-sim does not count them
        // against a rank's one communication at a time).
        o.stream = stream(sstream.value_or(send ? (default_stream.empty() ? "comm" : default_stream) : "recv"));
        break;
      }
      default:
        break;
    }
    return o;
  }

  /// A storage's life in program order: from the first op naming one of
  /// its tensors to the last, `bytes` its largest extent.
  struct TensorLife {
    OpId first = 0, last = 0;
    int64_t bytes = 0;
  };

  /// Notes the device tensors node `n` names (its inputs' and outputs'
  /// values, a converted PyTorch trace's) as used by op `id`.
  void note_tensors(const Node& n, OpId id) {
    if (n.inputs().values().empty() && n.outputs().values().empty()) return;
    tensors_.clear();
    detail::traced_tensors(n.inputs().values(), tensors_);
    detail::traced_tensors(n.outputs().values(), tensors_);
    for (const detail::TracedTensor& t : tensors_) {
      if (t.host) continue;
      // A tensor's bytes up to 64 GiB (more than any accelerator holds in
      // one tensor), so that sums over a trace cannot overflow.
      constexpr int64_t kCap = int64_t{1} << 36;
      const int64_t extent = std::min(kCap, t.offset) + std::min(kCap, t.numel);  // elements
      const int64_t bytes = std::min(kCap, extent * std::min<int64_t>(t.itemsize, 64));
      const int64_t key = t.storage_id > 0 ? t.storage_id : -t.tensor_id - 1;
      const auto [it, fresh] = lives_.try_emplace(key, TensorLife{id, id, bytes});
      if (!fresh) {
        it->second.last = id;
        it->second.bytes = std::max(it->second.bytes, bytes);
      }
    }
  }

  /// A foreign trace's memory: each storage allocated when the first op
  /// naming it starts and freed when the last ends (ProgramBuilder::memory,
  /// walked by workloads/memory.h in program order).
  void tensor_memory_events() {
    // A file with shardsim's own memory (its model, its events) keeps it.
    if (lives_.empty() || out_.meta.memory.present || shardsim_mem_) return;
    std::vector<std::tuple<OpId, int64_t, int64_t>> ev;  // op, alloc, free
    ev.reserve(2 * lives_.size());
    for (const auto& [key, life] : lives_) {
      ev.emplace_back(life.first, life.bytes, 0);
      ev.emplace_back(life.last, 0, life.bytes);
    }
    std::sort(ev.begin(), ev.end());
    for (size_t i = 0; i < ev.size();) {
      const OpId op = std::get<0>(ev[i]);
      int64_t alloc = 0, free = 0;
      for (; i < ev.size() && std::get<0>(ev[i]) == op; ++i) {
        alloc += std::get<1>(ev[i]);
        free += std::get<2>(ev[i]);
      }
      b_.memory(op, MemKind::kActivation, Bytes(alloc), Bytes(free));
    }
    out_.meta.traced_tensors = true;
  }

  void build() {
    std::vector<OpId> deps;
    for (size_t i : order_) {
      const Node& n = *nodes_[i];
      const Op o = make_op(n);
      deps.clear();
      for (size_t d : deps_[i]) deps.push_back(op_of_[d]);
      const OpId id = b_.add(o, deps);
      note_tensors(n, id);
      out_.node_of.push_back(n.id());
      const auto size = o.comm_bytes.value();
      if (o.kind == OpKind::kCollective) {
        out_.colls.push_back({id, n.id(), static_cast<int64_t>(o.collective), 0, size, static_cast<size_t>(o.group)});
      } else if (o.kind == OpKind::kSend) {
        out_.sends.push_back({id, n.id(), o.peer_device, o.tag, size, 0});
      } else if (o.kind == OpKind::kRecv) {
        out_.recvs.push_back({id, n.id(), o.peer_device, o.tag, size, 0});
      }
      if (auto mem = detail::int_list_attr(attr(n, "shardsim.mem"), file_, where(n))) {
        if (mem->size() % 3 != 0)
          throw InputError(file_, where(n) + "/shardsim.mem", "expected (kind, alloc, free) triples");
        shardsim_mem_ = true;
        for (size_t k = 0; k < mem->size(); k += 3) {
          if ((*mem)[k] < 0 || (*mem)[k] >= kMemKinds)
            throw InputError(file_, where(n) + "/shardsim.mem", "unknown kind");
          b_.memory(id, static_cast<MemKind>((*mem)[k]), Bytes((*mem)[k + 1]), Bytes((*mem)[k + 2]));
        }
      }
    }
    tensor_memory_events();
    if (streams_.empty()) stream("compute");
    out_.program = std::move(b_).finish();
  }

  std::string file_;
  int64_t rank_, ranks_;
  const ReadOptions& opt_;
  GroupTable& groups_;
  std::span<const Node* const> nodes_;
  std::array<const AttributeProto*, kKnownAttrCount> slot_{};
  const Node* indexed_ = nullptr;
  std::unordered_map<uint64_t, size_t> place_;
  std::vector<std::vector<size_t>> deps_;
  std::vector<size_t> order_;
  std::vector<OpId> op_of_;
  std::map<std::string, StreamId> streams_;
  ProgramBuilder b_;
  RankBuild out_;
  std::vector<detail::TracedTensor> tensors_;
  std::unordered_map<int64_t, TensorLife> lives_;
  bool shardsim_mem_ = false;  ///< a node carried shardsim.mem events
};

}  // namespace

detail::RankBuild detail::read_rank(const Messages& m, const std::string& file, int64_t rank, int64_t ranks,
                                    const ReadOptions& opt, GroupTable& groups, std::string& producer) {
  return RankReader(file, rank, ranks, opt, groups).read(m, producer);
}

}  // namespace shardsim::chakra
