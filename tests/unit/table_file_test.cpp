// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/table_file.h"
#include "tests/unit/temp_file.h"

namespace symmem {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

TEST(TableFile, RoundTripOfTheBuiltInTable) {
  const auto& entries = DecisionTable::builtIn().entries();
  const std::string text = formatTable(entries, {"gpu RTX PRO 6000", "date 2026-11-30"});
  TableFileResult parsed = parseTableText(text, "roundtrip.txt");
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  ASSERT_EQ(parsed.entries.size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(parsed.entries[i].cc, entries[i].cc);
    EXPECT_EQ(parsed.entries[i].link, entries[i].link);
    EXPECT_EQ(parsed.entries[i].nRanks, entries[i].nRanks);
    EXPECT_EQ(parsed.entries[i].oneShotMaxBytes, entries[i].oneShotMaxBytes);
    EXPECT_EQ(parsed.entries[i].twoShotMaxBytes, entries[i].twoShotMaxBytes);
  }
  EXPECT_EQ(parsed.meta, (std::vector<std::string>{"gpu RTX PRO 6000", "date 2026-11-30"}));
  EXPECT_EQ(formatTable(parsed.entries, parsed.meta), text);
}

TEST(TableFile, RangesBandsAndComments) {
  const char* text =
      "# written by hand\n"
      "symmem-table 1\n"
      "\n"
      "meta gpu NVIDIA RTX PRO 6000 Blackwell Server Edition\n"
      "entry cc=12.0 link=pcie-switch ranks=2-4 oneshot=64KiB twoshot=1M   # measured\n"
      "entry cc=12.0 link=pcie-sys ranks=9+ oneshot=0 twoshot=0\n"
      "band cc=12.0 link=pcie-switch ranks=4 coll=allreduce upto=4MiB algo=tree proto=simple channels=8\n"
      "band cc=12.0 link=pcie-switch ranks=4 coll=allreduce upto=256K algo=ring proto=ll channels=0\n";
  TableFileResult r = parseTableText(text, "t.txt");
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.entries.size(), 4u);
  EXPECT_EQ(r.entries[0].nRanks, 2);
  EXPECT_EQ(r.entries[2].nRanks, 4);
  EXPECT_EQ(r.entries[2].oneShotMaxBytes, 64 * KiB);
  EXPECT_EQ(r.entries[2].twoShotMaxBytes, 1 * MiB);
  EXPECT_STREQ(r.entries[2].source, "t.txt:5");
  EXPECT_EQ(r.entries[3].nRanks, kBeyondEightRanks);
  ASSERT_EQ(r.entries[2].numBands, 2);
  EXPECT_EQ(r.entries[2].bands[0].maxBytes, 256 * KiB);  // sorted by size
  EXPECT_EQ(r.entries[2].bands[1].nChannels, 8);
  EXPECT_EQ(r.entries[1].numBands, 0);
  ASSERT_EQ(r.meta.size(), 1u);
  EXPECT_EQ(r.meta[0], "gpu NVIDIA RTX PRO 6000 Blackwell Server Edition");

  DecisionTable table = DecisionTable::builtIn();
  applyTableFile(r, table);
  EXPECT_EQ(table.thresholdsFor({12, 0}, LinkClass::PcieSameSwitch, 3).entry->oneShotMaxBytes, 64 * KiB);
  EXPECT_EQ(table.thresholdsFor({12, 0}, LinkClass::PcieSameSwitch, 8).entry->oneShotMaxBytes, 32 * KiB);
  EXPECT_EQ(table.entries().size(), DecisionTable::builtIn().entries().size());
}

struct BadCase {
  const char* text;
  const char* expected;  // substring of the error, which starts with file:line
};

