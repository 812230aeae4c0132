// SPDX-License-Identifier: Apache-2.0
// Files a user names can be anything: a FIFO no one writes, /dev/zero, a directory, a huge file. Each
// must give an error that says what it is, at once, without reading it whole.
#include "core/bounded_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "core/table_file.h"
#include "tests/unit/temp_file.h"
#include "topology/topology_file.h"

namespace symmem {
namespace {

// A directory under /tmp with a FIFO in it, both removed on destruction. While it lives, a thread
// keeps trying to open the FIFO for writing without blocking: a reader stuck in a blocking open is
// released (it then sees an empty file), so a reader that does block makes the test fail instead of
// hanging the test binary.
class FifoInTempDir {
 public:
  FifoInTempDir() {
    char pattern[] = "/tmp/symmem-fifo-XXXXXX";
    if (mkdtemp(pattern) == nullptr) return;
    dir_ = pattern;
    path_ = dir_ + "/table.fifo";
    if (mkfifo(path_.c_str(), 0600) != 0) path_.clear();
    rescuer_ = std::thread([this] {
      const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!stop_.load() && std::chrono::steady_clock::now() < giveUp) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        const int fd = path_.empty() ? -1 : ::open(path_.c_str(), O_WRONLY | O_NONBLOCK);
        if (fd >= 0) ::close(fd);
      }
    });
  }
  ~FifoInTempDir() {
    stop_.store(true);
    if (rescuer_.joinable()) rescuer_.join();
    if (!path_.empty()) ::unlink(path_.c_str());
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  FifoInTempDir(const FifoInTempDir&) = delete;
  FifoInTempDir& operator=(const FifoInTempDir&) = delete;

  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, path_;
  std::atomic<bool> stop_{false};
  std::thread rescuer_;
};

bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(BoundedFile, ReadsARegularFileWhole) {
  const testing::TempFile file("line one\nline two\n");
  ASSERT_TRUE(file.ok());
  const BoundedFileText r = readBoundedFile(file.path(), 1024);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.text, "line one\nline two\n");
}

TEST(BoundedFile, AFileOfExactlyTheLimitIsRead) {
  const testing::TempFile file(std::string(100, 'x'));
  EXPECT_TRUE(readBoundedFile(file.path(), 100).ok());
  const BoundedFileText over = readBoundedFile(file.path(), 99);
  EXPECT_FALSE(over.ok());
  EXPECT_EQ(over.error, file.path() + ": larger than the limit of 99 bytes for this file");
  EXPECT_TRUE(over.text.empty());
}

TEST(BoundedFile, AFifoIsRefusedAtOnce) {
  const FifoInTempDir fifo;
  ASSERT_FALSE(fifo.path().empty());
  const BoundedFileText r = readBoundedFile(fifo.path(), 1024);
  EXPECT_EQ(r.error, fifo.path() + ": is a FIFO (named pipe), not a regular file");
}

TEST(BoundedFile, ADirectoryIsNamedAsOne) {
  const FifoInTempDir fifo;
  const BoundedFileText r = readBoundedFile(fifo.dir(), 1024);
  EXPECT_EQ(r.error, fifo.dir() + ": is a directory, not a file");
}

TEST(BoundedFile, DevZeroIsACharacterDeviceAndNotRead) {
  const BoundedFileText r = readBoundedFile("/dev/zero", 1024);
  EXPECT_EQ(r.error, "/dev/zero: is a character device, not a regular file");
}

TEST(BoundedFile, AMissingFileSaysWhy) {
  const BoundedFileText r = readBoundedFile("/nonexistent/dir/x", 1024);
  EXPECT_EQ(r.error, "/nonexistent/dir/x: cannot open: No such file or directory");
}

TEST(BoundedFile, ProcFilesThatReportNoSizeAreReadToTheEnd) {
  const BoundedFileText r = readBoundedFile("/proc/self/status", 1 << 20);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(mentions(r.text, "Name:")) << r.text;
}

// ---- The files the plugin and the tools read go through it ----

TEST(BoundedFile, TableFileFromAFifoFailsAtOnce) {
  const FifoInTempDir fifo;
  ASSERT_FALSE(fifo.path().empty());
  const TableFileResult r = readTableFile(fifo.path());
  EXPECT_EQ(r.error, fifo.path() + ": is a FIFO (named pipe), not a regular file");
}

TEST(BoundedFile, TableFileThatIsADirectoryIsNotAnEmptyFile) {
  const FifoInTempDir fifo;
  const TableFileResult r = readTableFile(fifo.dir());
  EXPECT_EQ(r.error, fifo.dir() + ": is a directory, not a file");
}

TEST(BoundedFile, TableFileLargerThanItsLimitIsRefused) {
  std::string text = "symmem-table 1\n";
  while (text.size() <= kTableFileMaxBytes) text += "# padding padding padding padding padding padding\n";
  const testing::TempFile file(text);
  ASSERT_TRUE(file.ok());
  const TableFileResult r = readTableFile(file.path());
  EXPECT_EQ(r.error,
            file.path() + ": larger than the limit of " + std::to_string(kTableFileMaxBytes) + " bytes for this file");
}

TEST(BoundedFile, TableFileFromDevZeroIsRefused) {
  const TableFileResult r = readTableFile("/dev/zero");
  EXPECT_EQ(r.error, "/dev/zero: is a character device, not a regular file");
}

TEST(BoundedFile, TopologyFileFromAFifoFailsAtOnce) {
  const FifoInTempDir fifo;
  ASSERT_FALSE(fifo.path().empty());
  const auto t = loadTopologyFile(fifo.path());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error(), fifo.path() + ": is a FIFO (named pipe), not a regular file");
}

TEST(BoundedFile, TopologyFilesThatAreDevicesOrDirectoriesAreNamed) {
  const FifoInTempDir fifo;
  const std::string paths[] = {"/dev/zero", fifo.dir()};
  const auto t = loadTopologyFiles(paths);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error(), "/dev/zero: is a character device, not a regular file");
  const auto d = loadTopologyFile(fifo.dir());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error(), fifo.dir() + ": is a directory, not a file");
}

TEST(BoundedFile, TopologyFileLargerThanItsLimitIsRefused) {
  // Sparse: the size is past the limit without writing 16 MiB.
  const testing::TempFile file("GPU0\n");
  ASSERT_TRUE(file.ok());
  ASSERT_EQ(::truncate(file.path().c_str(), static_cast<off_t>(kTopologyFileMaxBytes) + 1), 0);
  const auto t = loadTopologyFile(file.path());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error(), file.path() + ": larger than the limit of " + std::to_string(kTopologyFileMaxBytes) +
                           " bytes for this file");
}

}  // namespace
}  // namespace symmem
