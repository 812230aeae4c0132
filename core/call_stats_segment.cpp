// SPDX-License-Identifier: Apache-2.0
#include "core/call_stats_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
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
constexpr int kNamesTried = 8;     // the process's own name, then names with a random suffix

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

void storeWord(uint64_t* at, uint64_t value) { __atomic_store_n(at, value, __ATOMIC_RELAXED); }

std::string boundedText(const char* field, size_t room) { return std::string(field, strnlen(field, room)); }

// Reads `bytes` at `offset` whole; false when the file ends first (it shrank since its size was
// checked) or cannot be read. A read past a file's end is a short count, where a load from a mapping
// past it would be a SIGBUS: a file's owner can shrink it at any moment.
bool readAt(int fd, void* to, size_t bytes, uint64_t offset) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = pread(fd, static_cast<char*>(to) + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// A slot's two sequence words (the slot's and its GPU counts'), as one read of each found them.
struct SlotSeqs {
  uint64_t slot = 0, gpu = 0;
  bool settled() const { return ((slot | gpu) & 1u) == 0; }
  bool operator==(const SlotSeqs&) const = default;
};

bool readSeqs(int fd, uint64_t slotAt, SlotSeqs* s) {
  return readAt(fd, &s->slot, sizeof s->slot, slotAt + offsetof(CommSlot, seq)) &&
         readAt(fd, &s->gpu, sizeof s->gpu, slotAt + offsetof(CommSlot, gpu.seq));
}

enum class SlotCopy { Copied, Free, Unsettled, Shrunk };

// One slot into `copy`, between two equal, even reads of both sequence words: a slot claimed again
// for another communicator, or its GPU counts rewritten, while it is copied is copied again, never
// mixed. Each pread is one system call: the reads are in program order (x86-64 keeps loads in
// order), and the kernel copies aligned memory in whole 8-byte words or wider, so each counter is
// its value before or after a store. A free slot (most of them) is one read of its identity: free
// when it was read is a true answer, whatever the writer does next.
SlotCopy copySlot(int fd, int index, CommSlot* copy) {
  const uint64_t at = kHeaderBytes + static_cast<uint64_t>(index) * kSlotBytes;
  constexpr size_t kIdentityBytes = offsetof(CommSlot, calls);
  if (!readAt(fd, copy, kIdentityBytes, at)) return SlotCopy::Shrunk;
  if (copy->state == SlotState::Free) return SlotCopy::Free;
  for (int attempt = 0; attempt < kCopyAttempts; ++attempt) {
    SlotSeqs before, after;
    if (!readSeqs(fd, at, &before)) return SlotCopy::Shrunk;
    if (!before.settled()) continue;
    if (!readAt(fd, copy, kIdentityBytes, at)) return SlotCopy::Shrunk;
    const bool free = copy->state == SlotState::Free;
    if (!free && !readAt(fd, reinterpret_cast<char*>(copy) + kIdentityBytes, sizeof(CommSlot) - kIdentityBytes,
                         at + kIdentityBytes))
      return SlotCopy::Shrunk;
    if (!readSeqs(fd, at, &after)) return SlotCopy::Shrunk;
    if (after == before) return free ? SlotCopy::Free : SlotCopy::Copied;
  }
  return SlotCopy::Unsettled;
}

// A GPU entry's values possible together: min and max around the mean. The writer stores entries
// whole under the GPU counts' sequence word, so one that is not was made by no writer.
bool plausible(const KernelEntry& e) {
  if (e.count == 0) return e.sumNs == 0 && e.minNs == 0 && e.maxNs == 0;
  const unsigned __int128 n = e.count;
  return e.minNs <= e.maxNs && n * e.minNs <= e.sumNs && e.sumNs <= n * e.maxNs;
}

// A copied slot as a reader shows it; false for a state no writer leaves (Free was skipped before).
bool takeSlot(const CommSlot& copy, int index, SlotSnapshot* out) {
  if (copy.state != SlotState::Live && copy.state != SlotState::Ended) return false;
  out->index = index;
  out->state = copy.state;
  out->rank = copy.rank;
  out->nRanks = copy.nRanks;
  out->device = copy.device;
  out->comm = copy.comm;
  out->openedNs = copy.openedNs;
  out->closedNs = copy.closedNs;
  out->symmetric = copy.symmetric != 0;
  out->gpuSampling = copy.gpuSampling;
  out->path = boundedText(copy.path, kPathBytes);
  std::memcpy(out->calls, copy.calls, sizeof(out->calls));
  out->gpu = copy.gpu;
  for (auto& kind : out->gpu.timed)
    for (KernelEntry& e : kind)
      if (!plausible(e)) e = KernelEntry{};
  return true;
}

// A suffix nobody can guess ahead, 1 to 2^32 - 1 (getrandom; the clock where it fails).
uint32_t randomSuffix() {
  uint32_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof v)) {
    const uint64_t t = realtimeNs();
    v = static_cast<uint32_t>(t ^ (t >> 32));
  }
  return v == 0 ? 1 : v;
}

