// SPDX-License-Identifier: Apache-2.0
// The column tables of symmem-info's topology and symmem-health's verdict: each column as wide as its
// widest cell, two spaces between columns, nothing trailing, short rows allowed.
#include "core/text_columns.h"

#include <gtest/gtest.h>

namespace symmem {
namespace {

TEST(TextColumns, AlignsLeftTwoSpacesApartWithNothingTrailing) {
  EXPECT_EQ(textColumns({{"", "GPU0", "GPU1"}, {"GPU0", "X", "NV18"}, {"GPU10", "SYS"}}, "  "),
            "         GPU0  GPU1\n"
            "  GPU0   X     NV18\n"
            "  GPU10  SYS\n");
}

TEST(TextColumns, NoRowsIsNoText) { EXPECT_EQ(textColumns({}, "  "), ""); }

}  // namespace
}  // namespace symmem
