// SPDX-License-Identifier: Apache-2.0
#include "core/table_file.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <sstream>

#include "core/bounded_file.h"
#include "core/printable_text.h"
#include "core/settings.h"
#include "core/symmetric_limits.h"

namespace symmem {

namespace {

constexpr uint64_t kMaxBandBytes = 1ull << 32;  // 4 GiB: a band's upto beyond this is a typo
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
constexpr int kMaxChannels = 64;
constexpr std::string_view kFormatWritten = "2";  // what formatTable writes: with the end line

// Thresholds::source is a plain pointer; file-derived sources live for the whole process.
const char* intern(const std::string& s) {
  static std::mutex mutex;
  static std::set<std::string> pool;
  std::lock_guard<std::mutex> lock(mutex);
  return pool.insert(s).first->c_str();
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string_view> splitWords(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

bool parseRanks(std::string_view text, int& first, int& last) {
  auto num = [](std::string_view s, int& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
  };
  if (text == "9+") {
    first = last = kBeyondEightRanks;
    return true;
  }
  if (auto dash = text.find('-'); dash != std::string_view::npos) {
    if (!num(text.substr(0, dash), first) || !num(text.substr(dash + 1), last)) return false;
  } else {
    if (!num(text, first)) return false;
    last = first;
  }
  return first >= 2 && last <= 8 && first <= last;
}

std::optional<Collective> parseCollective(std::string_view s) {
  for (int i = 0; i < kNumCollectives; ++i)
    if (s == collectiveName(static_cast<Collective>(i))) return static_cast<Collective>(i);
  return std::nullopt;
}

std::optional<NcclAlgo> parseAlgo(std::string_view s) {
  for (int i = -1; i < kNcclNumAlgos; ++i)
    if (s == ncclAlgoName(static_cast<NcclAlgo>(i))) return static_cast<NcclAlgo>(i);
  return std::nullopt;
}

std::optional<NcclProto> parseProto(std::string_view s) {
  for (int i = -1; i < kNcclNumProtos; ++i)
    if (s == ncclProtoName(static_cast<NcclProto>(i))) return static_cast<NcclProto>(i);
  return std::nullopt;
}

std::string rangeText(int first, int last) {
  if (first == kBeyondEightRanks) return "9+";
  return first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
}

struct LineParser {
  std::string_view fileName;
  int lineNo = 0;
  std::string error;

  // `what` quotes the file's words: control characters are escaped for the log and the terminal.
  bool fail(const std::string& what) {
    error = std::string(fileName) + ":" + std::to_string(lineNo) + ": " + printableText(what);
    return false;
  }

  // key=value pairs after the keyword; every key must be known, each at most once.
  bool keyValues(const std::vector<std::string_view>& words, const std::set<std::string>& allowed,
                 std::map<std::string, std::string>& out) {
    for (size_t i = 1; i < words.size(); ++i) {
      auto eq = words[i].find('=');
      if (eq == std::string_view::npos || eq == 0)
        return fail("expected key=value, found '" + std::string(words[i]) + "'");
      std::string key = lower(words[i].substr(0, eq));
      if (!allowed.count(key)) return fail("unknown key '" + key + "'");
      if (out.count(key)) return fail("key '" + key + "' given twice");
      out[key] = std::string(words[i].substr(eq + 1));
    }
    for (const std::string& key : allowed)
      if (!out.count(key)) return fail("missing key '" + key + "'");
    return true;
  }

  bool key(const std::map<std::string, std::string>& kv, ComputeCapability& cc, LinkClass& link, int& first,
           int& last) {
    auto c = parseCapability(kv.at("cc"));
    if (!c) return fail("bad compute capability '" + kv.at("cc") + "' (" + kCapabilityForms + ")");
    cc = *c;
    auto l = parseLinkClass(lower(kv.at("link")));
    if (!l || *l == LinkClass::Unknown)
      return fail("bad link class '" + kv.at("link") + "' (expected nvlink, pcie-switch, pcie-root or pcie-sys)");
    link = *l;
    if (!parseRanks(kv.at("ranks"), first, last))
      return fail("bad ranks '" + kv.at("ranks") + "' (expected N or N-M with 2 <= N <= M <= 8, or 9+)");
    return true;
  }

  bool bytes(const std::map<std::string, std::string>& kv, const char* name, uint64_t& out,
             uint64_t maxBytes = UINT64_MAX) {
    if (!parseBytes(kv.at(name), out)) return fail(std::string("bad size '") + kv.at(name) + "' for " + name);
    if (out > maxBytes) return fail(std::string(name) + " " + kv.at(name) + " is larger than " + formatBytes(maxBytes));
    return true;
  }

  // The symmetric limits of an entry for each world size it covers, by the kernels' rule.
  bool symmetricLimits(int first, int last, uint64_t oneShot, uint64_t twoShot) {
    for (int n = first; n <= last; ++n)
      if (std::string why = symmetricLimitProblem(n, oneShot, twoShot); !why.empty()) return fail(why);
    return true;
  }
};

std::optional<SymAlgo> parseSymAlgo(std::string_view s) {
  for (SymAlgo a : {SymAlgo::OneShot, SymAlgo::TwoShot})
    if (s == symAlgoName(a)) return a;
  return std::nullopt;
}

// An entry's key, as the file names it.
std::string keyText(ComputeCapability cc, LinkClass link, int nRanks) {
  return "cc=" + cc.str() + " link=" + std::string(linkClassName(link)) + " ranks=" + rangeText(nRanks, nRanks);
}

// One band's place: two bands of the same entry and collective with the same upto contradict each
// other (bands are sorted by upto, so only an equal upto can overlap). Symmetric bands use
// kSymBandsKey as their collective.
inline constexpr auto kSymBandsKey = static_cast<Collective>(-1);
struct BandKey {
  ComputeCapability cc;
  LinkClass link;
  int nRanks;
  Collective collective;
  uint64_t upto;
  auto operator<=>(const BandKey&) const = default;
};

}  // namespace

bool parseBytes(std::string_view text, uint64_t& out) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) return false;
  uint64_t value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc()) return false;
  const std::string unit = lower(text.substr(digits));
  uint64_t scale = 0;
  if (unit.empty() || unit == "b")
    scale = 1;
  else if (unit == "k" || unit == "kib")
    scale = 1ull << 10;
  else if (unit == "m" || unit == "mib")
    scale = 1ull << 20;
  else if (unit == "g" || unit == "gib")
    scale = 1ull << 30;
  else
    return false;
  if (value > (UINT64_MAX / scale)) return false;
  out = value * scale;
  return true;
}