TEST(TableFile, MalformedInputNamesFileLineAndProblem) {
  const BadCase cases[] = {
      {"", "bad.txt:1: empty file"},
      {"entry cc=12.0 link=nvlink ranks=2 oneshot=1K twoshot=0\n", "bad.txt:1: expected the header"},
      {"symmem-table 2\n", "bad.txt:1: unsupported table format version '2'"},
      {"symmem-table 1\nentry cc=12.0 link=nvlink ranks=2 oneshot=1K\n", "bad.txt:2: missing key 'twoshot'"},
      {"symmem-table 1\nentry cc=12.0 link=nvlink ranks=2 oneshot=1K twoshot=0 speed=9\n",
       "bad.txt:2: unknown key 'speed'"},
      {"symmem-table 1\n\nentry cc=twelve link=nvlink ranks=2 oneshot=1K twoshot=0\n",
       "bad.txt:3: bad compute capability"},
      {"symmem-table 1\nentry cc=12.0 link=infiniband ranks=2 oneshot=1K twoshot=0\n",
       "bad.txt:2: bad link class 'infiniband'"},
      {"symmem-table 1\nentry cc=12.0 link=nvlink ranks=1 oneshot=1K twoshot=0\n", "bad.txt:2: bad ranks '1'"},
      {"symmem-table 1\nentry cc=12.0 link=nvlink ranks=5-3 oneshot=1K twoshot=0\n", "bad.txt:2: bad ranks '5-3'"},
      {"symmem-table 1\nentry cc=12.0 link=nvlink ranks=2 oneshot=12XB twoshot=0\n", "bad.txt:2: bad size '12XB'"},
      {"symmem-table 1\nentry cc=12.0 link=nvlink ranks=2 oneshot=64K twoshot=32K\n",
       "bad.txt:2: twoshot (32K) is below oneshot"},
      {"symmem-table 1\nentry cc=12.0 link=nvlink ranks=2 oneshot=8G twoshot=0\n",
       "bad.txt:2: oneshot 8GiB is above 1GiB"},
      {"symmem-table 1\nentry cc=12.0 link=nvlink ranks=2-3 oneshot=1K twoshot=0\nentry cc=12.0 link=nvlink ranks=3 "
       "oneshot=1K twoshot=0\n",
       "bad.txt:3: entry cc=12.0 link=nvlink ranks=3 defined twice (first at bad.txt:2)"},
      {"symmem-table 1\nband cc=12.0 link=nvlink ranks=2 coll=allreduce upto=1M algo=ring proto=ll channels=0\n",
       "bad.txt:2: band for cc=12.0 link=nvlink ranks=2 has no entry line before it"},
      {"symmem-table 1\nentry cc=12.0 link=nvlink ranks=2 oneshot=1K twoshot=0\n"
       "band cc=12.0 link=nvlink ranks=2 coll=allreduce upto=1M algo=warp proto=ll channels=0\n",
       "bad.txt:3: bad algo 'warp'"},
      {"symmem-table 1\nentry cc=12.0 link=nvlink ranks=2 oneshot=1K twoshot=0\n"
       "band cc=12.0 link=nvlink ranks=2 coll=allreduce upto=1M algo=ring proto=ll channels=65\n",
       "bad.txt:3: bad channels '65'"},
      {"symmem-table 1\noneshot 12.0 1K\n", "bad.txt:2: unknown line kind 'oneshot'"},
      {"symmem-table 1\nentry cc=12.0 link=nvlink ranks=2 oneshot 1K twoshot=0\n", "bad.txt:2: expected key=value"},
      {"symmem-table 1\nentry cc=12.0 link=nvlink ranks=2 oneshot=1K oneshot=2K twoshot=0\n", "given twice"},
  };
  for (const BadCase& c : cases) {
    TableFileResult r = parseTableText(c.text, "bad.txt");
    EXPECT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error.find(c.expected), std::string::npos) << "got: " << r.error << "\nwanted: " << c.expected;
    EXPECT_TRUE(r.entries.empty());
  }
}

TEST(TableFile, MissingFile) {
  TableFileResult r = readTableFile("/nonexistent/dir/table.txt");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error, "/nonexistent/dir/table.txt: cannot open the table file");
}

TEST(TableFile, ReadsFromDisk) {
  testing::TempFile file("symmem-table 1\nentry cc=9.0 link=nvlink ranks=2 oneshot=512KiB twoshot=8MiB\n");
  ASSERT_TRUE(file.ok());
  TableFileResult r = readTableFile(file.path());
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.entries.size(), 1u);
  EXPECT_EQ(r.entries[0].twoShotMaxBytes, 8 * MiB);
}

TEST(Bytes, ParseAndFormat) {
  uint64_t v = 0;
  EXPECT_TRUE(parseBytes("8", v));
  EXPECT_EQ(v, 8u);
  EXPECT_TRUE(parseBytes("8B", v));
  EXPECT_EQ(v, 8u);
  EXPECT_TRUE(parseBytes("64k", v));
  EXPECT_EQ(v, 64 * KiB);
  EXPECT_TRUE(parseBytes("3MiB", v));
  EXPECT_EQ(v, 3 * MiB);
  EXPECT_TRUE(parseBytes("1G", v));
  EXPECT_EQ(v, 1ull << 30);
  EXPECT_FALSE(parseBytes("", v));
  EXPECT_FALSE(parseBytes("K", v));
  EXPECT_FALSE(parseBytes("1.5M", v));
  EXPECT_FALSE(parseBytes("-1", v));
  EXPECT_FALSE(parseBytes("99999999999999999999G", v));
  EXPECT_EQ(formatBytes(0), "0B");
  EXPECT_EQ(formatBytes(100), "100B");
  EXPECT_EQ(formatBytes(64 * KiB), "64KiB");
  EXPECT_EQ(formatBytes(3 * MiB), "3MiB");
  EXPECT_EQ(formatBytes(1536), "1536B");
}

}  // namespace
}  // namespace symmem
