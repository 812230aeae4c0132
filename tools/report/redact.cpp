// SPDX-License-Identifier: Apache-2.0
#include "tools/report/redact.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace symmem::report {

namespace {

bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// Characters a path is made of. ':' (a PATH list), ',' (a CSV field), quotes, '=' and brackets end it.
bool isPathChar(char c) {
  return isWordChar(c) || c == '.' || c == '-' || c == '+' || c == '~' || c == '%' || c == '@' || c == '#' || c == '/';
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

constexpr std::array<std::string_view, 5> kMarkers = {kHostMarker, kUserMarker, kHomeMarker, kCwdMarker, kPathMarker};

// Whether the text before `pos` ends with one of the markers (what follows was redacted already).
bool afterMarker(std::string_view text, size_t pos) {
  const std::string_view before = text.substr(0, pos);
  return std::any_of(kMarkers.begin(), kMarkers.end(), [&](std::string_view m) { return before.ends_with(m); });
}

// Whether [pos, pos + len) overlaps a marker of the text ("home" inside "<home>" is the marker's).
bool insideMarker(std::string_view text, size_t pos, size_t len) {
  for (std::string_view m : kMarkers) {
    const size_t from = pos >= m.size() ? pos - m.size() + 1 : 0;
    const size_t found = text.find(m, from);
    if (found != std::string_view::npos && found < pos + len) return true;
  }
  return false;
}

bool isAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Where `name` occurs in `text` from `from` on: hosts in any case, users exactly.
size_t findName(std::string_view text, std::string_view name, bool anyCase, size_t from) {
  if (!anyCase) return text.find(name, from);
  for (size_t pos = from; pos + name.size() <= text.size(); ++pos) {
    size_t k = 0;
    while (k < name.size() &&
           std::tolower(static_cast<unsigned char>(text[pos + k])) == std::tolower(static_cast<unsigned char>(name[k])))
      ++k;
    if (k == name.size()) return pos;
  }
  return std::string_view::npos;
}

// Where a directory occurs as itself: followed by the end, a '/', or a character no path holds.
bool wholeDirAt(std::string_view text, size_t pos, size_t len) {
  const size_t after = pos + len;
  return after == text.size() || text[after] == '/' || !isPathChar(text[after]);
}

// A path starts at position `pos` when what precedes it cannot be part of a word or a path ("GB/s",
// "1/2" and "./x" are not absolute paths).
bool pathStartsAt(std::string_view text, size_t pos) {
  return pos == 0 || (!isPathChar(text[pos - 1]) && !afterMarker(text, pos));
}

// The end of the path token that starts at `pos`, without a sentence's final '.'.
size_t pathEnd(std::string_view text, size_t pos) {
  size_t end = pos;
  while (end < text.size() && isPathChar(text[end])) ++end;
  while (end > pos + 1 && text[end - 1] == '.') {
    const size_t slash = text.rfind('/', end - 1);
    const std::string_view last = text.substr(slash + 1, end - slash - 1);
    if (last.find_first_not_of('.') == std::string_view::npos) break;  // "..", "." are components
    --end;
  }
  return end;
}

void sortLongestFirst(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// Absolute directories without trailing '/'; "/" and relative names are dropped (they would match
// every path, or none).
std::vector<std::string> normalisedDirs(const std::vector<std::string>& dirs) {
  std::vector<std::string> out;
  for (std::string d : dirs) {
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    if (d.size() > 1 && d.front() == '/') out.push_back(d);
  }
  sortLongestFirst(out);
  return out;
}

std::string_view trimmed(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const size_t last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

}  // namespace

const std::vector<std::string_view>& keptPathPrefixes() {
  static const std::vector<std::string_view> prefixes = {"/proc/",  "/sys/", "/dev/", "/usr/", "/lib/",
                                                         "/lib64/", "/etc/", "/bin/", "/sbin/"};
  return prefixes;
}

const std::vector<std::string_view>& ordinaryWords() {
  // The tools' own vocabulary (tables, CSV headers, path names) and the accounts every container has.
  static const std::vector<std::string_view> words = {
      "all",  "bench",  "bytes",  "cc",     "chosen",  "cuda",    "default", "driver", "field",     "gpu",
      "gpus", "health", "host",   "info",   "kernel",  "link",    "linux",   "local",  "localhost", "nccl",
      "node", "none",   "nvidia", "nvlink", "oneshot", "pair",    "path",    "pcie",   "plugin",    "pull",
      "push", "ranks",  "record", "report", "ring",    "root",    "simple",  "staged", "switch",    "symmem",
      "sys",  "table",  "test",   "tree",   "tune",    "twoshot", "unknown", "user",   "value",     "yes"};
  return words;
}

bool redactedEverywhere(std::string_view name) {
  if (name.size() <= 2) return false;
  const std::string l = lower(name);
  const auto& words = ordinaryWords();
  return std::find(words.begin(), words.end(), std::string_view(l)) == words.end();
}

Redactor::Redactor(const Identity& identity) {
  for (const std::string& h : identity.hostNames) {
    if (h.empty()) continue;
    hosts_.push_back(lower(h));
    if (const size_t dot = h.find('.'); dot != std::string::npos && dot > 0) hosts_.push_back(lower(h.substr(0, dot)));
  }
  for (const std::string& u : identity.userNames)
    if (!u.empty()) users_.push_back(u);
  sortLongestFirst(hosts_);
  sortLongestFirst(users_);
  homeDirs_ = normalisedDirs(identity.homeDirs);
  currentDirs_ = normalisedDirs(identity.currentDirs);
  reportDirs_ = normalisedDirs(identity.reportDirs);
}

std::string_view Redactor::markerForName(std::string_view token, bool identityContext, bool qualifiedForms) const {
  const std::string l = lower(token);
  for (const std::string& h : hosts_) {
    const bool matches = l == h || (qualifiedForms && l.size() > h.size() && startsWith(l, h) && l[h.size()] == '.');
    if (matches && (identityContext || redactedEverywhere(h))) return kHostMarker;
  }
  for (const std::string& u : users_)
    if (token == u && (identityContext || redactedEverywhere(u))) return kUserMarker;
  return {};
}

std::string Redactor::namedComponent(std::string_view component) const {
  // A path component that is a host or user name is one in any context: /home/gpu, /srv/a/logs. A file
  // named after the host keeps the rest of its name (node17.topo.txt -> <host>.topo.txt, below).
  const std::string_view marker = markerForName(component, true, false);
  return marker.empty() ? std::string(component) : std::string(marker);
}

std::string Redactor::replacePath(std::string_view path) const {
  std::string_view core = path;
  while (core.size() > 1 && core.back() == '/') core.remove_suffix(1);
  if (core == "/" || core.empty()) return std::string(path);
  for (const std::string& d : reportDirs_) {
    if (core == d) return ".";
    if (startsWith(core, d) && core[d.size()] == '/') return std::string(".").append(core.substr(d.size()));
  }
  for (const std::string& d : homeDirs_)
    if (core == d) return std::string(kHomeMarker);
  for (const std::string& d : currentDirs_)
    if (core == d) return std::string(kCwdMarker);
  const std::string withSlash = std::string(core) + "/";
  for (std::string_view prefix : keptPathPrefixes()) {
    if (!startsWith(withSlash, prefix)) continue;
    std::string out;
    size_t pos = 0;
    while (pos < path.size()) {
      const size_t slash = path.find('/', pos);
      const size_t end = slash == std::string_view::npos ? path.size() : slash;
      out += namedComponent(path.substr(pos, end - pos));
      if (slash == std::string_view::npos) break;
      out += '/';
      pos = slash + 1;
    }
    return out;
  }
  const size_t slash = core.rfind('/');
  return std::string(kPathMarker) + "/" + namedComponent(core.substr(slash + 1));
}

std::string Redactor::redactPaths(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  bool forcePath = false;  // after "file://": the third '/' starts a path
  while (i < text.size()) {
    const char c = text[i];
    const bool starts = forcePath || pathStartsAt(text, i);
    forcePath = false;
    if (c == '/' && starts) {
      if (i > 0 && text[i - 1] == ':' && i + 1 < text.size() && text[i + 1] == '/') {
        // A URL's "//": "file:///x" holds a path; "https://host/x" names a place, not a file here.
        out += "//";
        i += 2;
        if (i < text.size() && text[i] == '/') {
          forcePath = true;
        } else {
          while (i < text.size() && isPathChar(text[i])) out += text[i++];
        }
        continue;
      }
      const size_t end = pathEnd(text, i);
      out += replacePath(text.substr(i, end - i));
      i = end;
      continue;
    }
    if (c == '~' && starts && ((i + 1 < text.size() && text[i + 1] == '/') || text.size() == 1)) {
      // "~/x/y": under the home directory, as much someone's own as the absolute form ("~ 25 GB/s" is
      // prose; a lone "~" is the home only as the whole text).
      const size_t end = pathEnd(text, i);
      const std::string_view rest = text.substr(i + 1, end - i - 1);
      std::string_view core = rest;
      while (!core.empty() && core.back() == '/') core.remove_suffix(1);
      if (core.empty()) {
        out += std::string(kHomeMarker) + std::string(rest);
      } else {
        out += std::string(kPathMarker) + "/" + namedComponent(core.substr(core.rfind('/') + 1));
      }
      i = end;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

std::vector<std::pair<std::string_view, std::string_view>> Redactor::directoriesLongestFirst() const {
  std::vector<std::pair<std::string_view, std::string_view>> dirs;
  for (const std::string& d : reportDirs_) dirs.emplace_back(d, ".");
  for (const std::string& d : homeDirs_) dirs.emplace_back(d, kHomeMarker);
  for (const std::string& d : currentDirs_) dirs.emplace_back(d, kCwdMarker);
  std::stable_sort(dirs.begin(), dirs.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  return dirs;
}

std::string Redactor::replaceGluedDirs(std::string_view text) const {
  // The directories themselves, wherever they stand: also glued to other text ("-I/home/u/include"),
  // where a path is not recognised as one.
  const auto dirs = directoriesLongestFirst();
  std::string out(text);
  for (const auto& [dir, with] : dirs) {
    size_t pos = 0;
    while ((pos = out.find(dir, pos)) != std::string::npos) {
      const size_t after = pos + dir.size();
      const bool wholeDir = after == out.size() || out[after] == '/' || !isPathChar(out[after]);
      if (!wholeDir || afterMarker(out, pos)) {
        pos = after;
        continue;
      }
      out.replace(pos, dir.size(), with);
      pos += with.size();
    }
  }
  return out;
}

std::string Redactor::redactNames(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (!isWordChar(text[i])) {
      out += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size()) {
      if (isWordChar(text[end])) {
        ++end;
      } else if ((text[end] == '.' || text[end] == '-') && end + 1 < text.size() && isWordChar(text[end + 1])) {
        ++end;
      } else {
        break;
      }
    }
    const std::string_view token = text.substr(i, end - i);
    const bool isMarker = i > 0 && text[i - 1] == '<' && end < text.size() && text[end] == '>' &&
                          std::any_of(kMarkers.begin(), kMarkers.end(),
                                      [&](std::string_view m) { return m.substr(1, m.size() - 2) == token; });
    const bool atSign = (i > 0 && text[i - 1] == '@') || (end < text.size() && text[end] == '@');
    // After a '/', the token is a file's name: "node17.topo.txt" names a file, not a qualified host.
    const bool fileName = i > 0 && text[i - 1] == '/';
    const std::string_view marker = isMarker ? std::string_view() : markerForName(token, atSign, !fileName);
    out += marker.empty() ? token : marker;
    i = end;
  }
  return out;
}

std::string Redactor::redactJoinedNames(std::string_view text, bool insideWords) const {
  // The names that are no ordinary word, wherever they stand between two characters that are not
  // letters or digits (insideWords: anywhere at all). Longest first: "node17.example.org", "node17".
  std::vector<std::pair<std::string_view, std::string_view>> names;
  for (const std::string& h : hosts_)
    if (redactedEverywhere(h)) names.emplace_back(h, kHostMarker);
  for (const std::string& u : users_)
    if (redactedEverywhere(u)) names.emplace_back(u, kUserMarker);
  std::stable_sort(names.begin(), names.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::string out(text);
  for (const auto& [name, marker] : names) {
    const bool anyCase = marker == kHostMarker;
    size_t pos = 0;
    while ((pos = findName(out, name, anyCase, pos)) != std::string::npos) {
      const size_t end = pos + name.size();
      const bool bounded = (pos == 0 || !isAlnum(out[pos - 1])) && (end == out.size() || !isAlnum(out[end]));
      if ((!bounded && !insideWords) || insideMarker(out, pos, name.size())) {
        ++pos;
        continue;
      }
      out.replace(pos, name.size(), marker);
      pos += marker.size();
    }
  }
  return out;
}

std::vector<std::string> Redactor::leftovers(std::string_view text) const {
  std::vector<std::string> found;
  auto note = [&](const char* what) {
    if (std::find(found.begin(), found.end(), what) == found.end()) found.emplace_back(what);
  };
  for (const std::string& h : hosts_) {
    if (!redactedEverywhere(h)) continue;
    for (size_t pos = findName(text, h, true, 0); pos != std::string_view::npos; pos = findName(text, h, true, pos + 1))
      if (!insideMarker(text, pos, h.size())) note("the host name");
  }
  for (const std::string& u : users_) {
    if (!redactedEverywhere(u)) continue;
    for (size_t pos = text.find(u); pos != std::string_view::npos; pos = text.find(u, pos + 1))
      if (!insideMarker(text, pos, u.size())) note("the user name");
  }
  const std::pair<const std::vector<std::string>*, const char*> dirs[] = {{&reportDirs_, "the report folder's path"},
                                                                          {&homeDirs_, "the home directory"},
                                                                          {&currentDirs_, "the current directory"}};
  for (const auto& [list, what] : dirs)
    for (const std::string& d : *list)
      for (size_t pos = text.find(d); pos != std::string_view::npos; pos = text.find(d, pos + 1))
        if (wholeDirAt(text, pos, d.size())) note(what);
  return found;
}

std::string Redactor::redactAnywhere(std::string_view text) const {
  std::string out = redactJoinedNames((*this)(text), true);
  // A directory left (it stood where no path starts): the same markers the paths get.
  const auto dirs = directoriesLongestFirst();
  for (const auto& [dir, with] : dirs) {
    size_t pos = 0;
    while ((pos = out.find(dir, pos)) != std::string::npos) {
      if (!wholeDirAt(out, pos, dir.size())) {
        ++pos;
        continue;
      }
      out.replace(pos, dir.size(), with);
      pos += with.size();
    }
  }
  return out;
}

std::string Redactor::operator()(std::string_view text) const {
  // The whole text one name: an environment variable's value ("NCCL_HOSTID=a").
  const std::string_view word = trimmed(text);
  if (!word.empty()) {
    if (const std::string_view marker = markerForName(word, true);
        !marker.empty() && word.find_first_of(" \t\r\n/") == std::string_view::npos) {
      const size_t at = text.find(word);
      return std::string(text.substr(0, at)) + std::string(marker) + std::string(text.substr(at + word.size()));
    }
  }
  // The report folder first, wherever it stands: its name may hold a space or a line break, where a
  // path would end before it is recognised whole.
  std::string out(text);
  for (const std::string& d : reportDirs_) {
    size_t pos = 0;
    while ((pos = out.find(d, pos)) != std::string::npos) {
      if (!wholeDirAt(out, pos, d.size()) || afterMarker(out, pos)) {
        ++pos;
        continue;
      }
      // "DIR/" alone is the folder too: "." rather than "./".
      const size_t after = pos + d.size();
      const bool lone =
          after < out.size() && out[after] == '/' && (after + 1 == out.size() || !isPathChar(out[after + 1]));
      out.erase(pos, d.size() + (lone ? 1 : 0));
      out.insert(pos, 1, '.');
      pos += 1;
    }
  }
  return redactJoinedNames(redactNames(replaceGluedDirs(redactPaths(out))), false);
}

}  // namespace symmem::report
