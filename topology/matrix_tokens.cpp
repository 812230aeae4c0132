// SPDX-License-Identifier: Apache-2.0
#include "topology/matrix_tokens.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace symmem {

namespace {

std::optional<int> trailingNumber(std::string_view token, std::string_view prefix) {
  if (!token.starts_with(prefix) || token.size() == prefix.size()) return std::nullopt;
  token.remove_prefix(prefix.size());
  int value = 0;
  auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || p != token.data() + token.size() || value < 0) return std::nullopt;
  return value;
}

bool allAlpha(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isupper(c); });
}

}  // namespace

std::optional<int> gpuHeadingIndex(std::string_view token) { return trailingNumber(token, "GPU"); }

bool isNicHeading(std::string_view token) {
  return trailingNumber(token, "NIC").has_value() || token.starts_with("mlx") || token.starts_with("NIC");
}

std::optional<TopoCell> parseTopoCell(std::string_view token) {
  TopoCell cell;
  if (token == "X") {
    cell.self = true;
    return cell;
  }
  if (auto n = trailingNumber(token, "NV")) {
    if (*n == 0) return std::nullopt;
    cell.path = PathKind::NvLink;
    cell.nvlinks = *n;
    return cell;
  }
  static constexpr std::array<std::pair<std::string_view, PathKind>, 6> kPaths{{{"PIX", PathKind::Pix},
                                                                                {"PXB", PathKind::Pxb},
                                                                                {"PHB", PathKind::Phb},
                                                                                {"NODE", PathKind::Node},
                                                                                {"SYS", PathKind::Sys},
                                                                                {"SOC", PathKind::Sys}}};
  for (const auto& [name, kind] : kPaths)
    if (token == name) {
      cell.path = kind;
      return cell;
    }
  return std::nullopt;
}

bool looksLikeAffinityValue(std::string_view token) {
  if (token == "N/A") return true;
  return !token.empty() && std::all_of(token.begin(), token.end(),
                                       [](unsigned char c) { return std::isdigit(c) || c == ',' || c == '-'; });
}

std::optional<P2pCell> parseP2pCell(std::string_view token) {
  P2pCell cell;
  if (token == "X") {
    cell.self = true;
    return cell;
  }
  if (token == "OK") {
    cell.status = Support::Yes;
    return cell;
  }
  if (token == "U") {
    cell.status = Support::Unknown;
    return cell;
  }
  if (isP2pOnlyToken(token)) {
    cell.status = Support::No;
    return cell;
  }
  // A status a newer driver may add: anything but OK means no P2P, but say we did not know it.
  if (allAlpha(token) && token.size() <= 4) {
    cell.status = Support::No;
    cell.inLegend = false;
    return cell;
  }
  return std::nullopt;
}

bool isP2pOnlyToken(std::string_view token) {
  return token == "OK" || token == "NS" || token == "CNS" || token == "GNS" || token == "TNS" || token == "DR" ||
         token == "U";
}

}  // namespace symmem
