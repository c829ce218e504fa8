#pragma once
// How the wire-format fuzz target (and its seed writer) packs a sequence of
// multipart messages into one byte string: parts separated by FF 50 ("\xffP"),
// messages by FF 4D ("\xffM"), a literal FF byte written FF FF.
#include <string>
#include <string_view>
#include <vector>

namespace stripeline::fuzz {

using Parts = std::vector<std::string>;

inline std::vector<Parts> split_messages(std::string_view in) {
  std::vector<Parts> out(1, Parts(1));
  for (std::size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '\xff' && i + 1 < in.size()) {
      const char n = in[++i];
      if (n == 'P') {
        out.back().emplace_back();
        continue;
      }
      if (n == 'M') {
        out.emplace_back(1);
        continue;
      }
      out.back().back().push_back(n == '\xff' ? '\xff' : n);
      continue;
    }
    out.back().back().push_back(c);
  }
  return out;
}

inline std::string join_messages(const std::vector<Parts>& messages) {
  std::string out;
  for (std::size_t m = 0; m < messages.size(); ++m) {
    if (m) out += "\xffM";
    for (std::size_t p = 0; p < messages[m].size(); ++p) {
      if (p) out += "\xffP";
      for (char c : messages[m][p]) {
        out.push_back(c);
        if (c == '\xff') out.push_back('\xff');
      }
    }
  }
  return out;
}

}  // namespace stripeline::fuzz
