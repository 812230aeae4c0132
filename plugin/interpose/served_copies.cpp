// SPDX-License-Identifier: Apache-2.0
#include "plugin/interpose/served_copies.h"

#include <pthread.h>

#include <cstdlib>
#include <new>
#include <string>

#include "plugin/interpose/comm_names.h"
#include "plugin/interpose/comm_tickets.h"
#include "plugin/interpose/creation_calls.h"
#include "plugin/interpose/interposer.h"
#include "plugin/process/process.h"
#include "plugin/stats/call_stats.h"

namespace symmem {

namespace {
std::atomic<ServedCopies*> gServed{nullptr};
std::mutex gServedMutex;
ServedCopies* gForking = nullptr;  // the state the fork handlers locked, for the parent's and child's halves
}  // namespace

ServedCopies& ServedCopies::get() {
  if (ServedCopies* s = gServed.load(std::memory_order_acquire)) return *s;
  std::lock_guard<std::mutex> lock(gServedMutex);
  ServedCopies* s = gServed.load(std::memory_order_acquire);
  if (!s) {
    s = new ServedCopies();  // the pointer keeps it reachable for leak checkers
    gServed.store(s, std::memory_order_release);
    registerForkHandlers();
  }
  return *s;
}

bool ServedCopies::releaseIfUnused(bool stillHeld) {
  std::lock_guard<std::mutex> lock(gServedMutex);
  ServedCopies* s = gServed.load(std::memory_order_acquire);
  if (!s) return true;
  if (stillHeld || s->anyInterposer()) return false;
  gServed.store(nullptr, std::memory_order_release);
  delete s;
  return true;
}

ServedCopies::~ServedCopies() = default;

bool ServedCopies::anyInterposer() const {
  for (int i = 0; i < kMaxNcclCopies; ++i)
    if (existingInterposer(i) != nullptr) return true;
  return false;
}

NcclCopies& ServedCopies::ncclCopies() {
  std::call_once(ncclOnce_, [this] { copies_.emplace(loadRealNccl()); });
  return *copies_;
}

Interposer& ServedCopies::interposer(int copy) {
  if (Interposer* ip = existingInterposer(copy)) return *ip;
  std::lock_guard<std::mutex> lock(interposersMutex_);
  if (Interposer* ip = existingInterposer(copy)) return *ip;
  Process& process = Process::get();
  const Settings& settings = process.settings();
  const ProcessContext& context = process.context();
  RealNccl& real = nccl(copy);
  process.markReachable();  // an entry point was called: it may be called again
  auto made =
      std::make_unique<Interposer>(real, context, symmetricSetupSteps(real, context, copy), streamIsCapturing, copy);
  const bool first = !anyInterposer();
  if (first && settings.flag(SettingId::Stats) && settings.flag(SettingId::Enable)) {
    std::unique_ptr<CallStats> stats = CallStats::open(settings.text(SettingId::StatsDir));
    const std::string& gpu = settings.text(SettingId::StatsGpu);
    if (stats) stats->setGpuSampling(gpu == "every" ? 1u : gpu == "sampled" ? stats::kDefaultSamplePeriod : 0u);
    stats_ = std::move(stats);
  }
  if (stats_) made->enableStats(stats_);
  owned_[static_cast<size_t>(copy)] = std::move(made);
  interposers_[static_cast<size_t>(copy)].store(owned_[static_cast<size_t>(copy)].get(), std::memory_order_release);
  if (first) registerExitHandler();
  return *owned_[static_cast<size_t>(copy)];
}

namespace {
// The process-wide tables a call through the plugin may touch, each behind its own lock, which no
// path holds while it takes an interposer's.
std::array<std::mutex*, 3> processTables() { return {&creationCallsMutex(), &commNamesMutex(), &commTicketsMutex()}; }
}  // namespace

void ServedCopies::registerForkHandlers() {
  // A forked child calls NCCL through the hooks too: no lock it needs is inherited held. The
  // interposers' building lock first (so no interposer is half built in the child), each interposer's
  // table, the process-wide tables, then the statistics' (the order every path takes them). The child's counts go to
  // memory of its own: the statistics file is its parent's. The process-wide tables are guarded even
  // before any copy is served (a tuner init names communicators in them first). Registered once per
  // loaded object, as it loads and with the first ServedCopies (glibc drops an object's handlers when
  // it is unloaded).
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_atfork(
        [] {
          ServedCopies* p = gServed.load(std::memory_order_acquire);
          gForking = p;
          if (p) {
            p->interposersMutex_.lock();
            for (int i = 0; i < kMaxNcclCopies; ++i)
              if (Interposer* ip = p->existingInterposer(i)) ip->lockForFork();
          }
          for (std::mutex* table : processTables()) table->lock();
          if (p && p->stats_) p->stats_->lockForFork();
        },
        [] {
          ServedCopies* p = gForking;
          if (p && p->stats_) p->stats_->unlockAfterFork();
          for (std::mutex* table : processTables()) table->unlock();
          if (!p) return;
          for (int i = kMaxNcclCopies - 1; i >= 0; --i)
            if (Interposer* ip = p->existingInterposer(i)) ip->unlockAfterFork();
          p->interposersMutex_.unlock();
        },
        [] {
          ServedCopies* p = gForking;
          for (std::mutex* table : processTables()) new (table) std::mutex;  // held by the forking thread
          if (!p) return;
          for (int i = 0; i < kMaxNcclCopies; ++i)
            if (Interposer* ip = p->existingInterposer(i)) ip->renewAfterFork();
          if (p->stats_) p->stats_->detachInForkedChild();
          new (&p->interposersMutex_) std::mutex;
        });
  });
}

void ServedCopies::registerExitHandler() {
  // Each live communicator's summary line, and no statistics file left behind. A forked child (a
  // data loader's worker, say) holds its parent's communicators: not its to sum up.
  std::atexit([] {
    ServedCopies& p = ServedCopies::get();
    if (!p.stats_ || p.stats_->inForkedChild()) return;
    p.stats_->stopPublishing();  // no copy from the device while the process ends
    for (int i = 0; i < kMaxNcclCopies; ++i)
      if (Interposer* ip = p.existingInterposer(i)) ip->sayLiveCommunicators();
    p.stats_->removeFile();
  });
}

}  // namespace symmem
