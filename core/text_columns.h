// SPDX-License-Identifier: Apache-2.0
#pragma once
// Rows of cells as left-aligned columns two spaces apart, each line after `indent` and without
// trailing spaces: the tables symmem-info prints of a topology (topology/describe.h) and the tables of
// symmem-health's verdict. A row may have fewer cells than the widest.
#include <string>
#include <string_view>
#include <vector>

namespace symmem {

std::string textColumns(const std::vector<std::vector<std::string>>& rows, std::string_view indent);

}  // namespace symmem
