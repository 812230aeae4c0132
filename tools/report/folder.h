// SPDX-License-Identifier: Apache-2.0
#pragma once
// symmem-report's folder, held open: every file is created, read and removed relative to the folder's
// directory handle, never through a name that someone could swap for a link while the report runs.
//
//   ReportFolder f;
//   f.open("symmem-report-x", error);     // created, or an existing empty folder of this user's
//   f.stagedPath("health.csv")           // "/proc/self/fd/5/health.csv": the tools write there
//   f.readStaged("health.csv", ...)      // what a tool wrote, never through a link
//   f.writeNew("health.txt", text)       // O_CREAT | O_EXCL | O_NOFOLLOW inside the folder
//   f.removeStaging()                    // what the tools left, then the staging folder itself
//
// The staging folder (".staging", 0700) holds the tools' outputs before they are redacted. The tools
// are given paths through /proc/self/fd/N, the handle they inherit, so a rename of ".staging" or of
// the folder during the run changes nothing about where they write. An --out that another user owns
// or can write is refused before anything is written: that user could otherwise swap what it holds.
// removeStagingNow() is the same cleanup in a form a signal handler may call (a second Ctrl-C must not
// leave unredacted outputs behind).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace symmem::report {

inline constexpr const char* kStagingName = ".staging";

struct FolderEntry {
  std::string name;
  uint64_t bytes = 0;
};

class ReportFolder {
 public:
  ReportFolder() = default;
  ~ReportFolder();
  ReportFolder(const ReportFolder&) = delete;
  ReportFolder& operator=(const ReportFolder&) = delete;

  // Creates `given` (its parent must exist) or takes it when it is an existing empty folder; refuses a
  // link, a folder another user owns or can write (group or others), and anything not a folder. Then
  // creates the staging folder inside it. False with `error` said for the user.
  bool open(const std::string& given, std::string& error);

  const std::string& absolutePath() const { return absolute_; }  // --out made absolute
  const std::string& resolvedPath() const { return resolved_; }  // with links in its parents resolved
  // The staging folder's name for the tools and for redaction: /proc/self/fd/N.
  const std::string& stagingHandlePath() const { return stagingHandle_; }
  std::string stagingPath() const { return resolved_ + "/" + kStagingName; }
  // The folder's own name for a tool that writes into it (the plots): /proc/self/fd/M.
  const std::string& folderHandlePath() const { return folderHandle_; }

  // The path a tool writes `name` to: through the inherited handle of the staging folder.
  std::string stagedPath(const std::string& name) const { return stagingHandle_ + "/" + name; }
  bool stagedExists(const std::string& name) const;

  // A regular file the tools left in staging, at most maxBytes. False with `error` ("" when the file is
  // not there at all).
  bool readStaged(const std::string& name, size_t maxBytes, std::string& text, std::string& error) const;
  // A file the folder holds (not a link, not staging), at most maxBytes.
  bool readFile(const std::string& name, size_t maxBytes, std::string& text, std::string& error) const;

  // Writes a new file of the folder; never replaces one, never follows a link. "" or what went wrong.
  std::string writeNew(const std::string& name, const std::string& text) const;
  // Removes one file of the folder (not following links). "" or what went wrong.
  std::string remove(const std::string& name) const;

  // Removes the staging folder's files and the folder; problems said on stderr.
  void removeStaging();

  // The folder's regular files (links and folders left out), in name order, with their sizes.
  std::vector<FolderEntry> files() const;

  // Async-signal-safe: unlinks every entry of the staging folder and the folder itself, through the
  // handles this object holds. For a signal handler; does nothing once removeStaging() has run.
  void removeStagingNow() const;

  int folderFd() const { return folderFd_; }
  int stagingFd() const { return stagingFd_; }

 private:
  int folderFd_ = -1;
  int stagingFd_ = -1;          // inherited by the tools (not close-on-exec), closed by removeStaging()
  int inheritedFolderFd_ = -1;  // the folder again, inherited by the tools
  std::string absolute_;
  std::string resolved_;
  std::string stagingHandle_;
  std::string folderHandle_;
};

// Why a folder with this owner and mode may not be a report folder for `uid`, or "" when it may.
std::string foreignFolderProblem(uint32_t ownerUid, uint32_t mode, uint32_t uid);

}  // namespace symmem::report
