#include "traced_tensors.h"

#include <cctype>
#include <limits>

namespace shardsim::chakra::detail {

namespace {

/// One item of a list as the tensor test sees it.
struct Item {
  bool integer = false;
  int64_t value = 0;
  bool string = false;
  std::string_view text;
};

class Parser {
 public:
  Parser(std::string_view s, std::vector<TracedTensor>& out) : s_(s), out_(out) {}

  bool run() {
    skip();
    Item top;
    if (!value(top, 0)) return false;
    skip();
    return at_ == s_.size();
  }

 private:
  void skip() {
    while (at_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[at_]))) ++at_;
  }

  bool value(Item& item, int depth) {
    if (at_ >= s_.size()) return false;
    const char c = s_[at_];
    if (c == '[' || c == '(') return list(depth + 1);
    if (c == '\'' || c == '"') return string(item);
    if (c == '-' || c == '+' || std::isdigit(static_cast<unsigned char>(c))) return number(item);
    for (std::string_view word : {"True", "False", "None", "nan", "inf"}) {
      if (s_.substr(at_, word.size()) == word) {
        at_ += word.size();
        return true;
      }
    }
    return false;
  }

  bool list(int depth) {
    if (depth > 64) return false;
    const char close = s_[at_] == '[' ? ']' : ')';
    ++at_;
    Item items[6];
    size_t n = 0;
    skip();
    if (at_ < s_.size() && s_[at_] == close) {
      ++at_;
      return true;
    }
    for (;;) {
      skip();
      Item it;
      if (!value(it, depth)) return false;
      if (n < 6) items[n] = it;
      ++n;
      skip();
      if (at_ >= s_.size()) return false;
      if (s_[at_] == ',') {
        ++at_;
        skip();
        if (at_ < s_.size() && s_[at_] == close) break;  // a trailing comma
        continue;
      }
      if (s_[at_] != close) return false;
      break;
    }
    ++at_;
    if (n == 6) {
      bool ints = true;
      for (int k = 0; k < 5; ++k) ints = ints && items[k].integer && items[k].value >= 0;
      if (ints) {
        const bool host = items[5].string && items[5].text.substr(0, 3) == "cpu";
        out_.push_back({items[0].value, items[1].value, items[2].value, items[3].value, items[4].value, host});
      }
    }
    return true;
  }

  bool string(Item& item) {
    const char quote = s_[at_++];
    const size_t begin = at_;
    while (at_ < s_.size() && s_[at_] != quote) at_ += s_[at_] == '\\' ? 2 : 1;
    if (at_ >= s_.size()) return false;
    item.string = true;
    item.text = s_.substr(begin, at_ - begin);
    ++at_;
    return true;
  }

  bool number(Item& item) {
    const size_t begin = at_;
    if (s_[at_] == '-' || s_[at_] == '+') ++at_;
    bool digits_only = true;
    int64_t v = 0;
    bool overflow = false;
    while (at_ < s_.size()) {
      const char c = s_[at_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        const int d = c - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10) overflow = true;
        if (!overflow) v = v * 10 + d;
      } else if (c == '.' || c == 'e' || c == 'E' ||
                 ((c == '-' || c == '+') && at_ > begin && (s_[at_ - 1] == 'e' || s_[at_ - 1] == 'E'))) {
        digits_only = false;
      } else {
        break;
      }
      ++at_;
    }
    if (at_ == begin || (at_ == begin + 1 && (s_[begin] == '-' || s_[begin] == '+'))) return false;
    item.integer = digits_only && !overflow && s_[begin] != '-';
    item.value = v;
    return true;
  }

  std::string_view s_;
  size_t at_ = 0;
  std::vector<TracedTensor>& out_;
};

}  // namespace

bool traced_tensors(std::string_view values, std::vector<TracedTensor>& out) {
  const size_t before = out.size();
  Parser p(values, out);
  if (p.run()) return true;
  out.resize(before);
  return false;
}

}  // namespace shardsim::chakra::detail
