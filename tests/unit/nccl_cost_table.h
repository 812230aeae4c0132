// SPDX-License-Identifier: Apache-2.0
#pragma once
// A cost table the way NCCL 2.28 hands it to the tuner on a PCIe-only node: float[7][3], IGNORE (-1)
// everywhere except TREE/RING x LL/SIMPLE (LL128 is off without NVLink), and NCCL's rule for what it
// then picks.
#include <utility>

namespace symmem::testing {

struct NcclCostTable {
  static constexpr float kIgnore = -1.0f;
  float cells[7][3];

  NcclCostTable() {
    for (auto& row : cells)
      for (float& c : row) c = kIgnore;
    cells[0][0] = 12.0f;  // tree/ll
    cells[0][2] = 30.0f;  // tree/simple
    cells[1][0] = 10.0f;  // ring/ll
    cells[1][2] = 25.0f;  // ring/simple
  }
  float** raw() { return reinterpret_cast<float**>(&cells[0][0]); }
  // The smallest entry >= 0; ties go to the lower algorithm, then the lower protocol.
  std::pair<int, int> ncclChoice() const {
    int ba = -1, bp = -1;
    for (int a = 0; a < 7; ++a)
      for (int p = 0; p < 3; ++p)
        if (cells[a][p] >= 0 && (ba < 0 || cells[a][p] < cells[ba][bp])) ba = a, bp = p;
    return {ba, bp};
  }
  int ignoredCount() const {
    int n = 0;
    for (auto& row : cells)
      for (float c : row) n += c < 0;
    return n;
  }
};

}  // namespace symmem::testing