std::string formatBytes(uint64_t bytes) {
  if (bytes != 0) {
    if (bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + "GiB";
    if (bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + "MiB";
    if (bytes % (1ull << 10) == 0) return std::to_string(bytes >> 10) + "KiB";
  }
  return std::to_string(bytes) + "B";
}

TableFileResult parseTableText(std::string_view text, std::string_view fileName) {
  TableFileResult result;
  LineParser p{fileName, 0, {}};
  bool sawHeader = false;
  bool endLine = false;       // the end line was read: only blank lines and comments may follow
  bool needsEndLine = false;  // format 2
  std::map<BandKey, int> bandLines;
  std::set<size_t> symEntries;  // indexes of the entries that sym lines made
  // Some editors start a UTF-8 file with a byte-order mark; it says nothing about the table.
  if (text.starts_with(kByteOrderMark)) text.remove_prefix(kByteOrderMark.size());
  auto failWith = [&](TableFileResult& r) {
    r.entries.clear();
    r.meta.clear();
    r.error = p.error;
    return r;
  };

  size_t pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() + 1 : eol + 1;
    ++p.lineNo;
    if (line.find('\0') != std::string_view::npos) {
      p.fail("NUL byte in the table text (a table file is plain text)");
      return failWith(result);
    }
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    std::vector<std::string_view> words = splitWords(line);
    if (words.empty()) continue;

    if (!sawHeader) {
      if (words.size() != 2 || words[0] != "symmem-table") {
        p.fail("expected the header 'symmem-table 2' (or 1)");
        return failWith(result);
      }
      if (words[1] != "1" && words[1] != kFormatWritten) {
        p.fail("unsupported table format version '" + std::string(words[1]) + "' (this build reads 1 and 2)");
        return failWith(result);
      }
      needsEndLine = words[1] == kFormatWritten;
      sawHeader = true;
      continue;
    }
    if (endLine) {
      p.fail("'" + std::string(words[0]) + "' after the end line (the end line is the file's last)");
      return failWith(result);
    }

    const std::string keyword = lower(words[0]);
    if (keyword == "end") {
      if (words.size() != 1) {
        p.fail("the end line is the word 'end' alone");
        return failWith(result);
      }
      endLine = true;
    } else if (keyword == "meta") {
      std::string_view rest = line.substr(line.find(words[0]) + words[0].size());
      while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) rest.remove_prefix(1);
      while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.remove_suffix(1);
      result.meta.emplace_back(rest);
    } else if (keyword == "entry") {
      std::map<std::string, std::string> kv;
      ComputeCapability cc;
      LinkClass link{};
      int first = 0, last = 0;
      uint64_t one = 0, two = 0;
      if (!p.keyValues(words, {"cc", "link", "ranks", "oneshot", "twoshot"}, kv) || !p.key(kv, cc, link, first, last) ||
          !p.bytes(kv, "oneshot", one) || !p.bytes(kv, "twoshot", two) || !p.symmetricLimits(first, last, one, two))
        return failWith(result);
      if (two != 0 && two < one) {
        p.fail("twoshot (" + kv["twoshot"] + ") is below oneshot (" + kv["oneshot"] + "); use 0 to turn two-shot off");
        return failWith(result);
      }
      const char* source = intern(std::string(fileName) + ":" + std::to_string(p.lineNo));
      for (int n = first; n <= last; ++n) {
        auto dup = std::find_if(result.entries.begin(), result.entries.end(),
                                [&](const Thresholds& t) { return t.cc == cc && t.link == link && t.nRanks == n; });
        if (dup != result.entries.end()) {
          p.fail("entry cc=" + cc.str() + " link=" + std::string(linkClassName(link)) + " ranks=" + rangeText(n, n) +
                 " defined twice (first at " + dup->source + ")");
          return failWith(result);
        }
        Thresholds t;
        t.cc = cc;
        t.link = link;
        t.nRanks = n;
        setPushLimits(t, one, two);
        t.source = source;
        result.entries.push_back(t);
      }
    } else if (keyword == "sym") {
      std::map<std::string, std::string> kv;
      ComputeCapability cc;
      LinkClass link{};
      int first = 0, last = 0;
      SymBand band;
      if (!p.keyValues(words, {"cc", "link", "ranks", "upto", "algo", "variant"}, kv) ||
          !p.key(kv, cc, link, first, last) || !p.bytes(kv, "upto", band.maxBytes, kMaxBandBytes))
        return failWith(result);
      if (band.maxBytes == 0) {
        p.fail("upto=0 covers no size (a sym band holds the sizes above the previous band up to upto)");
        return failWith(result);
      }
      auto algo = parseSymAlgo(lower(kv["algo"]));
      auto variant = parseSymVariant(lower(kv["variant"]));
      if (!algo) {
        p.fail("bad algo '" + kv["algo"] + "' for a sym band (oneshot, twoshot)");
        return failWith(result);
      }
      if (!variant) {
        p.fail("bad variant '" + kv["variant"] + "' (push, pull, staged, halves)");
        return failWith(result);
      }
      band.algo = *algo;
      band.variant = *variant;
      for (int n = first; n <= last; ++n) {
        auto it = std::find_if(result.entries.begin(), result.entries.end(),
                               [&](const Thresholds& t) { return t.cc == cc && t.link == link && t.nRanks == n; });
        if (it == result.entries.end()) {
          // The first sym line of a key makes its entry.
          Thresholds t;
          t.cc = cc;
          t.link = link;
          t.nRanks = n;
          t.source = intern(std::string(fileName) + ":" + std::to_string(p.lineNo));
          result.entries.push_back(t);
          symEntries.insert(result.entries.size() - 1);
          it = result.entries.end() - 1;
        } else if (!symEntries.count(static_cast<size_t>(it - result.entries.begin()))) {
          p.fail("entry " + keyText(cc, link, n) + " already has its symmetric sizes from oneshot/twoshot (" +
                 it->source + "); give them there or as sym lines, not both");
          return failWith(result);
        }
        const auto [seen, inserted] =
            bandLines.try_emplace(BandKey{cc, link, n, kSymBandsKey, band.maxBytes}, p.lineNo);
        if (!inserted) {
          p.fail("a sym band for sizes up to " + formatBytes(band.maxBytes) + " is already given (" +
                 std::string(fileName) + ":" + std::to_string(seen->second) + ")");
          return failWith(result);
        }
        if (it->numSymBands == kMaxSymBands) {
          p.fail("more than " + std::to_string(kMaxSymBands) + " sym bands for one entry");
          return failWith(result);
        }
        std::array<SymBand, kMaxSymBands + 1> bands{};
        std::copy(it->symBands.begin(), it->symBands.begin() + it->numSymBands, bands.begin());
        bands[it->numSymBands] = band;
        setSymBands(*it, std::span<const SymBand>(bands.data(), static_cast<size_t>(it->numSymBands) + 1));
        if (!p.symmetricLimits(n, n, it->oneShotMaxBytes, it->twoShotMaxBytes)) return failWith(result);
      }
    } else if (keyword == "band") {
      std::map<std::string, std::string> kv;
      ComputeCapability cc;
      LinkClass link{};
      int first = 0, last = 0;
      NcclBand band;
      if (!p.keyValues(words, {"cc", "link", "ranks", "coll", "upto", "algo", "proto", "channels"}, kv) ||
          !p.key(kv, cc, link, first, last) || !p.bytes(kv, "upto", band.maxBytes, kMaxBandBytes))
        return failWith(result);
      if (band.maxBytes == 0) {
        p.fail("upto=0 covers no size (a band holds the sizes above the previous band up to upto)");
        return failWith(result);
      }
      auto coll = parseCollective(lower(kv["coll"]));
      auto algo = parseAlgo(lower(kv["algo"]));
      auto proto = parseProto(lower(kv["proto"]));
      int64_t channels = -1;
      if (!coll) {
        p.fail("bad coll '" + kv["coll"] + "' (allreduce, allgather, reducescatter, broadcast, reduce)");
        return failWith(result);
      }
      if (!algo) {
        p.fail("bad algo '" + kv["algo"] + "' (any, tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat)");
        return failWith(result);
      }
      if (!proto) {
        p.fail("bad proto '" + kv["proto"] + "' (any, ll, ll128, simple)");
        return failWith(result);
      }
      if (!parseInt64(kv["channels"], channels) || channels < 0 || channels > kMaxChannels) {
        p.fail("bad channels '" + kv["channels"] + "' (0 = NCCL's choice, up to 64)");
        return failWith(result);
      }
      band.collective = *coll;
      band.algo = *algo;
      band.proto = *proto;
      band.nChannels = static_cast<int>(channels);
      for (int n = first; n <= last; ++n) {
        auto it = std::find_if(result.entries.begin(), result.entries.end(),
                               [&](const Thresholds& t) { return t.cc == cc && t.link == link && t.nRanks == n; });
        if (it == result.entries.end()) {
          p.fail("band for cc=" + cc.str() + " link=" + std::string(linkClassName(link)) + " ranks=" + rangeText(n, n) +
                 " has no entry or sym line before it");
          return failWith(result);
        }
        const auto [seen, inserted] =
            bandLines.try_emplace(BandKey{cc, link, n, band.collective, band.maxBytes}, p.lineNo);
        if (!inserted) {
          p.fail("a band for sizes up to " + formatBytes(band.maxBytes) + " is already given (" +
                 std::string(fileName) + ":" + std::to_string(seen->second) + ")");
          return failWith(result);
        }
        if (it->numBands == kMaxBands) {
          p.fail("more than " + std::to_string(kMaxBands) + " bands for one entry");
          return failWith(result);
        }
        it->bands[it->numBands++] = band;
        std::sort(it->bands.begin(), it->bands.begin() + it->numBands, [](const NcclBand& a, const NcclBand& b) {
          return a.collective != b.collective ? a.collective < b.collective : a.maxBytes < b.maxBytes;
        });
      }
    } else {
      p.fail("unknown line kind '" + std::string(words[0]) + "' (expected entry, sym, band or meta)");
      return failWith(result);
    }
  }
  if (!sawHeader) {
    p.lineNo = std::max(p.lineNo, 1);
    p.fail(text.empty() ? "empty file (expected the header 'symmem-table 2')" : "no header 'symmem-table 2'");
    return failWith(result);
  }
  if (needsEndLine && !endLine) {
    p.fail("no end line: the file is cut short (a format 2 table ends with the line 'end')");
    return failWith(result);
  }
  if (!endLine)
    result.notes.push_back(std::string(fileName) +
                           ": format 1, without an end line: a copy cut short could not be told from the whole "
                           "file (symmem-tune writes format 2)");
  return result;
}

