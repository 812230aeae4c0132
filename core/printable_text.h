// SPDX-License-Identifier: Apache-2.0
#pragma once
// Text taken from a file (a GPU name in a recorded CSV, a word of a table file), made safe to print on
// a terminal or in a message: control characters become escapes ("\x1b", "\n", "\0"), so a file cannot
// move the cursor, change colours or cut a message short at a NUL byte. Everything else, UTF-8
// included, is kept as it is.
#include <string>
#include <string_view>

namespace symmem {

inline std::string printableText(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace symmem
