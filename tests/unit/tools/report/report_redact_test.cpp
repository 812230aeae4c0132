// SPDX-License-Identifier: Apache-2.0
// symmem-report's redaction: each kind of identity, whole-token matching of names (short and common
// ones only where they stand as an identity), and paths (the report's own, kept system ones, others).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/report/redact.h"

namespace symmem::report {
namespace {

Identity jdoe() {
  Identity id;
  id.hostNames = {"node17.cluster.example.org", "node17"};
  id.userNames = {"jdoe"};
  id.homeDirs = {"/home/jdoe"};
  id.currentDirs = {"/home/jdoe/work"};
  id.reportDirs = {"/home/jdoe/work/symmem-report-20261201-130452",
                   "/home/jdoe/work/symmem-report-20261201-130452/.staging"};
  return id;
}

std::string r(const std::string& text, const Identity& id = jdoe()) { return Redactor(id)(text); }

TEST(ReportRedact, TheReportFolderBecomesDot) {
  EXPECT_EQ(r("--csv /home/jdoe/work/symmem-report-20261201-130452/health.csv"), "--csv ./health.csv");
  EXPECT_EQ(r("/home/jdoe/work/symmem-report-20261201-130452"), ".");
  EXPECT_EQ(r("/home/jdoe/work/symmem-report-20261201-130452/"), ".");
  // The staging folder the tools write into reads as the folder itself.
  EXPECT_EQ(r("--out /home/jdoe/work/symmem-report-20261201-130452/.staging/table.txt"), "--out ./table.txt");
}

TEST(ReportRedact, HomeAndCurrentDirectoryBecomeMarkers) {
  EXPECT_EQ(r("HOME=/home/jdoe"), "HOME=<home>");
  EXPECT_EQ(r("in /home/jdoe/work now"), "in <cwd> now");
  EXPECT_EQ(r("/home/jdoe/"), "<home>");
  // Under them, a path is any other path: only its last name stays.
  EXPECT_EQ(r("/home/jdoe/nccl/build/lib/libnccl.so.2"), "<path>/libnccl.so.2");
  EXPECT_EQ(r("/home/jdoe/work/build/tools/symmem-info --check"), "<path>/symmem-info --check");
}

TEST(ReportRedact, EveryOtherAbsolutePathKeepsOnlyItsLastName) {
  EXPECT_EQ(r("plugin: /opt/site/nccl-symmem/lib/libnccl-tuner-symmem.so"), "plugin: <path>/libnccl-tuner-symmem.so");
  EXPECT_EQ(r("SYMMEM_TABLE=/scratch/tables/h200.txt"), "SYMMEM_TABLE=<path>/h200.txt");
  EXPECT_EQ(r("/tmp"), "<path>/tmp");
  EXPECT_EQ(r("see /data/x/table.txt."), "see <path>/table.txt.");  // a sentence's full stop is not the name's
  EXPECT_EQ(r("//data//x"), "<path>/x");
  EXPECT_EQ(r("~/nccl/build/lib"), "<path>/lib");
  EXPECT_EQ(r("~"), "<home>");
  EXPECT_EQ(r("about ~ 25 GB/s, ~40 us"), "about ~ 25 GB/s, ~40 us");
}

TEST(ReportRedact, PathsInListsQuotesAndOptions) {
  EXPECT_EQ(r("LD_LIBRARY_PATH=/usr/lib64:/home/jdoe/nccl/lib:/opt/x/lib64"),
            "LD_LIBRARY_PATH=/usr/lib64:<path>/lib:<path>/lib64");
  EXPECT_EQ(r("'/srv/with space/x' \"/srv/y\" (/srv/z) [/srv/w]"),
            "'<path>/with space/x' \"<path>/y\" (<path>/z) [<path>/w]");
  EXPECT_EQ(r("--topo=/srv/topo.txt,/srv/p2p.txt"), "--topo=<path>/topo.txt,<path>/p2p.txt");
  EXPECT_EQ(r("gpu,0,,source,/srv/captures/topo.txt"), "gpu,0,,source,<path>/topo.txt");
}

TEST(ReportRedact, KeptSystemPathsStayAsWritten) {
  for (const char* kept :
       {"/proc/driver/nvidia/version", "/dev/nvidia0", "/usr/local/cuda/lib64/libcudart.so.12",
        "/sys/bus/pci/devices/0000:19:00.0", "/etc/os-release", "/lib/x86_64-linux-gnu/libc.so.6", "/proc"})
    EXPECT_EQ(r(kept), kept);
  // ... except a component that is a host or user name.
  EXPECT_EQ(r("/usr/local/jdoe/lib/libnccl.so"), "/usr/local/<user>/lib/libnccl.so");
}

TEST(ReportRedact, WhatIsNotAnAbsolutePathIsLeftAlone) {
  for (const char* text : {"12.3 GB/s", "1/2", "read/write", "./health.csv", "tools/report/report_plots.py", "a / b",
                           "https://github.com/NVIDIA/nccl/issues", "row reads from / writes to column", "/"})
    EXPECT_EQ(r(text), text);
  EXPECT_EQ(r("file:///home/jdoe/x.txt"), "file://<path>/x.txt");
}

TEST(ReportRedact, DirectoriesGluedToOtherTextAreStillHidden) {
  EXPECT_EQ(r("-I/home/jdoe/include"), "-I<home>/include");
  EXPECT_EQ(r("prefix=x/home/jdoe/work"), "prefix=x<cwd>");
  // Only whole directories: /home/jdoeX is someone else's.
  EXPECT_EQ(r("-I/home/jdoeX/include"), "-I/home/jdoeX/include");
}

TEST(ReportRedact, HostNamesInEveryForm) {
  EXPECT_EQ(r("node17"), "<host>");
  EXPECT_EQ(r("running on node17 (NODE17.cluster.example.org), ssh node17.cluster"),
            "running on <host> (<host>), ssh <host>");
  EXPECT_EQ(r("node17:4123:4123 [0] NCCL INFO"), "<host>:4123:4123 [0] NCCL INFO");
  // Whole tokens only: another word that contains it, or another host, is not it.
  EXPECT_EQ(r("node170 xnode17 node17x"), "node170 xnode17 node17x");
}

TEST(ReportRedact, UserNamesAsWholeTokensOnly) {
  EXPECT_EQ(r("jdoe ran it; jdoe's job; jdoe@node17"), "<user> ran it; <user>'s job; <user>@<host>");
  // Joined to other words by a character that is no letter or digit, it is still the name.
  EXPECT_EQ(r("jdoex ajdoe jdoe_x jdoe-x jdoe.x"), "jdoex ajdoe <user>_x <user>-x <user>.x");
  EXPECT_EQ(r("/srv/jdoe"), "<path>/<user>");
}

TEST(ReportRedact, ShortAndCommonNamesOnlyWhereTheyStandAsAnIdentity) {
  Identity id;
  id.hostNames = {"a"};
  id.userNames = {"gpu", "root"};
  id.homeDirs = {"/root"};
  // Words of the report's own text stay.
  const std::string prose =
      "a GPU on a pair: gpu 0 of an a100; record gpu; link pcie-root; the CPU root complex; pcie-sys";
  EXPECT_EQ(r(prose, id), prose);
  // As identities they go: a path component, either side of '@', the whole text (a variable's value).
  EXPECT_EQ(r("/srv/gpu/logs/x.txt", id), "<path>/x.txt");
  EXPECT_EQ(r("/data/root", id), "<path>/<user>");
  EXPECT_EQ(r("/usr/local/gpu/bin", id), "/usr/local/<user>/bin");
  EXPECT_EQ(r("gpu@a and root@a", id), "<user>@<host> and <user>@<host>");
  EXPECT_EQ(r("a", id), "<host>");
  EXPECT_EQ(r(" root\n", id), " <user>\n");
  EXPECT_EQ(r("/root/.cache", id), "<path>/.cache");
  EXPECT_EQ(r("/root", id), "<home>");
}

TEST(ReportRedact, NamesJoinedToOtherWordsAreStillHidden) {
  Identity id;
  id.hostNames = {"node17-zq"};
  id.userNames = {"jdoe7731"};
  EXPECT_EQ(r("SYMMEM_TABLE=/scratch/jdoe7731-table.txt", id), "SYMMEM_TABLE=<path>/<user>-table.txt");
  EXPECT_EQ(r("NCCL_DEBUG_FILE=nccl.node17-zq.%p.log", id), "NCCL_DEBUG_FILE=nccl.<host>.%p.log");
  EXPECT_EQ(r("NCCL_SOCKET_IFNAME=ib-jdoe7731", id), "NCCL_SOCKET_IFNAME=ib-<user>");
  // A file named after the host keeps the rest of its name, as a path or as a word.
  EXPECT_EQ(r("SYMMEM_TOPO_FILE=/srv/node17-zq.topo.txt", id), "SYMMEM_TOPO_FILE=<path>/<host>.topo.txt");
  EXPECT_EQ(r("read node17-zq.topo.txt", id), "read <host>");  // as a word: a qualified host name
  EXPECT_EQ(r("NODE17-ZQ_ib0 jdoe7731's", id), "<host>_ib0 <user>'s");
  // Short and common names still only as an identity: "root" stays in "pcie-root", "gpu" in "gpu_a".
  Identity common;
  common.userNames = {"root", "gpu"};
  EXPECT_EQ(r("link pcie-root, column gpu_a", common), "link pcie-root, column gpu_a");
}

TEST(ReportRedact, TheCheckFindsNamesAndDirectoriesAnywhere) {
  const Redactor redact(jdoe());
  EXPECT_TRUE(redact.leftovers("nothing of theirs, <user>@<host> in <home>").empty());
  EXPECT_EQ(redact.leftovers("tag xjdoey"), std::vector<std::string>{"the user name"});
  EXPECT_EQ(redact.leftovers("NODE17x"), std::vector<std::string>{"the host name"});
  EXPECT_EQ(redact.leftovers("a=/home/jdoe/work/b"),
            (std::vector<std::string>{"the user name", "the home directory", "the current directory"}));
  // What redaction leaves, the check does not find; what the check finds, redactAnywhere removes.
  for (const char* text : {"jdoe@node17:/home/jdoe$ ls", "xjdoey node17x -I/home/jdoeX/include",
                           "/home/jdoe/work/symmem-report-20261201-130452/table.txt"}) {
    const std::string once = redact(text);
    const std::string anywhere = redact.redactAnywhere(once);
    EXPECT_TRUE(redact.leftovers(anywhere).empty()) << text << " -> " << anywhere;
    EXPECT_EQ(redact.redactAnywhere(anywhere), anywhere) << text;
  }
  EXPECT_EQ(redact.redactAnywhere("xjdoey node17x"), "x<user>y <host>x");
}

TEST(ReportRedact, AReportFolderWithASpaceOrALineBreakIsHiddenWhole) {
  Identity id;
  id.reportDirs = {"/srv/my reports/r 1", "/srv/x\nevil"};
  const Redactor redact(id);
  EXPECT_EQ(redact("--csv /srv/my reports/r 1/health.csv done"), "--csv ./health.csv done");
  EXPECT_EQ(redact("in /srv/my reports/r 1"), "in .");
  EXPECT_EQ(redact("wrote /srv/x\nevil/table.txt"), "wrote ./table.txt");
}

TEST(ReportRedact, WhichNamesAreReplacedEverywhere) {
  EXPECT_TRUE(redactedEverywhere("jdoe"));
  EXPECT_TRUE(redactedEverywhere("node17"));
  EXPECT_FALSE(redactedEverywhere("ab"));
  EXPECT_FALSE(redactedEverywhere("a"));
  EXPECT_FALSE(redactedEverywhere("root"));
  EXPECT_FALSE(redactedEverywhere("GPU"));
  EXPECT_FALSE(redactedEverywhere("localhost"));
}

TEST(ReportRedact, RedactingTwiceChangesNothing) {
  Identity id = jdoe();
  id.userNames.push_back("cwd");  // names equal to a marker's word must not eat the markers
  id.hostNames.push_back("home");
  const Redactor redact(id);
  const char* texts[] = {
      "plugin: /opt/x/lib/libnccl-tuner-symmem.so and /home/jdoe/work/symmem-report-20261201-130452/table.txt",
      "jdoe@node17:/home/jdoe$ ls ~/x/y -I/home/jdoe/include",
      "file:///srv/a/b https://example.org/a/b /proc/driver/nvidia/version",
      "home cwd <path>/x <host> <user> <home> <cwd>",
  };
  for (const char* t : texts) {
    const std::string once = redact(t);
    EXPECT_EQ(redact(once), once) << t;
  }
  EXPECT_EQ(redact("<path>/x <host>"), "<path>/x <host>");
}

TEST(ReportRedact, AnEmptyIdentityStillHidesPaths) {
  const Redactor redact{Identity{}};
  EXPECT_EQ(redact("/opt/x/y and /proc/cpuinfo"), "<path>/y and /proc/cpuinfo");
  EXPECT_EQ(redact(""), "");
}

}  // namespace
}  // namespace symmem::report