TableFileResult readTableFile(const std::string& path) {
  // Bounded: SYMMEM_TABLE is read inside ncclCommInitRank, where a FIFO or /dev/zero must not hang or
  // exhaust the application.
  BoundedFileText file = readBoundedFile(path, kTableFileMaxBytes);
  if (!file.ok()) {
    TableFileResult r;
    // With the reason, as SYMMEM_TOPO_FILE's: "No such file or directory", "Permission denied".
    const size_t reason = file.error.rfind(": cannot open: ");
    r.error = file.failure == BoundedFileText::Failure::CannotOpen
                  ? path + ": cannot open the table file" +
                        (reason == std::string::npos ? std::string() : ": " + file.error.substr(reason + 15))
                  : std::move(file.error);
    return r;
  }
  return parseTableText(file.text, path);
}

void applyTableFile(const TableFileResult& file, DecisionTable& table) {
  for (const Thresholds& t : file.entries) table.set(t);
  table.meta.insert(table.meta.end(), file.meta.begin(), file.meta.end());
}

std::string formatTable(const std::vector<Thresholds>& entries, const std::vector<std::string>& meta) {
  std::ostringstream out;
  out << "symmem-table " << kFormatWritten << "\n";
  for (const std::string& m : meta) out << "meta " << m << "\n";
  for (const Thresholds& t : entries) {
    const std::string key = keyText(t.cc, t.link, t.nRanks);
    // Push limits keep the entry line every build reads; other bands need sym lines. An entry without
    // bands takes no size to the symmetric path, whatever its limits say.
    if (t.numSymBands == 0) {
      out << "entry " << key << " oneshot=0B twoshot=0B\n";
    } else if (hasOnlyPushLimits(t)) {
      out << "entry " << key << " oneshot=" << formatBytes(t.oneShotMaxBytes)
          << " twoshot=" << formatBytes(t.twoShotMaxBytes) << "\n";
    } else {
      for (int i = 0; i < t.numSymBands; ++i) {
        const SymBand& b = t.symBands[i];
        out << "sym " << key << " upto=" << formatBytes(b.maxBytes) << " algo=" << symAlgoName(b.algo)
            << " variant=" << symVariantName(b.variant) << "\n";
      }
    }
    for (int i = 0; i < t.numBands; ++i) {
      const NcclBand& b = t.bands[i];
      out << "band " << key << " coll=" << collectiveName(b.collective) << " upto=" << formatBytes(b.maxBytes)
          << " algo=" << ncclAlgoName(b.algo) << " proto=" << ncclProtoName(b.proto) << " channels=" << b.nChannels
          << "\n";
    }
  }
  out << "end\n";
  return out.str();
}

}  // namespace symmem
