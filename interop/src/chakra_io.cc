#include "chakra_io.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <limits>
#include <memory>

#include "shardsim/core/error.h"

namespace shardsim::chakra::detail {

namespace pb = google::protobuf;
using ChakraProtoMsg::AttributeProto;

Messages decode(const std::string& bytes, const std::string& name) {
  Messages out;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw InputError(name, "", "larger than 2 GiB: split the trace or compress it");
  }
  pb::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  std::unique_ptr<pb::io::GzipInputStream> gz;
  pb::io::ZeroCopyInputStream* in = &raw;
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
      static_cast<unsigned char>(bytes[1]) == 0x8b) {
    gz = std::make_unique<pb::io::GzipInputStream>(&raw, pb::io::GzipInputStream::GZIP);
    in = gz.get();
  }
  out.arena = std::make_unique<pb::Arena>();
  auto* meta = pb::Arena::CreateMessage<ChakraProtoMsg::GlobalMetadata>(out.arena.get());
  out.meta = meta;
  bool clean_eof = false;
  if (!pb::util::ParseDelimitedFromZeroCopyStream(meta, in, &clean_eof)) {
    throw InputError(name, "/message 0",
                     clean_eof ? "empty: expected a Chakra execution trace (a GlobalMetadata, then nodes)"
                               : "not a length-prefixed GlobalMetadata: expected a Chakra execution trace");
  }
  for (size_t i = 1;; ++i) {
    auto* node = pb::Arena::CreateMessage<ChakraProtoMsg::Node>(out.arena.get());
    if (!pb::util::ParseDelimitedFromZeroCopyStream(node, in, &clean_eof)) {
      if (clean_eof) break;
      throw InputError(
          name, "/message " + std::to_string(i),
          "not a length-prefixed Node: the file is truncated or not a Chakra trace" +
              (gz && gz->ZlibErrorMessage() != nullptr ? std::string(" (gzip: ") + gz->ZlibErrorMessage() + ")"
                                                       : std::string()));
    }
    out.nodes.push_back(node);
  }
  return out;
}

void append_delimited(const pb::MessageLite& m, std::string& out) {
  // The length as a varint32, then the message, appended in place (a
  // StringOutputStream would zero the string's spare capacity each time).
  const size_t size = m.ByteSizeLong();
  SHARDSIM_ASSERT(size <= std::numeric_limits<uint32_t>::max(), "a message under 4 GiB");
  uint8_t prefix[10];
  const uint8_t* end = pb::io::CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(size), prefix);
  out.append(reinterpret_cast<const char*>(prefix), static_cast<size_t>(end - prefix));
  const size_t at = out.size();
  out.resize(at + size);
  m.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data() + at));
}

std::string node_path(uint64_t id) {
  return "/node/" + std::to_string(id);
}

const AttributeProto* find_attr(const pb::RepeatedPtrField<AttributeProto>& attrs, const std::string& name) {
  for (const AttributeProto& a : attrs) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

namespace {

[[noreturn]] void wrong_type(const AttributeProto& a, const std::string& file, const std::string& where,
                             const char* expected) {
  throw InputError(file, where + "/" + a.name(),
                   std::string("expected ") + expected + " (attribute value field " +
                       std::to_string(static_cast<int>(a.value_case())) + " is set)");
}

}  // namespace

std::optional<int64_t> int_attr(const AttributeProto* a, const std::string& file, const std::string& where) {
  if (a == nullptr) return std::nullopt;
  auto unsigned_value = [&](uint64_t v) {
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw InputError(file, where + "/" + a->name(), "out of range: " + std::to_string(v));
    }
    return static_cast<int64_t>(v);
  };
  switch (a->value_case()) {
    case AttributeProto::kInt32Val:
      return a->int32_val();
    case AttributeProto::kInt64Val:
      return a->int64_val();
    case AttributeProto::kUint32Val:
      return a->uint32_val();
    case AttributeProto::kUint64Val:
      return unsigned_value(a->uint64_val());
    case AttributeProto::kSint32Val:
      return a->sint32_val();
    case AttributeProto::kSint64Val:
      return a->sint64_val();
    case AttributeProto::kFixed32Val:
      return a->fixed32_val();
    case AttributeProto::kFixed64Val:
      return unsigned_value(a->fixed64_val());
    case AttributeProto::kSfixed32Val:
      return a->sfixed32_val();
    case AttributeProto::kSfixed64Val:
      return a->sfixed64_val();
    default:
      wrong_type(*a, file, where, "an integer");
  }
}

