// SPDX-License-Identifier: Apache-2.0
#include "tools/common/duration_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace symmem {

std::string durationText(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char text[32];
  if (s < 60)
    std::snprintf(text, sizeof text, "%lds", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  return text;
}

}  // namespace symmem
