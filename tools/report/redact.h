// SPDX-License-Identifier: Apache-2.0
#pragma once
// What symmem-report hides before it writes a byte: the names and directories that say whose machine
// and whose files these are. Every text of the report (the tools' outputs, their CSVs, the commands,
// the environment's values, report.md) passes through one Redactor built from the identity to hide.
// Pure: the identity is plain values the caller gathered; docs/report.md describes the rules.
//
//   the report folder's absolute path     -> "."          (and anything under it: ./health.csv)
//   the home directory, the current one   -> <home>, <cwd> (when the whole path is that directory)
//   every other absolute path             -> <path>/basename, except under keptPathPrefixes()
//   the host name (and its short form)    -> <host>       (also its qualified forms: host.example.com)
//   the user name                         -> <user>
//
// A name that is also an ordinary word of the report (at most 2 characters, or in ordinaryWords(): user
// "root", "gpu", host "node") is replaced only where it stands as an identity: a component of an
// absolute path, either side of '@', or the whole text (an environment variable's value); replacing
// every "a" or "root" would garble the tables while hiding nothing a reader could tie to a person, and
// user "root" never touches "pcie-root". Any other name is replaced wherever it stands between two
// characters that are not letters or digits, also joined to other words ("jdoe-table.txt" ->
// "<user>-table.txt", "nccl.node17.%p.log" -> "nccl.<host>.%p.log").
//
// leftovers() is the check of a finished text: any of those names anywhere, even inside a longer word
// ("xjdoe7"), and any of the directories; redactAnywhere() replaces what it finds.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace symmem::report {

// The identity to hide, as gathered from the process (any field may be empty; duplicates are fine).
struct Identity {
  std::vector<std::string> hostNames;    // gethostname, uname's nodename
  std::vector<std::string> userNames;    // getpwuid, $USER, $LOGNAME, $SUDO_USER
  std::vector<std::string> homeDirs;     // getpwuid's directory, $HOME (absolute)
  std::vector<std::string> currentDirs;  // getcwd, $PWD (absolute)
  std::vector<std::string> reportDirs;   // the report folder, as given and resolved, and its staging folder
};

inline constexpr std::string_view kHostMarker = "<host>";
inline constexpr std::string_view kUserMarker = "<user>";
inline constexpr std::string_view kHomeMarker = "<home>";
inline constexpr std::string_view kCwdMarker = "<cwd>";
inline constexpr std::string_view kPathMarker = "<path>";

// Absolute paths kept as written: system locations that name a fact of the machine and no one's files
// (/proc/driver/nvidia/version as a source, /dev/nvidia0, /usr/local/cuda/lib64/libcudart.so.12).
// A component of a kept path equal to a host or user name is still replaced.
const std::vector<std::string_view>& keptPathPrefixes();

// Words of the report's own text that a host or user name may also be ("root", "gpu", "node", ...).
const std::vector<std::string_view>& ordinaryWords();

// Whether `name` is replaced wherever it stands as a whole token (false: only where it stands as an
// identity, see above). False for names of at most 2 characters and for ordinaryWords() (any case).
bool redactedEverywhere(std::string_view name);

class Redactor {
 public:
  explicit Redactor(const Identity& identity);

  // The text with the identity replaced. Idempotent: redacting a redacted text changes nothing.
  std::string operator()(std::string_view text) const;

  // What of the identity `text` still holds, anywhere (markers aside): "the host name", "the user
  // name", "the home directory", "the current directory", "the report folder's path". Empty: nothing.
  std::vector<std::string> leftovers(std::string_view text) const;
  // The text with every leftover replaced, also inside longer words (for a text leftovers() flagged).
  std::string redactAnywhere(std::string_view text) const;

 private:
  std::string redactPaths(std::string_view text) const;
  std::string replacePath(std::string_view path) const;
  std::string namedComponent(std::string_view component) const;
  std::string replaceGluedDirs(std::string_view text) const;
  // The report folder, home and current directories with their markers, longest first (the current
  // directory is often inside the home).
  std::vector<std::pair<std::string_view, std::string_view>> directoriesLongestFirst() const;
  std::string redactNames(std::string_view text) const;
  std::string redactJoinedNames(std::string_view text, bool insideWords) const;
  std::string_view markerForName(std::string_view token, bool identityContext, bool qualifiedForms = true) const;

  std::vector<std::string> hosts_;  // lower case, full and short forms
  std::vector<std::string> users_;
  std::vector<std::string> homeDirs_;     // longest first, no trailing '/'
  std::vector<std::string> currentDirs_;  // longest first
  std::vector<std::string> reportDirs_;   // longest first
};

}  // namespace symmem::report
