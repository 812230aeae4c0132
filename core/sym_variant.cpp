// SPDX-License-Identifier: Apache-2.0
#include "core/sym_variant.h"

namespace symmem {

std::string_view symVariantName(SymVariant v) {
  switch (v) {
    case SymVariant::Push:
      return "push";
    case SymVariant::Pull:
      return "pull";
    case SymVariant::Staged:
      return "staged";
    case SymVariant::Halves:
      return "halves";
  }
  return "unknown";
}

std::optional<SymVariant> parseSymVariant(std::string_view text) {
  for (int i = 0; i < kNumSymVariants; ++i) {
    const auto v = static_cast<SymVariant>(i);
    if (text == symVariantName(v)) return v;
  }
  return std::nullopt;
}

}  // namespace symmem
