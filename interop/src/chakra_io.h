// The bytes of a Chakra file and the attributes of its messages: private to
// interop/. A rank's file is one GlobalMetadata then Nodes, each prefixed by
// its length as a varint32 (Chakra's protoio / protolib framing), the whole
// optionally gzip-compressed (detected by 0x1f 0x8b, as Chakra's readers do).
#pragma once

#include <google/protobuf/arena.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "et_def.pb.h"

namespace shardsim::chakra::detail {

/// The messages of a file: its metadata and nodes. Throws InputError(name,
/// "/message N", ...) for bytes that do not parse.
struct Messages {
  std::unique_ptr<google::protobuf::Arena> arena;  ///< holds them all: one allocation pool, freed at once
  const ChakraProtoMsg::GlobalMetadata* meta = nullptr;
  std::vector<const ChakraProtoMsg::Node*> nodes;
};
Messages decode(const std::string& bytes, const std::string& name);

/// Appends `m` to `out`, length-prefixed.
void append_delimited(const google::protobuf::MessageLite& m, std::string& out);

/// Where a node's problems are reported: "/node/ID" (its id, as written).
std::string node_path(uint64_t id);

/// An attribute of a node or of the metadata, by name (the first such).
const ChakraProtoMsg::AttributeProto* find_attr(
    const google::protobuf::RepeatedPtrField<ChakraProtoMsg::AttributeProto>& attrs, const std::string& name);

/// Typed readers: the attribute's value, nullopt when absent. An integer
/// attribute may be any of the integer types (writers differ: Chakra's
/// PyTorch converter writes comm_size as int64, others uint64 or int32);
/// a bool may also be an integer 0 or 1 (the symbolic tensor graph writes
/// is_cpu_op as int32). A present attribute of another type, or out of
/// range, is an InputError naming `file`, `where` and the attribute.
std::optional<int64_t> int_attr(const ChakraProtoMsg::AttributeProto* a, const std::string& file,
                                const std::string& where);
std::optional<double> number_attr(const ChakraProtoMsg::AttributeProto* a, const std::string& file,
                                  const std::string& where);
std::optional<bool> bool_attr(const ChakraProtoMsg::AttributeProto* a, const std::string& file,
                              const std::string& where);
std::optional<std::string> string_attr(const ChakraProtoMsg::AttributeProto* a, const std::string& file,
                                       const std::string& where);
std::optional<std::vector<int64_t>> int_list_attr(const ChakraProtoMsg::AttributeProto* a, const std::string& file,
                                                  const std::string& where);
std::optional<std::vector<std::string>> string_list_attr(const ChakraProtoMsg::AttributeProto* a,
                                                         const std::string& file, const std::string& where);

/// Attribute builders for the writer. The attributes ASTRA-sim's feeder
/// reads must have the type it reads them as (a value of another type reads
/// as its default there): tensor_size uint64, comm_src / comm_dst /
/// comm_tag int32, num_ops / comm_type / comm_size int64.
void add_attr_u64(google::protobuf::RepeatedPtrField<ChakraProtoMsg::AttributeProto>& attrs, const std::string& name,
                  uint64_t v);
void add_attr_i32(google::protobuf::RepeatedPtrField<ChakraProtoMsg::AttributeProto>& attrs, const std::string& name,
                  int32_t v);
void add_attr(google::protobuf::RepeatedPtrField<ChakraProtoMsg::AttributeProto>& attrs, const std::string& name,
              int64_t v);
void add_attr(google::protobuf::RepeatedPtrField<ChakraProtoMsg::AttributeProto>& attrs, const std::string& name,
              double v);
void add_attr(google::protobuf::RepeatedPtrField<ChakraProtoMsg::AttributeProto>& attrs, const std::string& name,
              bool v);
void add_attr(google::protobuf::RepeatedPtrField<ChakraProtoMsg::AttributeProto>& attrs, const std::string& name,
              const std::string& v);
void add_attr(google::protobuf::RepeatedPtrField<ChakraProtoMsg::AttributeProto>& attrs, const std::string& name,
              const std::vector<int64_t>& v);
void add_attr(google::protobuf::RepeatedPtrField<ChakraProtoMsg::AttributeProto>& attrs, const std::string& name,
              const std::vector<std::string>& v);

}  // namespace shardsim::chakra::detail
