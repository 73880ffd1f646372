// A rank's file as protobuf text and back (chakra.h): for reading traces
// and for writing small ones by hand (the tests' fixtures).
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <sstream>

#include "chakra_io.h"
#include "shardsim/core/error.h"
#include "shardsim/interop/chakra.h"

namespace shardsim::chakra {

namespace {

namespace pb = google::protobuf;

constexpr const char* kMetaHeader = "# GlobalMetadata";
constexpr const char* kNodeHeader = "# Node";

/// The first error the text parser reports, with its line.
class FirstError : public pb::io::ErrorCollector {
 public:
  /// `first`: the text's line the block starts on.
  explicit FirstError(int first) : first_(first) {}
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (!message_.empty()) return;
    message_ = "line " + std::to_string(first_ + line) + ", column " + std::to_string(column + 1) + ": " + message;
  }
  const std::string& message() const { return message_; }

 private:
  int first_;
  std::string message_;
};

}  // namespace

std::string et_to_text(const std::string& bytes, const std::string& name) {
  const detail::Messages m = detail::decode(bytes, name);
  pb::TextFormat::Printer printer;
  std::string out = std::string(kMetaHeader) + "\n";
  std::string text;
  printer.PrintToString(*m.meta, &text);
  out += text;
  for (const auto* n : m.nodes) {
    printer.PrintToString(*n, &text);
    out += std::string(kNodeHeader) + "\n" + text;
  }
  return out;
}

std::string text_to_et(const std::string& text, const std::string& name) {
  // Blocks: each starts at a header line; the first must be the metadata.
  std::istringstream in(text);
  std::string line, block;
  std::vector<std::pair<bool, std::string>> blocks;  // (is metadata, text)
  int at = 0;
  std::vector<int> first_line;
  while (std::getline(in, line)) {
    ++at;
    const bool meta = line == kMetaHeader, node = line == kNodeHeader;
    if (meta || node) {
      blocks.emplace_back(meta, "");
      first_line.push_back(at + 1);
      continue;
    }
    if (blocks.empty()) {
      const bool blank = line.find_first_not_of(" \t\r") == std::string::npos;
      if (blank || line.rfind('#', 0) == 0) continue;
      throw InputError(name, "/message 0", "line " + std::to_string(at) + ": expected \"" + kMetaHeader + "\" first");
    }
    blocks.back().second += line + "\n";
  }
  if (blocks.empty() || !blocks.front().first) {
    throw InputError(name, "/message 0", std::string("expected a \"") + kMetaHeader + "\" block first");
  }
  std::string out;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto& [meta, body] = blocks[i];
    if (meta && i > 0) throw InputError(name, "/message " + std::to_string(i), "a second GlobalMetadata");
    FirstError errors(first_line[i]);
    pb::TextFormat::Parser parser;
    parser.RecordErrorsTo(&errors);
    ChakraProtoMsg::GlobalMetadata gm;
    ChakraProtoMsg::Node node;
    pb::Message& msg = meta ? static_cast<pb::Message&>(gm) : static_cast<pb::Message&>(node);
    if (!parser.ParseFromString(body, &msg)) {
      throw InputError(name, "/message " + std::to_string(i), errors.message());
    }
    detail::append_delimited(msg, out);
  }
  return out;
}

}  // namespace shardsim::chakra
