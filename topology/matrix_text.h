// SPDX-License-Identifier: Apache-2.0
#pragma once
// nvidia-smi matrices as users paste them, reduced to numbered lines of whitespace-separated tokens.
//
// Raw captures use tabs, terminals and READMEs turn them into spaces, web pages into non-breaking
// spaces; nvidia-smi underlines the header with ANSI escape codes. None of that carries meaning, so it
// all becomes plain token boundaries here and the parsers only look at tokens. Empty cells (two tabs in
// a row, as in the "GPU NUMA ID" column) disappear, which is what the parsers want: every cell that
// matters holds a token without blanks.
#include <string>
#include <string_view>
#include <vector>

namespace symmem {

struct TextLine {
  int number = 0;                   // 1-based line number in the file, for error messages
  std::vector<std::string> tokens;  // empty for a blank line
};

std::vector<TextLine> splitMatrixText(std::string_view text);

// True when the text holds bytes that no nvidia-smi capture has (NUL, other control characters).
bool looksBinary(std::string_view text);

// "file:line: message"
std::string locatedError(std::string_view file, int line, std::string_view message);

}  // namespace symmem
