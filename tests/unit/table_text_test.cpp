// SPDX-License-Identifier: Apache-2.0
// The table file's text: NUL bytes, upto=0 and contradictory bands are refused with the line named; a UTF-8
// byte-order mark (as some editors write) is skipped.
#include <gtest/gtest.h>

#include <string>

#include "core/table_file.h"

namespace symmem {
namespace {

const std::string kEntry = "entry cc=12.0 link=nvlink ranks=2 oneshot=1K twoshot=0\n";
std::string band(const char* upto, const char* coll = "allreduce") {
  return std::string("band cc=12.0 link=nvlink ranks=2 coll=") + coll + " upto=" + upto +
         " algo=ring proto=ll channels=0\n";
}

TEST(TableText, NulByteIsRefusedWithItsLine) {
  const std::string text = std::string("symmem-table 1\nmeta gpu X") + '\0' + "Y\n" + kEntry;
  TableFileResult r = parseTableText(text, "t.txt");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("t.txt:2: NUL byte"), std::string::npos) << r.error;
  EXPECT_TRUE(r.meta.empty());
}

TEST(TableText, ByteOrderMarkIsSkipped) {
  TableFileResult r = parseTableText("\xEF\xBB\xBFsymmem-table 1\n" + kEntry, "t.txt");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.entries.size(), 1u);
  // Only at the very start: anywhere else it is a stray byte sequence.
  TableFileResult late = parseTableText("symmem-table 1\n\xEF\xBB\xBF" + kEntry, "t.txt");
  EXPECT_FALSE(late.ok());
  EXPECT_NE(late.error.find("t.txt:2:"), std::string::npos) << late.error;
}

TEST(TableText, BandUpToZeroIsRefused) {
  TableFileResult r = parseTableText("symmem-table 1\n" + kEntry + band("0"), "t.txt");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("t.txt:3: upto=0"), std::string::npos) << r.error;
}

TEST(TableText, ContradictoryBandsAreRefused) {
  TableFileResult same = parseTableText("symmem-table 1\n" + kEntry + band("64K") + band("64KiB"), "t.txt");
  EXPECT_FALSE(same.ok());
  EXPECT_NE(same.error.find("t.txt:4: a band for sizes up to 64KiB is already given (t.txt:3)"), std::string::npos)
      << same.error;
  // Bands of different collectives are independent, and the order in the file does not matter (the
  // bands are sorted by upto, docs/decision-table.md).
  TableFileResult ok =
      parseTableText("symmem-table 1\n" + kEntry + band("1M") + band("64K") + band("64K", "allgather"), "t.txt");
  EXPECT_TRUE(ok.ok()) << ok.error;
}

}  // namespace
}  // namespace symmem
