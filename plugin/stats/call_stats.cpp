// SPDX-License-Identifier: Apache-2.0
#include "plugin/stats/call_stats.h"

#include <sys/mman.h>
#include <time.h>

#include <atomic>
#include <cstring>
#include <new>

#include "core/log.h"
#include "core/table_file.h"
#include "symmem/version.h"

namespace symmem {

namespace {

uint64_t realtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void beginChange(stats::CommSlot* slot) {
  __atomic_store_n(&slot->seq, slot->seq + 1, __ATOMIC_RELAXED);  // odd: readers wait
  std::atomic_thread_fence(std::memory_order_release);
}

void endChange(stats::CommSlot* slot) { __atomic_store_n(&slot->seq, slot->seq + 1, __ATOMIC_RELEASE); }

// "16 KiB"; the first bucket "1 B", the open-ended last one "> 1 GiB".
std::string bucketText(int b) {
  const uint64_t upper = stats::bucketUpperBytes(b);
  if (upper == 0) return "> " + formatBytes(stats::bucketUpperBytes(b - 1));
  return formatBytes(upper);
}

std::string microseconds(double ns) {
  char text[32];
  std::snprintf(text, sizeof(text), ns < 10000.0 ? "%.2f us" : "%.0f us", ns / 1000.0);
  return text;
}

}  // namespace

void writeSlotIdentity(stats::CommSlot* slot, stats::SlotState state, int rank, int nRanks, int device, uint64_t comm,
                       bool symmetric, const std::string& path) {
  beginChange(slot);
  slot->state = state;
  slot->rank = rank;
  slot->nRanks = nRanks;
  slot->device = device;
  slot->comm = comm;
  slot->symmetric = symmetric ? 1 : 0;
  const size_t n = std::min(path.size(), sizeof(slot->path) - 1);
  std::memcpy(slot->path, path.data(), n);
  std::memset(slot->path + n, 0, sizeof(slot->path) - n);
  endChange(slot);
}

// --- CommCounters ---------------------------------------------------------------------------------

CommCounters::CommCounters(CallStats& owner, stats::CommSlot* slot, ncclComm_t comm)
    : owner_(owner), slot_(slot), comm_(comm) {
  if (slot_ == nullptr) {
    own_ = std::make_unique<stats::CommSlot>();
    std::memset(own_.get(), 0, sizeof(stats::CommSlot));
    slot_ = own_.get();
  }
  beginChange(slot_);
  std::memset(slot_->calls, 0, sizeof(slot_->calls));
  std::memset(&slot_->gpu, 0, sizeof(slot_->gpu));
  slot_->openedNs = realtimeNs();
  slot_->closedNs = 0;
  slot_->gpuSampling = 0;
  endChange(slot_);
  writeSlotIdentity(slot_, stats::SlotState::Live, -1, 0, -1, reinterpret_cast<uint64_t>(comm), false,
                    "not set up yet");
}

CommCounters::~CommCounters() {
  try {
    SYMMEM_INFO(kLogInit | kLogColl, "comm %p rank %d/%d at destroy: %s", static_cast<void*>(comm_), slot_->rank,
                slot_->nRanks, summary().c_str());
  } catch (...) {
  }
  if (!own_) owner_.end(slot_);
}

void CommCounters::describe(int rank, int nRanks, int device, bool symmetric, const std::string& path) {
  writeSlotIdentity(slot_, stats::SlotState::Live, rank, nRanks, device, slot_->comm, symmetric, path);
}

void CommCounters::writeGpu(const stats::GpuCounts& counts) {
  std::lock_guard<std::mutex> lock(owner_.mutex_);
  beginChange(slot_);
  stats::storeGpuCounts(&slot_->gpu, counts);
  endChange(slot_);
}

void CommCounters::markGpuSampling(uint32_t period) {
  beginChange(slot_);
  slot_->gpuSampling = period;
  endChange(slot_);
}

std::string CommCounters::summary() const {
  uint64_t total = 0;
  std::string parts;
  for (int r = 0; r < stats::kRoutes; ++r) {
    uint64_t calls = 0, captured = 0;
    int lo = -1, hi = -1;
    for (int b = 0; b < stats::kBuckets; ++b) {
      const uint64_t eager = __atomic_load_n(&slot_->calls[r][b][stats::kEager], __ATOMIC_RELAXED);
      const uint64_t graph = __atomic_load_n(&slot_->calls[r][b][stats::kCaptured], __ATOMIC_RELAXED);
      if (eager + graph == 0) continue;
      calls += eager + graph;
      captured += graph;
      if (lo < 0) lo = b;
      hi = b;
    }
    if (calls == 0) continue;
    total += calls;
    const auto route = static_cast<stats::Route>(r);
    std::string part = std::string(stats::routeName(route)) + " " + std::to_string(calls) + " (" + bucketText(lo);
    if (hi != lo) part += " - " + bucketText(hi);
    if (captured != 0) part += ", " + std::to_string(captured) + " captured";
    if (stats::isSymmetric(route) && slot_->gpuSampling != 0) {
      uint64_t timed = 0, sum = 0, max = 0;
      for (int b = 0; b < stats::kBuckets; ++b) {
        const stats::KernelEntry& e = slot_->gpu.timed[r][b];
        timed += e.count;
        sum += e.sumNs;
        max = std::max<uint64_t>(max, e.maxNs);
      }
      const uint64_t runs = stats::kindRuns(slot_->gpu, slot_->gpuSampling, r);
      if (timed != 0) {
        part += "; GPU " + std::to_string(runs) + " runs";
        if (timed != runs) part += ", " + std::to_string(timed) + " timed:";
        part += (timed != runs ? " mean " : ", mean ") + microseconds(double(sum) / double(timed)) + ", max " +
                microseconds(double(max));
      }
    }
    part += ")";
    parts += (parts.empty() ? "" : "; ") + part;
  }
  if (total == 0) return "no all-reduce";
  return std::to_string(total) + (total == 1 ? " all-reduce: " : " all-reduces: ") + parts;
}

// --- CallStats ------------------------------------------------------------------------------------

std::unique_ptr<CallStats> CallStats::open(const std::string& dir) {
  std::string why;
  std::unique_ptr<stats::WrittenSegment> segment =
      stats::WrittenSegment::createShared(stats::segmentDirectory(dir), "", SYMMEM_VERSION_STRING, &why);
  if (!segment) {
    SYMMEM_INFO(kLogInit, "no live statistics for symmem-stat (%s): counts go to the summary lines only", why.c_str());
    segment = stats::WrittenSegment::createPrivate("", SYMMEM_VERSION_STRING);
    if (!segment) return nullptr;
  } else {
    SYMMEM_INFO(kLogInit, "live statistics in %s (symmem-stat %d)", segment->path().c_str(),
                static_cast<int>(segment->header()->pid));
  }
  return std::make_unique<CallStats>(std::move(segment));
}

CallStats::CallStats(std::unique_ptr<stats::WrittenSegment> segment) : segment_(std::move(segment)) {}

CallStats::~CallStats() { publisher_.stop(); }

std::unique_ptr<StatsPublisher::Registration> CallStats::publishGpu(CommCounters& counters, CopyGpu copy) {
  if (forkedChild_) return nullptr;
  return publisher_.add([&counters, copy = std::move(copy)] {
    stats::GpuCounts counts;
    if (!copy(&counts)) return false;
    counters.writeGpu(counts);
    return true;
  });
}

std::unique_ptr<CommCounters> CallStats::lease(ncclComm_t comm) {
  stats::CommSlot* chosen = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t oldestEnd = UINT64_MAX;
    for (int i = 0; i < stats::kSlots; ++i) {
      stats::CommSlot* s = segment_->slot(i);
      if (s->state == stats::SlotState::Free) {
        chosen = s;
        break;
      }
      if (s->state == stats::SlotState::Ended && s->closedNs < oldestEnd) {
        oldestEnd = s->closedNs;
        chosen = s;
      }
    }
    if (chosen != nullptr) {
      chosen->state = stats::SlotState::Live;  // taken, under the lock; the lease writes the rest
    } else {
      stats::Header* h = segment_->header();
      __atomic_store_n(&h->untrackedComms, h->untrackedComms + 1, __ATOMIC_RELAXED);
    }
  }
  if (chosen == nullptr)
    SYMMEM_WARN_ONCE("stats-full",
                     "more than %d communicators live at once in this process: the others are counted for their "
                     "summary lines only, not shown by symmem-stat",
                     stats::kSlots);
  return std::make_unique<CommCounters>(*this, chosen, comm);
}

void CallStats::end(stats::CommSlot* slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  beginChange(slot);
  slot->state = stats::SlotState::Ended;
  slot->closedNs = realtimeNs();
  endChange(slot);
}

void CallStats::removeFile() { segment_->removeFile(); }

void CallStats::lockForFork() {
  mutex_.lock();
  publisher_.lockForFork();
}

void CallStats::unlockAfterFork() {
  publisher_.unlockAfterFork();
  mutex_.unlock();
}

void CallStats::detachInForkedChild() {
  // The same addresses, now private: leases the child inherited keep counting, into nothing shared.
  if (segment_->shared())
    mmap(segment_->base(), segment_->bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  segment_->disown();
  new (&mutex_) std::mutex;  // a thread the child does not have may have held it
  publisher_.forgetInForkedChild();
  forkedChild_ = true;
}

}  // namespace symmem
