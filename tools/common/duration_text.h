// SPDX-License-Identifier: Apache-2.0
#pragma once
// How long something takes, as the tools print it (symmem-tune's estimate and progress, symmem-health's
// time limit).
#include <string>

namespace symmem {

// "42s", "3m05s", "1h02m" (negative counts as 0).
std::string durationText(double seconds);

}  // namespace symmem
