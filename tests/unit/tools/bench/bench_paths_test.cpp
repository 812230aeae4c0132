// SPDX-License-Identifier: Apache-2.0
// symmem-bench's kernel variants: --variants parsed strictly, --help naming each variant, the paths'
// names (the CSV's, which tools/bench/plot_results.py reads) and the summary table's columns.
#include "tools/bench/paths.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "tools/bench/options.h"

namespace symmem {
namespace {

using bench::BenchPath;
using bench::PathKind;
using bench::PathResult;

std::vector<SymVariant> variantsOf(const std::vector<std::string>& args) {
  const BenchArgsResult r = parseBenchArgs(args);
  EXPECT_TRUE(r.ok()) << r.error;
  return r.options.variants;
}

TEST(BenchOptions, VariantsDefaultToAllFourAndComeInTheirOwnOrder) {
  const std::vector<SymVariant> all = {SymVariant::Push, SymVariant::Pull, SymVariant::Staged, SymVariant::Halves};
  EXPECT_EQ(variantsOf({}), all);
  EXPECT_EQ(variantsOf({"--variants", "push,pull,staged,halves"}), all);
  EXPECT_EQ(variantsOf({"--variants", "halves,staged,push,pull"}), all);
  EXPECT_EQ(variantsOf({"--variants", "halves"}), std::vector<SymVariant>{SymVariant::Halves});
  EXPECT_EQ(variantsOf({"--variants", "pull"}), std::vector<SymVariant>{SymVariant::Pull});
  EXPECT_EQ(variantsOf({"--variants", "staged,push"}), (std::vector<SymVariant>{SymVariant::Push, SymVariant::Staged}));
  // The last --variants wins, like every other flag.
  EXPECT_EQ(variantsOf({"--variants", "pull", "--variants", "staged"}), std::vector<SymVariant>{SymVariant::Staged});
}

// A repeated name is refused, not folded: "push,push" is more likely a typo for another variant.
TEST(BenchOptions, VariantsBadEmptyOrRepeatedNameIsRefusedNamingFlagAndValue) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  } cases[] = {
      {{"--variants", "push,fast"}, "bad --variants 'push,fast': no variant 'fast'"},
      {{"--variants", "Push"}, "bad --variants 'Push': no variant 'Push'"},
      {{"--variants", "push, pull"}, "bad --variants 'push, pull': no variant ' pull'"},
      {{"--variants", ""}, "bad --variants '': empty name"},
      {{"--variants", "push,"}, "bad --variants 'push,': empty name"},
      {{"--variants", ",pull"}, "bad --variants ',pull': empty name"},
      {{"--variants", "pull,,staged"}, "bad --variants 'pull,,staged': empty name"},
      {{"--variants", "push,pull,push"}, "bad --variants 'push,pull,push': 'push' named twice"},
      {{"--variants"}, "--variants needs a value"},
  };
  for (const Case& c : cases) {
    const BenchArgsResult r = parseBenchArgs(c.args);
    EXPECT_FALSE(r.ok()) << c.args.back();
    EXPECT_NE(r.error.find(c.message), std::string::npos) << "got: " << r.error << "\nwanted: " << c.message;
    if (c.args.size() > 1)
      EXPECT_NE(r.error.find("expected a comma-separated list of push, pull, staged and halves"), std::string::npos)
          << r.error;
  }
}

