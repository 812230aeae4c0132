// SPDX-License-Identifier: Apache-2.0
#include "tools/common/version_text.h"

#include <cctype>

namespace symmem {

std::string cudaVersionText(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string nvidiaDriverVersion(std::string_view procText) {
  const size_t line = procText.find("NVRM version:");
  if (line == std::string_view::npos) return "";
  const std::string_view rest = procText.substr(line, procText.find('\n', line) - line);
  // The first whitespace-separated token of the form digits.digits[.digits].
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && std::isspace(static_cast<unsigned char>(rest[i]))) ++i;
    size_t end = i;
    while (end < rest.size() && !std::isspace(static_cast<unsigned char>(rest[end]))) ++end;
    const std::string_view token = rest.substr(i, end - i);
    bool digitsAndDots = !token.empty() && std::isdigit(static_cast<unsigned char>(token[0]));
    int dots = 0;
    for (char c : token) {
      if (c == '.')
        ++dots;
      else if (!std::isdigit(static_cast<unsigned char>(c)))
        digitsAndDots = false;
    }
    if (digitsAndDots && dots >= 1) return std::string(token);
    i = end;
  }
  return "";
}

}  // namespace symmem