std::optional<double> number_attr(const AttributeProto* a, const std::string& file, const std::string& where) {
  if (a == nullptr) return std::nullopt;
  if (a->value_case() == AttributeProto::kDoubleVal) return a->double_val();
  if (a->value_case() == AttributeProto::kFloatVal) return a->float_val();
  if (a->value_case() == AttributeProto::kBoolVal || a->value_case() == AttributeProto::kStringVal ||
      a->value_case() == AttributeProto::kBytesVal) {
    wrong_type(*a, file, where, "a number");
  }
  try {
    return static_cast<double>(*int_attr(a, file, where));
  } catch (const InputError&) {
    wrong_type(*a, file, where, "a number");
  }
}

std::optional<bool> bool_attr(const AttributeProto* a, const std::string& file, const std::string& where) {
  if (a == nullptr) return std::nullopt;
  if (a->value_case() == AttributeProto::kBoolVal) return a->bool_val();
  std::optional<int64_t> v;
  try {
    v = int_attr(a, file, where);
  } catch (const InputError&) {
    wrong_type(*a, file, where, "a bool");
  }
  if (*v != 0 && *v != 1) wrong_type(*a, file, where, "a bool (or an integer 0 or 1)");
  return *v == 1;
}

std::optional<std::string> string_attr(const AttributeProto* a, const std::string& file, const std::string& where) {
  if (a == nullptr) return std::nullopt;
  if (a->value_case() != AttributeProto::kStringVal) wrong_type(*a, file, where, "a string");
  return a->string_val();
}

std::optional<std::vector<int64_t>> int_list_attr(const AttributeProto* a, const std::string& file,
                                                  const std::string& where) {
  if (a == nullptr) return std::nullopt;
  if (a->value_case() != AttributeProto::kInt64List) wrong_type(*a, file, where, "an int64 list");
  return std::vector<int64_t>(a->int64_list().values().begin(), a->int64_list().values().end());
}

std::optional<std::vector<std::string>> string_list_attr(const AttributeProto* a, const std::string& file,
                                                         const std::string& where) {
  if (a == nullptr) return std::nullopt;
  if (a->value_case() != AttributeProto::kStringList) wrong_type(*a, file, where, "a string list");
  return std::vector<std::string>(a->string_list().values().begin(), a->string_list().values().end());
}

void add_attr_u64(pb::RepeatedPtrField<AttributeProto>& attrs, const std::string& name, uint64_t v) {
  AttributeProto* a = attrs.Add();
  a->set_name(name);
  a->set_uint64_val(v);
}

void add_attr_i32(pb::RepeatedPtrField<AttributeProto>& attrs, const std::string& name, int32_t v) {
  AttributeProto* a = attrs.Add();
  a->set_name(name);
  a->set_int32_val(v);
}

void add_attr(pb::RepeatedPtrField<AttributeProto>& attrs, const std::string& name, int64_t v) {
  AttributeProto* a = attrs.Add();
  a->set_name(name);
  a->set_int64_val(v);
}

void add_attr(pb::RepeatedPtrField<AttributeProto>& attrs, const std::string& name, double v) {
  AttributeProto* a = attrs.Add();
  a->set_name(name);
  a->set_double_val(v);
}

void add_attr(pb::RepeatedPtrField<AttributeProto>& attrs, const std::string& name, bool v) {
  AttributeProto* a = attrs.Add();
  a->set_name(name);
  a->set_bool_val(v);
}

void add_attr(pb::RepeatedPtrField<AttributeProto>& attrs, const std::string& name, const std::string& v) {
  AttributeProto* a = attrs.Add();
  a->set_name(name);
  a->set_string_val(v);
}

void add_attr(pb::RepeatedPtrField<AttributeProto>& attrs, const std::string& name, const std::vector<int64_t>& v) {
  AttributeProto* a = attrs.Add();
  a->set_name(name);
  for (int64_t x : v) a->mutable_int64_list()->add_values(x);
}

void add_attr(pb::RepeatedPtrField<AttributeProto>& attrs, const std::string& name, const std::vector<std::string>& v) {
  AttributeProto* a = attrs.Add();
  a->set_name(name);
  for (const std::string& x : v) a->mutable_string_list()->add_values(x);
}

}  // namespace shardsim::chakra::detail
