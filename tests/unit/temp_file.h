// SPDX-License-Identifier: Apache-2.0
#pragma once
// A file with given contents, or an empty folder, under /tmp for the length of a test; removed on
// destruction. And a whole file read back.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace symmem::testing {

class TempFile {
 public:
  explicit TempFile(const std::string& contents, const char* stem = "symmem-test") {
    std::string pattern = std::string("/tmp/") + stem + "-XXXXXX";
    int fd = mkstemp(pattern.data());
    if (fd >= 0) {
      ok_ = write(fd, contents.data(), contents.size()) == static_cast<ssize_t>(contents.size());
      close(fd);
      path_ = pattern;
    }
  }
  ~TempFile() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  bool ok() const { return ok_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool ok_ = false;
};

class TempDir {
 public:
  explicit TempDir(const char* stem = "symmem-test") {
    std::string pattern = std::string("/tmp/") + stem + "-XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string readWholeFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace symmem::testing
