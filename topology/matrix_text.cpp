// SPDX-License-Identifier: Apache-2.0
#include "topology/matrix_text.h"

namespace symmem {

namespace {

bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// Drops ANSI escape sequences (CSI "ESC [ params final", and any other "ESC x" pair) and turns UTF-8
// non-breaking spaces into plain spaces.
std::string cleanLine(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\x1b') {
      if (i + 1 < line.size() && line[i + 1] == '[') {
        i += 2;
        while (i < line.size() && !(line[i] >= '@' && line[i] <= '~')) ++i;
      } else {
        ++i;
      }
      continue;
    }
    if (c == '\xc2' && i + 1 < line.size() && line[i + 1] == '\xa0') {
      out.push_back(' ');
      ++i;
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::vector<TextLine> splitMatrixText(std::string_view text) {
  std::vector<TextLine> lines;
  int number = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++number;
    const std::string clean = cleanLine(text.substr(start, end - start));
    TextLine line;
    line.number = number;
    size_t i = 0;
    while (i < clean.size()) {
      while (i < clean.size() && isBlank(clean[i])) ++i;
      size_t j = i;
      while (j < clean.size() && !isBlank(clean[j])) ++j;
      if (j > i) line.tokens.emplace_back(clean.substr(i, j - i));
      i = j;
    }
    lines.push_back(std::move(line));
    if (end == text.size()) break;
    start = end + 1;
  }
  return lines;
}

bool looksBinary(std::string_view text) {
  for (unsigned char c : text) {
    if (c == '\t' || c == '\n' || c == '\r' || c == '\x1b' || c == '\f' || c == '\v') continue;
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

std::string locatedError(std::string_view file, int line, std::string_view message) {
  std::string out(file);
  out += ':';
  out += std::to_string(line);
  out += ": ";
  out += message;
  return out;
}

}  // namespace symmem
