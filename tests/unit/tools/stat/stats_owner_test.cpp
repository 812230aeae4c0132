// SPDX-License-Identifier: Apache-2.0
// Another user posing as a process (core/call_stats_segment.h, tools/common/stats_gather.h): a
// forked child that becomes uid 12345 makes, in a world-writable folder with the sticky bit (as
// /dev/shm is), a file under this process's name before this process makes its own, and one under
// its own uid with this process's PID. The process makes its file under a suffixed name; the reader
// and symmem-stat show that file's rows for the PID, say whose each row is, and skip the two others
// saying whose they are. Needs root to change uid (skipped otherwise).
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>
#include <string>
#include <vector>

#include "core/call_stats_segment.h"
#include "tests/unit/call_stats_writer.h"
#include "tests/unit/crafted_stats_file.h"
#include "tests/unit/temp_file.h"
#include "tests/unit/tool_run.h"
#include "tools/common/stats_gather.h"

namespace symmem::stats {
namespace {

constexpr uid_t kOtherUid = 12345;
constexpr int kCannotBecomeOther = 77;

bool anyHas(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// In a child that becomes kOtherUid: a whole statistics file of `program` for `victim` (its PID and
// start time, which anyone can read in /proc) at each of `paths`. The child's exit status: 0, or
// kCannotBecomeOther.
int writeAsOtherUser(const std::vector<std::string>& paths, pid_t victim, const std::string& program) {
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(kOtherUid, kOtherUid, kOtherUid) != 0 ||
        setresuid(kOtherUid, kOtherUid, kOtherUid) != 0)
      _exit(kCannotBecomeOther);
    testing::CraftedStatsFile f(victim, processStartTicks(victim).value_or(0), program);
    testing::countCalls(f.liveSlot(0, 0x666), Route::OneShotPush, 8, false, 99);
    for (const std::string& p : paths)
      if (!f.writeTo(p)) _exit(1);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(StatsFileOwner, AnotherUsersFilesUnderAProcesssNameAreSkippedAndItsOwnIsFound) {
  testing::TempDir dir("symmem-owner");
  ASSERT_EQ(chmod(dir.path().c_str(), 01777), 0);
  const pid_t me = getpid();
  const std::string taken = dir.path() + "/" + segmentFileName(geteuid(), me);
  const std::string posing = dir.path() + "/" + segmentFileName(kOtherUid, me);
  const int wrote = writeAsOtherUser({taken, posing}, me, "impostor");
  if (wrote == kCannotBecomeOther) GTEST_SKIP() << "cannot become uid " << kOtherUid << " (not root)";
  ASSERT_EQ(wrote, 0);

  // The writer: its name is another user's, left alone; its file is under a suffixed name.
  std::string why;
  auto seg = WrittenSegment::createShared(dir.path(), "victim", "0.1.0", &why);
  ASSERT_NE(seg, nullptr) << why;
  EXPECT_NE(seg->path(), taken);
  const std::optional<SegmentName> name = parseSegmentFileName(seg->path().substr(dir.path().size() + 1));
  ASSERT_TRUE(name) << seg->path();
  EXPECT_EQ(name->uid, geteuid());
  EXPECT_EQ(name->pid, me);
  EXPECT_NE(name->suffix, 0u);
  struct stat st {};
  ASSERT_EQ(lstat(taken.c_str(), &st), 0) << "another user's file is not removed";
  EXPECT_EQ(st.st_uid, kOtherUid);
  testing::SlotIdentity id;
  id.comm = 0xabc;
  testing::claimSlot(seg->slot(0), id);
  testing::countCalls(seg->slot(0), Route::OneShotPush, 8, false, 3);

  // The reader: by PID, the process's own file; the two others skipped, saying whose they are.
  const StatsGathered g = gatherStats({dir.path(), {me}});
  ASSERT_EQ(g.processes.size(), 1u);
  EXPECT_EQ(g.processes[0].program, "victim");
  EXPECT_EQ(g.processes[0].file, seg->path());
  EXPECT_EQ(g.processes[0].uid, geteuid());
  ASSERT_EQ(g.processes[0].comms.size(), 1u);
  EXPECT_EQ(g.processes[0].comms[0].comm, 0xabcu);
  EXPECT_EQ(g.filesSeen, 3);
  EXPECT_EQ(g.filesUnusable, 2);
  EXPECT_TRUE(anyHas(g.notes, taken + ": owned by uid 12345, not by uid " + std::to_string(geteuid()) +
                                  " as its name says (not shown)"))
      << joined(g.notes);
  EXPECT_TRUE(anyHas(g.notes, posing + ": pid " + std::to_string(me) + " does not run as uid 12345, who owns the file"))
      << joined(g.notes);
  EXPECT_EQ(lstat(taken.c_str(), &st), 0) << "a reader removes no other user's file";

  // symmem-stat, as a user runs it: the rows are the process's, with its uid; the others said.
  const testing::ToolRun r = testing::runTool(std::string("'") + SYMMEM_STAT_PATH + "' --once --dir '" + dir.path() +
                                              "' " + std::to_string(me));
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(" " + std::to_string(me) + " +" + std::to_string(geteuid()) +
                                                  "  victim +0xabc +0/2 +one-shot push ")))
      << r.out;
  EXPECT_FALSE(r.has("impostor")) << r.out;
  EXPECT_FALSE(r.has("0x666")) << r.out;
  EXPECT_TRUE(r.has("symmem-stat: skipped " + taken + ": owned by uid 12345")) << r.out;
  EXPECT_TRUE(r.has("symmem-stat: skipped " + posing + ": pid " + std::to_string(me) + " does not run as uid 12345"))
      << r.out;
}

// The same file, its header naming another process than its name: refused, whoever owns it.
TEST(StatsFileOwner, AHeaderNamingAnotherPidIsRefused) {
  testing::TempDir dir("symmem-owner");
  const pid_t me = getpid();
  SegmentFile file{dir.path() + "/" + segmentFileName(geteuid(), me), {geteuid(), me}, geteuid()};
  testing::CraftedStatsFile f(1, processStartTicks(1).value_or(0), "init");
  ASSERT_TRUE(f.writeTo(file.path));
  const SegmentRead r = readNamedSegment(file);
  EXPECT_EQ(r.outcome, SegmentRead::Outcome::Refused);
  EXPECT_NE(r.error.find("its header names pid 1, its name pid " + std::to_string(me)), std::string::npos) << r.error;
  f.header()->pid = me;
  ASSERT_TRUE(f.writeTo(file.path));
  EXPECT_EQ(readNamedSegment(file).outcome, SegmentRead::Outcome::Ok) << "the same file naming its own pid";
}

}  // namespace
}  // namespace symmem::stats
