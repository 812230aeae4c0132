// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
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
    EXPECT_EQ(parsed.entries[i].numSymBands, entries[i].numSymBands);
    EXPECT_EQ(parsed.entries[i].symBands, entries[i].symBands);
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
      {"symmem-table 3\n", "bad.txt:1: unsupported table format version '3' (this build reads 1 and 2)"},
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
       "bad.txt:2: band for cc=12.0 link=nvlink ranks=2 has no entry or sym line before it"},
      {"symmem-table 1\nsym cc=12.0 link=pcie-sys ranks=8 upto=16K algo=oneshot variant=pulled\n",
       "bad.txt:2: bad variant 'pulled' (push, pull, staged, halves)"},
      {"symmem-table 1\nsym cc=12.0 link=pcie-sys ranks=8 upto=16K algo=ring variant=pull\n",
       "bad.txt:2: bad algo 'ring' for a sym band (oneshot, twoshot)"},
      {"symmem-table 1\nsym cc=12.0 link=pcie-sys ranks=8 upto=0 algo=oneshot variant=pull\n",
       "bad.txt:2: upto=0 covers no size"},
      {"symmem-table 1\nsym cc=12.0 link=pcie-sys ranks=8 upto=16K algo=oneshot\n", "bad.txt:2: missing key 'variant'"},
      {"symmem-table 1\nsym cc=12.0 link=pcie-sys ranks=8 upto=16K algo=oneshot variant=pull\n"
       "sym cc=12.0 link=pcie-sys ranks=4-8 upto=16KiB algo=twoshot variant=staged\n",
       "bad.txt:3: a sym band for sizes up to 16KiB is already given (bad.txt:2)"},
      {"symmem-table 1\nentry cc=12.0 link=pcie-sys ranks=8 oneshot=16K twoshot=0\n"
       "sym cc=12.0 link=pcie-sys ranks=8 upto=128K algo=twoshot variant=pull\n",
       "bad.txt:3: entry cc=12.0 link=pcie-sys ranks=8 already has its symmetric sizes from oneshot/twoshot "
       "(bad.txt:2)"},
      {"symmem-table 1\nsym cc=12.0 link=pcie-sys ranks=8 upto=128K algo=twoshot variant=pull\n"
       "entry cc=12.0 link=pcie-sys ranks=8 oneshot=16K twoshot=0\n",
       "bad.txt:3: entry cc=12.0 link=pcie-sys ranks=8 defined twice (first at bad.txt:2)"},
      {"symmem-table 1\nsym cc=12.0 link=pcie-sys ranks=9+ upto=16K algo=oneshot variant=pull\n",
       "bad.txt:2: the symmetric kernels take at most 8 ranks"},
      {"symmem-table 1\nsym cc=12.0 link=pcie-sys ranks=8 upto=16K algo=oneshot variant=pull\n"
       "sym cc=12.0 link=pcie-sys ranks=8 upto=1G algo=oneshot variant=push\n",
       "bad.txt:3: needs 24.0GiB of symmetric buffer per GPU at 8 ranks"},
      {"symmem-table 1\nsym cc=12.0 link=pcie-sys ranks=8 upto=2G algo=twoshot variant=pull\n",
       "bad.txt:2: twoshot 2GiB is above 1GiB"},
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

TEST(TableFile, SymLinesGiveBandsWithVariants) {
  const char* text =
      "symmem-table 1\n"
      "sym   cc=12.0 link=pcie-sys ranks=5-8 upto=128KiB algo=twoshot variant=pull\n"
      "sym   cc=12.0 link=pcie-sys ranks=5-8 upto=16KiB  algo=oneshot variant=pull   # order does not matter\n"
      "sym   cc=12.0 link=pcie-sys ranks=8   upto=4KiB   algo=OneShot variant=push\n"
      "band  cc=12.0 link=pcie-sys ranks=8   coll=allreduce upto=4MiB algo=ring proto=simple channels=0\n"
      "entry cc=12.0 link=pcie-sys ranks=2   oneshot=32K twoshot=0\n";
  TableFileResult r = parseTableText(text, "t.txt");
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.entries.size(), 5u);
  const Thresholds& five = r.entries[0];
  EXPECT_EQ(five.nRanks, 5);
  EXPECT_STREQ(five.source, "t.txt:2");
  ASSERT_EQ(five.numSymBands, 2);
  EXPECT_EQ(five.symBands[0], (SymBand{16 * KiB, SymAlgo::OneShot, SymVariant::Pull}));
  EXPECT_EQ(five.symBands[1], (SymBand{128 * KiB, SymAlgo::TwoShot, SymVariant::Pull}));
  EXPECT_EQ(five.oneShotMaxBytes, 16 * KiB);
  EXPECT_EQ(five.twoShotMaxBytes, 128 * KiB);
  const Thresholds& eight = r.entries[3];
  EXPECT_EQ(eight.nRanks, 8);
  ASSERT_EQ(eight.numSymBands, 3);
  EXPECT_EQ(eight.symBands[0], (SymBand{4 * KiB, SymAlgo::OneShot, SymVariant::Push}));
  EXPECT_EQ(eight.numBands, 1);
  // The entry line means push bands, as it always did.
  const Thresholds& two = r.entries[4];
  ASSERT_EQ(two.numSymBands, 1);
  EXPECT_EQ(two.symBands[0], (SymBand{32 * KiB, SymAlgo::OneShot, SymVariant::Push}));

  // Written back: sym lines for the entries that need them, the entry line where push limits say it.
  const std::string back = formatTable(r.entries, {});
  EXPECT_NE(back.find("sym cc=12.0 link=pcie-sys ranks=5 upto=16KiB algo=oneshot variant=pull\n"
                      "sym cc=12.0 link=pcie-sys ranks=5 upto=128KiB algo=twoshot variant=pull\n"),
            std::string::npos)
      << back;
  EXPECT_NE(back.find("sym cc=12.0 link=pcie-sys ranks=8 upto=4KiB algo=oneshot variant=push\n"), std::string::npos);
  EXPECT_NE(back.find("entry cc=12.0 link=pcie-sys ranks=2 oneshot=32KiB twoshot=0B\n"), std::string::npos);
  TableFileResult again = parseTableText(back, "back.txt");
  ASSERT_TRUE(again.ok()) << again.error;
  EXPECT_EQ(formatTable(again.entries, {}), back);
}