// The built tool, as a user runs it: no GPU is touched before the command line is read.
TEST(BenchOptions, HelpNamesEachVariantWithWhatItDoes) {
  FILE* p = popen((std::string("'") + SYMMEM_BENCH_PATH + "' --help 2>&1; echo \"rc=$?\"").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  EXPECT_NE(out.find("rc=0"), std::string::npos) << out;
  EXPECT_NE(out.find("[--variants LIST]"), std::string::npos) << out;
  // One line per variant: its name first, then what it does.
  const std::vector<std::pair<std::string, std::string>> lines = {
      {"push", "every rank writes its data into every peer's buffer at once"},
      {"pull", "each rank publishes its data in its own buffer and the peers read it over P2P"},
      {"staged", "pushes to one peer per step"},
      {"halves", "reduces inside each half, one flow per GPU across the middle to its partner"},
  };
  for (const auto& [name, meaning] : lines) {
    bool found = false;
    std::istringstream text(out);
    for (std::string line; std::getline(text, line);) {
      const size_t at = line.find_first_not_of(' ');
      if (at != std::string::npos && line.compare(at, name.size() + 1, name + " ") == 0 &&
          line.find(meaning) != std::string::npos)
        found = true;
    }
    EXPECT_TRUE(found) << "no line for " << name << " in:\n" << out;
  }
  EXPECT_NE(out.find("[--halves LIST]"), std::string::npos) << out;
  for (const char* path :
       {"one-shot-pull", "two-shot-pull", "one-shot-staged", "two-shot-staged", "one-shot-halves", "two-shot-halves"})
    EXPECT_NE(out.find(path), std::string::npos) << path;
}

TEST(BenchPaths, NcclFirstThenBothKernelsPerVariantWithPushKeepingTheOldNames) {
  auto names = [](const std::vector<SymVariant>& variants) {
    std::vector<std::string> out;
    for (const BenchPath& p : bench::benchPaths(variants)) out.push_back(p.name() + "/" + p.heading());
    return out;
  };
  EXPECT_EQ(names({SymVariant::Push, SymVariant::Pull, SymVariant::Staged}),
            (std::vector<std::string>{"nccl/nccl", "nccl-win/nccl-win", "one-shot/1s-push", "two-shot/2s-push",
                                      "one-shot-pull/1s-pull", "two-shot-pull/2s-pull", "one-shot-staged/1s-staged",
                                      "two-shot-staged/2s-staged"}));
  EXPECT_EQ(names({SymVariant::Staged}),
            (std::vector<std::string>{"nccl/nccl", "nccl-win/nccl-win", "one-shot-staged/1s-staged",
                                      "two-shot-staged/2s-staged"}));
  const std::vector<BenchPath> paths = bench::benchPaths({SymVariant::Pull});
  EXPECT_FALSE(paths[0].ours());
  EXPECT_FALSE(paths[1].ours());
  EXPECT_TRUE(paths[2].ours());
  EXPECT_EQ(paths[3].kind, PathKind::TwoShot);
  EXPECT_EQ(paths[3].variant, SymVariant::Pull);
}

// --halves: one half per rank, checked as the kernels need them; against --ngpus when that is given.
TEST(BenchOptions, HalvesAreParsedStrictly) {
  BenchArgsResult r = parseBenchArgs({"--halves", "0,0,1,1"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.options.halves, (std::vector<int>{0, 0, 1, 1}));
  r = parseBenchArgs({"--ngpus", "4", "--halves", "0,1,1,0"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(parseBenchArgs({}).options.halves.empty()) << "the topology's by default";
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"--halves", "0,1"}, "bad --halves '0,1': halves need an even number of ranks from 4 to 8, not 2"},
      {{"--halves", "0,0,0,1,1,1,1,0"}, ""},  // valid: checked below
      {{"--halves", "0,0,1,1,1"}, "bad --halves '0,0,1,1,1': halves need an even number of ranks from 4 to 8, not 5"},
      {{"--halves", "1,1,0,0"}, "rank 0 must be in half 0"},
      {{"--halves", "0,0,1,x"}, "'x' is not a half"},
      {{"--ngpus", "8", "--halves", "0,0,1,1"}, "--halves names 4 ranks; --ngpus 8 runs 8"},
      {{"--variants", "push", "--halves", "0,0,1,1"},
       "--halves declares halves for the halves variant, which --variants leaves out"},
  };
  for (const Case& c : cases) {
    const BenchArgsResult bad = parseBenchArgs(c.args);
    if (*c.message == '\0') {
      EXPECT_TRUE(bad.ok()) << bad.error;
      continue;
    }
    EXPECT_FALSE(bad.ok()) << c.args.back();
    EXPECT_NE(bad.error.find(c.message), std::string::npos) << "got: " << bad.error << "\nwanted: " << c.message;
  }
}

// Ranks without halves skip the halves variant with one line saying why; with halves it runs.
TEST(BenchPaths, HalvesAreSkippedWhereTheRanksHaveNone) {
  const std::vector<SymVariant> all = {SymVariant::Push, SymVariant::Pull, SymVariant::Staged, SymVariant::Halves};
  RankHalves none;
  none.why = "no halves on these GPUs (every pair shares one PCIe switch: there is no middle to cross)";
  std::string skipped;
  EXPECT_EQ(bench::measuredVariants(all, 2, none, &skipped),
            (std::vector<SymVariant>{SymVariant::Push, SymVariant::Pull, SymVariant::Staged}));
  EXPECT_EQ(skipped,
            "halves skipped at 2 ranks: no halves on these GPUs (every pair shares one PCIe switch: there is no middle "
            "to cross); --halves declares them");
  skipped.clear();
  EXPECT_EQ(bench::measuredVariants({SymVariant::Push}, 2, none, &skipped), std::vector<SymVariant>{SymVariant::Push});
  EXPECT_EQ(skipped, "") << "not asked for: nothing to say";
  RankHalves four;
  four.ok = true;
  four.halfOf = {0, 0, 1, 1};
  EXPECT_EQ(bench::measuredVariants(all, 4, four, &skipped), all);
  EXPECT_EQ(skipped, "");
}

PathResult timed(double graphUs, double eagerUs, long long wrong = 0) {
  PathResult r;
  r.graphUs = graphUs;
  r.eagerUs = eagerUs;
  r.wrong = wrong;
  return r;
}

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The line of the table (graph first, then eager) that starts with `bytes`.
std::string rowOf(const std::string& table, const std::string& bytes, int which = 0) {
  for (const std::string& line : linesOf(table))
    if (line.rfind(bytes + " ", 0) == 0 && which-- == 0) return line;
  return "";
}

TEST(BenchPaths, TableHasAColumnPerPathThatRanNamesTheBestAndFitsIn160Columns) {
  const std::vector<BenchPath> paths = bench::benchPaths({SymVariant::Push, SymVariant::Pull, SymVariant::Staged});
  bench::Results results;
  // 8 B: every path, 2s-pull fastest in graphs, 1s-staged fastest eager.
  results[8] = {timed(20.0, 25.0), timed(10.0, 12.0), timed(6.0, 9.0), timed(8.0, 9.5),
                timed(7.0, 9.0),   timed(5.0, 9.0),   timed(6.5, 4.0), timed(9.0, 9.9)};
  // 64 MiB: the one-shots are past their limit; the largest times still fit their columns.
  results[64u << 20] = {timed(123456.78, 99999.99),
                        timed(54321.5, 60000.0),
                        std::nullopt,
                        timed(30000.0, 31000.0, 2),
                        std::nullopt,
                        timed(27000.0, 28000.0),
                        std::nullopt,
                        timed(40000.0, 41000.0)};
  const std::string table = bench::summaryTable(paths, results, true);
  for (const std::string& line : linesOf(table)) EXPECT_LE(line.size(), 160u) << line;

  const std::string heading =
      "bytes      |      nccl  nccl-win   1s-push   2s-push   1s-pull   2s-pull 1s-staged "
      "2s-staged | ours/nccl  ours/win  best";
  EXPECT_NE(table.find("graph (us per call, median)\n" + heading + "      | wrong\n"), std::string::npos) << table;
  EXPECT_NE(table.find("eager (us per call, median)\n" + heading + "\n"), std::string::npos) << table;
  EXPECT_EQ(rowOf(table, "8"),
            "8          |     20.00     10.00      6.00      8.00      7.00      5.00      6.50      9.00 |      0.25"
            "      0.50  2s-pull   | 0");
  EXPECT_EQ(rowOf(table, "8", 1),
            "8          |     25.00     12.00      9.00      9.50      9.00      9.00      4.00      9.90 |      0.16"
            "      0.33  1s-staged");
  EXPECT_EQ(rowOf(table, "67108864"),
            "67108864   | 123456.78  54321.50         -  30000.00         -  27000.00         -  40000.00 |      0.22"
            "      0.50  2s-pull   | 2");
  EXPECT_NE(table.find("# 1s-push = one-shot, 2s-push = two-shot, 1s-pull = one-shot-pull, 2s-pull = two-shot-pull, "
                       "1s-staged = one-shot-staged, 2s-staged = two-shot-staged\n"),
            std::string::npos)
      << table;
  EXPECT_EQ(bench::totalWrong(results), 2);
}

TEST(BenchPaths, AllTenPathsFitIn160Columns) {
  const std::vector<BenchPath> paths =
      bench::benchPaths({SymVariant::Push, SymVariant::Pull, SymVariant::Staged, SymVariant::Halves});
  ASSERT_EQ(paths.size(), 10u);
  EXPECT_EQ(paths[8].name() + "/" + paths[8].heading(), "one-shot-halves/1s-halves");
  EXPECT_EQ(paths[9].name() + "/" + paths[9].heading(), "two-shot-halves/2s-halves");
  bench::Results results;
  results[8] = {timed(20.0, 25.0), timed(10.0, 12.0), timed(6.0, 9.0), timed(8.0, 9.5), timed(7.0, 9.0),
                timed(5.0, 9.0),   timed(6.5, 4.0),   timed(9.0, 9.9), timed(4.0, 8.0), timed(6.0, 7.0)};
  results[64u << 20] = {timed(123456.78, 99999.99),
                        timed(54321.5, 60000.0),
                        std::nullopt,
                        timed(30000.0, 31000.0),
                        std::nullopt,
                        timed(27000.0, 28000.0),
                        std::nullopt,
                        timed(40000.0, 41000.0),
                        std::nullopt,
                        timed(26000.0, 99999.99)};
  const std::string table = bench::summaryTable(paths, results, true);
  for (const std::string& line : linesOf(table)) EXPECT_LE(line.size(), 160u) << line;
  EXPECT_NE(table.find("1s-staged 2s-staged 1s-halves 2s-halves | ours/nccl"), std::string::npos) << table;
  EXPECT_NE(rowOf(table, "8").find("1s-halves | 0"), std::string::npos) << table;
  EXPECT_NE(table.find("2s-staged = two-shot-staged,\n# 1s-halves = one-shot-halves, 2s-halves = two-shot-halves\n"),
            std::string::npos)
      << "the legend goes on a second line: " << table;
}

TEST(BenchPaths, PathsThatNeverRanHaveNoColumnAndNoEagerTableWithoutEager) {
  const std::vector<BenchPath> paths = bench::benchPaths({SymVariant::Push, SymVariant::Staged});
  bench::Results results;
  // --one-shot-max 0: the one-shots never run.
  results[1024] = {timed(20.0, NAN), timed(10.0, NAN), std::nullopt, timed(12.0, NAN), std::nullopt, timed(30.0, NAN)};
  const std::string table = bench::summaryTable(paths, results, false);
  EXPECT_EQ(table.find("eager"), std::string::npos) << table;
  EXPECT_EQ(table.find("1s-"), std::string::npos) << table;
  EXPECT_EQ(rowOf(table, "1024"),
            "1024       |     20.00     10.00     12.00     30.00 |      0.60      1.20  2s-push   | 0");
  // No kernel at all (the symmetric path could not be set up): dashes, no best.
  results[1024] = {timed(20.0, NAN), timed(10.0, NAN)};
  EXPECT_EQ(rowOf(bench::summaryTable(paths, results, false), "1024"),
            "1024       |     20.00     10.00 |         -         -  -         | 0");
}

}  // namespace
}  // namespace symmem
