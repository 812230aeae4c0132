// SPDX-License-Identifier: Apache-2.0
#include "core/call_stats_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <sstream>

#include "core/bounded_file.h"

namespace symmem::stats {

namespace {

constexpr std::string_view kNamePrefix = "nccl-symmem-";
constexpr std::string_view kNameSuffix = ".stats";
constexpr int kCopyAttempts = 64;  // a slot changed under this many copies in a row is skipped

uint64_t realtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::string errnoText(int e) { return std::strerror(e); }

void copyText(char* to, size_t room, const std::string& from) {
  const size_t n = std::min(room - 1, from.size());
  std::memcpy(to, from.data(), n);
  std::memset(to + n, 0, room - n);
}

std::string programName() {
  const BoundedFileText comm = readBoundedFile("/proc/self/comm", 256);
  std::string name = comm.ok() ? comm.text : std::string();
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  return name;
}

uint64_t loadWord(const void* at) { return __atomic_load_n(static_cast<const uint64_t*>(at), __ATOMIC_RELAXED); }

// Copies `bytes` (a multiple of 8) word by word: each word whole, as the writer stored it.
void copyWords(void* to, const void* from, size_t bytes) {
  auto* out = static_cast<uint64_t*>(to);
  const auto* in = static_cast<const uint64_t*>(from);
  for (size_t i = 0; i < bytes / 8; ++i) out[i] = loadWord(in + i);
}

void storeWord(uint64_t* at, uint64_t value) { __atomic_store_n(at, value, __ATOMIC_RELAXED); }

std::string boundedText(const char* field, size_t room) { return std::string(field, strnlen(field, room)); }

// One kernel entry, inside the GPU counts' sequence window (copySlot): count read before and after the
// other three words and equal, and its values possible together (min and max around the mean), a
// second guard. An entry that keeps changing keeps its last copy.
KernelEntry copyEntry(const KernelEntry& e) {
  KernelEntry c{};
  for (int tries = 0; tries < kCopyAttempts; ++tries) {
    c.count = loadWord(&e.count);
    std::atomic_thread_fence(std::memory_order_acquire);
    c.sumNs = loadWord(&e.sumNs);
    c.minNs = loadWord(&e.minNs);
    c.maxNs = loadWord(&e.maxNs);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (loadWord(&e.count) != c.count) continue;
    if (c.count == 0) break;
    const unsigned __int128 n = c.count;
    if (c.minNs <= c.maxNs && n * c.minNs <= c.sumNs && c.sumNs <= n * c.maxNs) break;
  }
  return c;
}

// One slot, consistently; false when it kept changing (or is free). The GPU's entries are copied inside
// the same window as the identity and the host's counters: a slot claimed again for another
// communicator while they are copied is copied again, never mixed.
bool copySlot(const CommSlot& live, int index, SlotSnapshot* out) {
  alignas(CommSlot) static thread_local unsigned char scratch[sizeof(CommSlot)];
  auto* copy = reinterpret_cast<CommSlot*>(scratch);
  for (int attempt = 0; attempt < kCopyAttempts; ++attempt) {
    const uint64_t before = __atomic_load_n(&live.seq, __ATOMIC_ACQUIRE);
    if (before & 1u) continue;
    const uint64_t gpuBefore = __atomic_load_n(&live.gpu.seq, __ATOMIC_ACQUIRE);
    if (gpuBefore & 1u) continue;
    copyWords(copy, &live, offsetof(CommSlot, gpu.timed));
    for (int k = 0; k < kKernelKinds; ++k)
      for (int b = 0; b < kBuckets; ++b) copy->gpu.timed[k][b] = copyEntry(live.gpu.timed[k][b]);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (__atomic_load_n(&live.seq, __ATOMIC_RELAXED) != before ||
        __atomic_load_n(&live.gpu.seq, __ATOMIC_RELAXED) != gpuBefore)
      continue;
    if (copy->state == SlotState::Free) return false;
    out->index = index;
    out->state = copy->state;
    out->rank = copy->rank;
    out->nRanks = copy->nRanks;
    out->device = copy->device;
    out->comm = copy->comm;
    out->openedNs = copy->openedNs;
    out->closedNs = copy->closedNs;
    out->symmetric = copy->symmetric != 0;
    out->gpuSampling = copy->gpuSampling;
    out->path = boundedText(copy->path, kPathBytes);
    std::memcpy(out->calls, copy->calls, sizeof(out->calls));
    out->gpu = copy->gpu;
    return true;
  }
  return false;
}

}  // namespace

std::string_view routeName(Route r) {
  switch (r) {
    case Route::OneShotPush:
      return "one-shot push";
    case Route::OneShotPull:
      return "one-shot pull";
    case Route::OneShotStaged:
      return "one-shot staged";
    case Route::OneShotHalves:
      return "one-shot halves";
    case Route::TwoShotPush:
      return "two-shot push";
    case Route::TwoShotPull:
      return "two-shot pull";
    case Route::TwoShotStaged:
      return "two-shot staged";
    case Route::TwoShotHalves:
      return "two-shot halves";
    case Route::NcclTuned:
      return "NCCL (table band)";
    case Route::NcclTable:
      return "NCCL (past the table)";
    case Route::NcclTypeOrOp:
      return "NCCL (type/op)";
    case Route::NcclPathOff:
      return "NCCL (path off)";
    case Route::NcclBeforeSetup:
      return "NCCL (before setup)";
    case Route::NcclConfig:
      return "NCCL (call config)";
    case Route::NcclKernelDeclined:
      return "NCCL (too large)";
    case Route::Failed:
      return "failed";
    case Route::kCount:
      break;
  }
  return "?";
}

std::string_view routeKey(Route r) {
  static constexpr std::string_view kKeys[] = {
      "one_shot_push",     "one_shot_pull", "one_shot_staged",      "one_shot_halves",
      "two_shot_push",     "two_shot_pull", "two_shot_staged",      "two_shot_halves",
      "nccl_tuned",        "nccl_table",    "nccl_type_or_op",      "nccl_path_off",
      "nccl_before_setup", "nccl_config",   "nccl_kernel_declined", "failed"};
  static_assert(std::size(kKeys) == kRoutes);
  const auto i = static_cast<size_t>(r);
  return i < std::size(kKeys) ? kKeys[i] : "unknown";
}

void storeGpuCounts(GpuCounts* to, const GpuCounts& from) {
  const uint64_t seq = loadWord(&to->seq);
  __atomic_store_n(&to->seq, seq + 1, __ATOMIC_RELAXED);
  std::atomic_thread_fence(std::memory_order_release);
  for (int a = 0; a < kAlgorithms; ++a) storeWord(&to->runs[a], from.runs[a]);
  for (int k = 0; k < kKernelKinds; ++k)
    for (int b = 0; b < kBuckets; ++b) {
      KernelEntry& e = to->timed[k][b];
      const KernelEntry& f = from.timed[k][b];
      storeWord(&e.count, f.count);
      storeWord(&e.sumNs, f.sumNs);
      storeWord(&e.minNs, f.minNs);
      storeWord(&e.maxNs, f.maxNs);
    }
  __atomic_store_n(&to->seq, seq + 2, __ATOMIC_RELEASE);
}

std::string segmentDirectory(const std::string& dirSetting) {
  return dirSetting.empty() ? std::string(kDefaultDirectory) : dirSetting;
}

std::string segmentFileName(uid_t uid, pid_t pid) {
  return std::string(kNamePrefix) + std::to_string(uid) + "-" + std::to_string(pid) + std::string(kNameSuffix);
}

std::optional<SegmentName> parseSegmentFileName(std::string_view name) {
  if (!name.starts_with(kNamePrefix) || !name.ends_with(kNameSuffix)) return std::nullopt;
  name.remove_prefix(kNamePrefix.size());
  name.remove_suffix(kNameSuffix.size());
  const size_t dash = name.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto number = [](std::string_view digits, uint64_t limit) -> std::optional<uint64_t> {
    if (digits.empty() || digits.size() > 10) return std::nullopt;
    uint64_t v = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    return v <= limit ? std::optional<uint64_t>(v) : std::nullopt;
  };
  const auto uid = number(name.substr(0, dash), 0xffffffffu);
  const auto pid = number(name.substr(dash + 1), 0x7fffffff);
  if (!uid || !pid || *pid == 0) return std::nullopt;
  return SegmentName{static_cast<uid_t>(*uid), static_cast<pid_t>(*pid)};
}

std::optional<uint64_t> processStartTicks(pid_t pid) {
  const BoundedFileText stat = readBoundedFile("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat.ok()) return std::nullopt;
  const size_t close = stat.text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.text.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {  // after the name: field 3 (state) on; the start time is field 22
    if (!(fields >> field)) return std::nullopt;
  }
  try {
    return std::stoull(field);
  } catch (...) {
    return std::nullopt;
  }
}

void initHeader(Header* h, pid_t pid, uint64_t startTicks, const std::string& program,
                const std::string& pluginVersion) {
  h->version = kLayoutVersion;
  h->headerBytes = kHeaderBytes;
  h->slotBytes = kSlotBytes;
  h->slots = kSlots;
  h->routes = kRoutes;
  h->buckets = kBuckets;
  h->kernelKinds = kKernelKinds;
  h->modes = kModes;
  h->pid = pid;
  h->startTicks = startTicks;
  h->createdNs = realtimeNs();
  h->untrackedComms = 0;
  copyText(h->program, sizeof(h->program), program);
  copyText(h->pluginVersion, sizeof(h->pluginVersion), pluginVersion);
}

namespace {
void publish(Header* h) {
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(h->magic, kMagic, sizeof(kMagic));
}
}  // namespace

std::unique_ptr<WrittenSegment> WrittenSegment::createShared(const std::string& dir, const std::string& program,
                                                             const std::string& pluginVersion, std::string* why) {
  const pid_t pid = getpid();
  const std::string path = dir + "/" + segmentFileName(getuid(), pid);
  int fd = -1;
  for (int attempt = 0; attempt < 2 && fd < 0; ++attempt) {
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    // Ours by name (this user, this PID): left by an ended process that had this PID before.
    if (fd < 0 && errno == EEXIST && attempt == 0) unlink(path.c_str());
  }
  if (fd < 0) {
    *why = path + ": cannot create: " + errnoText(errno);
    return nullptr;
  }
  void* base = MAP_FAILED;
  if (fchmod(fd, 0600) != 0 || ftruncate(fd, static_cast<off_t>(kSegmentBytes)) != 0) {
    *why = path + ": cannot size: " + errnoText(errno);
  } else {
    base = mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) *why = path + ": cannot map: " + errnoText(errno);
  }
  close(fd);
  if (base == MAP_FAILED) {
    unlink(path.c_str());
    return nullptr;
  }
  auto* h = static_cast<Header*>(base);
  initHeader(h, pid, processStartTicks(pid).value_or(0), program.empty() ? programName() : program, pluginVersion);
  publish(h);
  return std::unique_ptr<WrittenSegment>(new WrittenSegment(static_cast<char*>(base), path, pid));
}

std::unique_ptr<WrittenSegment> WrittenSegment::createPrivate(const std::string& program,
                                                              const std::string& pluginVersion) {
  void* base = mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  auto* h = static_cast<Header*>(base);
  const pid_t pid = getpid();
  initHeader(h, pid, 0, program.empty() ? programName() : program, pluginVersion);
  publish(h);
  return std::unique_ptr<WrittenSegment>(new WrittenSegment(static_cast<char*>(base), std::string(), pid));
}

void WrittenSegment::removeFile() {
  if (!path_.empty() && getpid() == owner_) unlink(path_.c_str());
  path_.clear();
}

WrittenSegment::~WrittenSegment() {
  removeFile();
  munmap(base_, kSegmentBytes);
}

uint64_t SlotSnapshot::routeCalls(Route r) const {
  uint64_t n = 0;
  for (int b = 0; b < kBuckets; ++b)
    for (int m = 0; m < kModes; ++m) n += calls[static_cast<int>(r)][b][m];
  return n;
}

uint64_t SlotSnapshot::totalCalls() const {
  uint64_t n = 0;
  for (int r = 0; r < kRoutes; ++r) n += routeCalls(static_cast<Route>(r));
  return n;
}

uint64_t timedRuns(const GpuCounts& g, int kind) {
  uint64_t n = 0;
  for (int b = 0; b < kBuckets; ++b) n += g.timed[kind][b].count;
  return n;
}

uint64_t kindRuns(const GpuCounts& g, uint32_t sampling, int kind) {
  const uint64_t mine = timedRuns(g, kind);
  if (sampling == 1 || mine == 0) return mine;
  uint64_t all = 0;
  for (int k = 0; k < kKernelKinds; ++k)
    if (algorithmOf(k) == algorithmOf(kind)) all += timedRuns(g, k);
  const unsigned __int128 share = static_cast<unsigned __int128>(g.runs[algorithmOf(kind)]) * mine;
  return static_cast<uint64_t>((share + all / 2) / all);
}

SegmentRead readSegment(const std::string& path) {
  SegmentRead out;
  auto fail = [&](SegmentRead::Outcome o, const std::string& why) {
    out.outcome = o;
    out.error = path + ": " + why;
    return out;
  };
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return fail(errno == ENOENT ? SegmentRead::Outcome::Gone : SegmentRead::Outcome::Unreadable,
                "cannot open: " + errnoText(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return fail(SegmentRead::Outcome::Unreadable, "not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) < sizeof(Header)) {
    close(fd);
    return fail(st.st_size == 0 ? SegmentRead::Outcome::Starting : SegmentRead::Outcome::Refused,
                st.st_size == 0 ? "being created" : "too short for any known layout");
  }
  Header h{};
  if (pread(fd, &h, sizeof(h), 0) != static_cast<ssize_t>(sizeof(h))) {
    close(fd);
    return fail(SegmentRead::Outcome::Unreadable, "read error");
  }
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) {
    close(fd);
    const bool blank = std::all_of(std::begin(h.magic), std::end(h.magic), [](char c) { return c == 0; });
    return fail(blank ? SegmentRead::Outcome::Starting : SegmentRead::Outcome::Refused,
                blank ? "being created" : "not an nccl-symmem statistics file");
  }
  if (h.version != kLayoutVersion) {
    close(fd);
    return fail(SegmentRead::Outcome::Refused, "layout version " + std::to_string(h.version) +
                                                   "; this reader knows version " + std::to_string(kLayoutVersion) +
                                                   " (use the symmem-stat of the plugin that wrote it)");
  }
  if (h.headerBytes != kHeaderBytes || h.slotBytes != kSlotBytes || h.slots != kSlots || h.routes != kRoutes ||
      h.buckets != kBuckets || h.kernelKinds != kKernelKinds || h.modes != kModes ||
      static_cast<uint64_t>(st.st_size) != kSegmentBytes) {
    close(fd);
    return fail(SegmentRead::Outcome::Refused, "layout version 1 with other sizes than this reader's: refused");
  }
  void* base = mmap(nullptr, kSegmentBytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return fail(SegmentRead::Outcome::Unreadable, "cannot map: " + errnoText(errno));
  ProcessSnapshot& s = out.snapshot;
  s.file = path;
  s.pid = static_cast<pid_t>(h.pid);
  s.uid = st.st_uid;
  s.startTicks = h.startTicks;
  s.createdNs = h.createdNs;
  s.program = boundedText(h.program, sizeof(h.program));
  s.pluginVersion = boundedText(h.pluginVersion, sizeof(h.pluginVersion));
  const auto* live = static_cast<const char*>(base);
  s.untrackedComms = loadWord(&reinterpret_cast<const Header*>(live)->untrackedComms);
  for (int i = 0; i < kSlots; ++i) {
    const auto* slot = reinterpret_cast<const CommSlot*>(live + kHeaderBytes + size_t(i) * kSlotBytes);
    SlotSnapshot copy;
    if (copySlot(*slot, i, &copy)) s.comms.push_back(std::move(copy));
  }
  s.takenNs = realtimeNs();
  munmap(base, kSegmentBytes);
  out.outcome = SegmentRead::Outcome::Ok;
  return out;
}

std::vector<SegmentFile> listSegments(const std::string& dir) {
  std::vector<SegmentFile> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = readdir(d)) {
    const std::optional<SegmentName> name = parseSegmentFileName(e->d_name);
    if (!name) continue;
    const std::string path = dir + "/" + e->d_name;
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    out.push_back(SegmentFile{path, *name, st.st_uid});
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const SegmentFile& a, const SegmentFile& b) { return a.name.pid < b.name.pid; });
  return out;
}

bool writerAlive(const ProcessSnapshot& s) {
  const std::optional<uint64_t> ticks = processStartTicks(s.pid);
  return ticks && (s.startTicks == 0 || *ticks == s.startTicks);
}

}  // namespace symmem::stats