// The halves variant is a word of the file like the others: read, kept, written back the same.
TEST(TableFile, HalvesVariantReadAndWritten) {
  const char* text =
      "symmem-table 1\n"
      "sym cc=12.0 link=pcie-sys ranks=8 upto=16KiB algo=oneshot variant=halves\n"
      "sym cc=12.0 link=pcie-sys ranks=8 upto=256KiB algo=twoshot variant=Halves\n";
  TableFileResult r = parseTableText(text, "h.txt");
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.entries.size(), 1u);
  const Thresholds& e = r.entries[0];
  ASSERT_EQ(e.numSymBands, 2);
  EXPECT_EQ(e.symBands[0], (SymBand{16 * KiB, SymAlgo::OneShot, SymVariant::Halves}));
  EXPECT_EQ(e.symBands[1], (SymBand{256 * KiB, SymAlgo::TwoShot, SymVariant::Halves}));
  EXPECT_FALSE(hasOnlyPushLimits(e));
  const std::string back = formatTable(r.entries, {});
  EXPECT_NE(back.find("sym cc=12.0 link=pcie-sys ranks=8 upto=16KiB algo=oneshot variant=halves\n"
                      "sym cc=12.0 link=pcie-sys ranks=8 upto=256KiB algo=twoshot variant=halves\n"),
            std::string::npos)
      << back;
  TableFileResult again = parseTableText(back, "back.txt");
  ASSERT_TRUE(again.ok()) << again.error;
  EXPECT_EQ(again.entries[0].symBands, e.symBands);
}

// Files written before sym lines existed load as they always did: push bands.
TEST(TableFile, EntryLinesStillMeanPushBands) {
  TableFileResult r =
      parseTableText("symmem-table 1\nentry cc=12.0 link=pcie-switch ranks=8 oneshot=32K twoshot=256K\n", "old.txt");
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.entries.size(), 1u);
  const Thresholds& e = r.entries[0];
  ASSERT_EQ(e.numSymBands, 2);
  EXPECT_EQ(e.symBands[0], (SymBand{32 * KiB, SymAlgo::OneShot, SymVariant::Push}));
  EXPECT_EQ(e.symBands[1], (SymBand{256 * KiB, SymAlgo::TwoShot, SymVariant::Push}));
  CommFacts f;
  f.nRanks = 8;
  f.cc = {12, 0};
  f.link = LinkClass::PcieSameSwitch;
  f.allPairsP2p = true;
  f.symmetricCapacityBytes = 256 * KiB;
  const Decision d = decide({Collective::AllReduce, ReduceOp::Sum, DataType::Bfloat16, 64 * KiB}, f, &e, Policy{});
  EXPECT_EQ(d.path, Path::SymTwoShot);
  EXPECT_EQ(d.variant, SymVariant::Push);
}

// The built-in table, dumped and read back, decides every size the same (path and variant).
TEST(TableFile, DumpedBuiltInTableDecidesTheSame) {
  const DecisionTable& builtIn = DecisionTable::builtIn();
  TableFileResult file = parseTableText(formatTable(builtIn.entries(), {}), "dump.txt");
  ASSERT_TRUE(file.ok()) << file.error;
  DecisionTable loaded;
  applyTableFile(file, loaded);
  ASSERT_EQ(loaded.entries().size(), builtIn.entries().size());
  int symmetric = 0;
  for (const Thresholds& e : builtIn.entries()) {
    const int n = e.nRanks == kBeyondEightRanks ? 9 : e.nRanks;
    const Thresholds* other = loaded.thresholdsFor(e.cc, e.link, n).entry;
    ASSERT_NE(other, nullptr);
    CommFacts f;
    f.nRanks = n;
    f.cc = e.cc;
    f.link = e.link;
    f.allPairsP2p = true;
    f.symmetricCapacityBytes = std::max(e.oneShotMaxBytes, e.twoShotMaxBytes);
    for (uint64_t bytes = 8; bytes <= (256ull << 20); bytes *= 2)
      for (uint64_t b : {bytes - 1, bytes, bytes + 1}) {
        const CollRequest request{Collective::AllReduce, ReduceOp::Sum, DataType::Bfloat16, b};
        const Decision a = decide(request, f, &e, Policy{});
        const Decision c = decide(request, f, other, Policy{});
        EXPECT_EQ(a.path, c.path) << e.cc.str() << " " << linkClassName(e.link) << " " << n << " " << b;
        EXPECT_EQ(a.variant, c.variant) << e.cc.str() << " " << linkClassName(e.link) << " " << n << " " << b;
        symmetric += a.symmetric();
      }
  }
  EXPECT_GT(symmetric, 0);
}

TEST(TableFile, MissingFile) {
  TableFileResult r = readTableFile("/nonexistent/dir/table.txt");
  EXPECT_FALSE(r.ok());
  // With the reason, as SYMMEM_TOPO_FILE's errors give it.
  EXPECT_EQ(r.error, "/nonexistent/dir/table.txt: cannot open the table file: No such file or directory");
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