// A new file at `path`, never one that exists (O_EXCL, no link followed). A file there that is this
// user's was left by an ended process of this user with this PID: replaced. -1 with errno; EEXIST:
// the name is another user's (anyone may make a name in /dev/shm before this process does).
int createNewFile(const std::string& path) {
  constexpr int kFlags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  const int fd = open(path.c_str(), kFlags, 0600);
  if (fd >= 0 || errno != EEXIST) return fd;
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || st.st_uid != geteuid() || unlink(path.c_str()) != 0) {
    errno = EEXIST;
    return -1;
  }
  return open(path.c_str(), kFlags, 0600);
}

// Reserves the file's whole size: on a full file system that is an error here, where a sparse file
// (ftruncate) would be a SIGBUS at the first store into a page that cannot be had.
int reserve(int fd, size_t bytes) {
  int e;
  do {
    e = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  } while (e == EINTR);
  return e;
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

std::string segmentFileName(uid_t uid, pid_t pid, uint32_t suffix) {
  std::string name = std::string(kNamePrefix) + std::to_string(uid) + "-" + std::to_string(pid);
  if (suffix != 0) name.append(".").append(std::to_string(suffix));
  return name.append(kNameSuffix);
}

std::optional<SegmentName> parseSegmentFileName(std::string_view name) {
  if (!name.starts_with(kNamePrefix) || !name.ends_with(kNameSuffix)) return std::nullopt;
  name.remove_prefix(kNamePrefix.size());
  name.remove_suffix(kNameSuffix.size());
  const size_t dash = name.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const size_t dot = name.find('.', dash);
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
  const auto pid = number(name.substr(dash + 1, dot == std::string_view::npos ? dot : dot - dash - 1), 0x7fffffff);
  const auto suffix =
      dot == std::string_view::npos ? std::optional<uint64_t>(0) : number(name.substr(dot + 1), 0xffffffffu);
  if (!uid || !pid || *pid == 0 || !suffix || (dot != std::string_view::npos && *suffix == 0)) return std::nullopt;
  return SegmentName{static_cast<uid_t>(*uid), static_cast<pid_t>(*pid), static_cast<uint32_t>(*suffix)};
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

bool processRunsAs(pid_t pid, uid_t uid) {
  const BoundedFileText status = readBoundedFile("/proc/" + std::to_string(pid) + "/status", 16384);
  if (!status.ok()) return false;
  const size_t at = status.text.find("\nUid:");
  if (at == std::string::npos) return false;
  const size_t end = status.text.find('\n', at + 1);
  std::istringstream ids(status.text.substr(at + 5, end == std::string::npos ? end : end - at - 5));
  for (uint64_t id; ids >> id;)  // real, effective, saved, filesystem
    if (id == uid) return true;
  return false;
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
  std::string path;
  int fd = -1;
  for (int i = 0; i < kNamesTried && fd < 0; ++i) {
    path = dir + "/" + segmentFileName(geteuid(), pid, i == 0 ? 0 : randomSuffix());
    fd = createNewFile(path);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    *why = errno == EEXIST ? dir + ": cannot create a statistics file: its name and " +
                                 std::to_string(kNamesTried - 1) + " suffixed ones are other users' files"
                           : path + ": cannot create: " + errnoText(errno);
    return nullptr;
  }
  void* base = MAP_FAILED;
  if (fchmod(fd, 0600) != 0) {
    *why = path + ": cannot make it mode 0600: " + errnoText(errno);
  } else if (const int e = reserve(fd, kSegmentBytes); e != 0) {
    *why = path + ": cannot reserve its " + std::to_string(kSegmentBytes) + " bytes: " + errnoText(e);
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
  removeEndedSegments(dir, path);
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
    for (int m = 0; m < kModes; ++m) n = addCounts(n, calls[static_cast<int>(r)][b][m]);
  return n;
}

uint64_t SlotSnapshot::totalCalls() const {
  uint64_t n = 0;
  for (int r = 0; r < kRoutes; ++r) n = addCounts(n, routeCalls(static_cast<Route>(r)));
  return n;
}

uint64_t timedRuns(const GpuCounts& g, int kind) {
  uint64_t n = 0;
  for (int b = 0; b < kBuckets; ++b) n = addCounts(n, g.timed[kind][b].count);
  return n;
}

uint64_t kindRuns(const GpuCounts& g, uint32_t sampling, int kind) {
  const uint64_t mine = timedRuns(g, kind);
  if (sampling == 1 || mine == 0) return mine;
  uint64_t all = 0;  // at least `mine`, so not 0: the sums saturate
  for (int k = 0; k < kKernelKinds; ++k)
    if (algorithmOf(k) == algorithmOf(kind)) all = addCounts(all, timedRuns(g, k));
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
    return fail(SegmentRead::Outcome::Refused,
                "layout version " + std::to_string(kLayoutVersion) + " with other sizes than this reader's: refused");
  }
  if (h.pid <= 0 || h.pid > 0x7fffffff) {
    close(fd);
    return fail(SegmentRead::Outcome::Refused, "its header names no process (pid " + std::to_string(h.pid) + ")");
  }
  ProcessSnapshot& s = out.snapshot;
  s.file = path;
  s.pid = static_cast<pid_t>(h.pid);
  s.uid = st.st_uid;
  s.startTicks = h.startTicks;
  s.createdNs = h.createdNs;
  s.untrackedComms = h.untrackedComms;
  s.program = boundedText(h.program, sizeof(h.program));
  s.pluginVersion = boundedText(h.pluginVersion, sizeof(h.pluginVersion));
  alignas(CommSlot) static thread_local unsigned char scratch[sizeof(CommSlot)];
  auto* copy = reinterpret_cast<CommSlot*>(scratch);
  for (int i = 0; i < kSlots; ++i) {
    const SlotCopy c = copySlot(fd, i, copy);
    if (c == SlotCopy::Shrunk) {
      close(fd);
      out.snapshot = ProcessSnapshot{};
      return fail(SegmentRead::Outcome::Unreadable, "shrank while it was read");
    }
    SlotSnapshot slot;
    if (c == SlotCopy::Copied && takeSlot(*copy, i, &slot)) s.comms.push_back(std::move(slot));
  }
  close(fd);
  s.takenNs = realtimeNs();
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
  std::sort(out.begin(), out.end(), [](const SegmentFile& a, const SegmentFile& b) {
    return a.name.pid != b.name.pid ? a.name.pid < b.name.pid : a.name.suffix < b.name.suffix;
  });
  return out;
}

SegmentRead readNamedSegment(const SegmentFile& f) {
  SegmentRead r = readSegment(f.path);
  if (r.outcome != SegmentRead::Outcome::Ok) return r;
  std::string why;
  if (r.snapshot.uid != f.name.uid) {
    why = "owned by uid " + std::to_string(r.snapshot.uid) + ", not by uid " + std::to_string(f.name.uid) +
          " as its name says (not shown)";
  } else if (r.snapshot.pid != f.name.pid) {
    why = "its header names pid " + std::to_string(r.snapshot.pid) + ", its name pid " + std::to_string(f.name.pid) +
          " (not shown)";
  }
  if (why.empty()) return r;
  SegmentRead refused;
  refused.outcome = SegmentRead::Outcome::Refused;
  refused.error = f.path + ": " + why;
  return refused;
}

bool writerAlive(const ProcessSnapshot& s) {
  const std::optional<uint64_t> ticks = processStartTicks(s.pid);
  return ticks && (s.startTicks == 0 || *ticks == s.startTicks);
}

namespace {

bool sameFile(const std::string& path, const struct stat& seen) {
  struct stat now {};
  return lstat(path.c_str(), &now) == 0 && S_ISREG(now.st_mode) && now.st_dev == seen.st_dev &&
         now.st_ino == seen.st_ino;
}

// Whether the file `f` was left by a process that ended: no process has its PID, or the one that has
// it started at another time than the header the file holds (a header that cannot be read, of a
// running PID, counts as that process's: kept).
bool leftByEndedProcess(const SegmentFile& f) {
  if (!processStartTicks(f.name.pid)) return true;
  const SegmentRead r = readNamedSegment(f);
  return r.outcome == SegmentRead::Outcome::Ok && !writerAlive(r.snapshot);
}

}  // namespace

int removeEndedSegments(const std::string& dir, const std::string& keep, int limit) {
  const uid_t me = geteuid();
  int removed = 0;
  for (const SegmentFile& f : listSegments(dir)) {
    if (removed >= limit) break;
    if (f.owner != me || f.name.uid != me || f.path == keep) continue;
    struct stat seen {};
    if (lstat(f.path.c_str(), &seen) != 0 || !S_ISREG(seen.st_mode) || seen.st_uid != me) continue;
    // A new process with the recycled PID replaces the file (createNewFile): another inode, kept.
    if (!leftByEndedProcess(f) || !sameFile(f.path, seen)) continue;
    if (unlink(f.path.c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace symmem::stats
