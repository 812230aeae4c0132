// SPDX-License-Identifier: Apache-2.0
#include "plugin/process.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/setting_names.h"
#include "plugin/comm_names.h"
#include "plugin/comm_tickets.h"
#include "plugin/creation_calls.h"
#include "plugin/interposer.h"
#include "plugin/stats/call_stats.h"
#include "plugin/table_in_force.h"
#include "plugin/tuner.h"
#include "symmem/version.h"
#include "topology/discover.h"

namespace symmem {

std::string driverTooOldReason(int driverMajor) {
  if (driverMajor <= 0 || driverMajor >= kMinDriverMajor) return "";
  return "NVIDIA driver " + std::to_string(driverMajor) + " is older than " + std::to_string(kMinDriverMajor) +
         ", which the plugin's CUDA 13.0 runtime needs";
}

namespace {
// The table the process runs with and, for the notice that says the plugin is active, its name.
// Process construction is serialised (Process::get), so one name slot serves.
std::string gTableNamed;
DecisionTable tableNamed(const Settings& settings, const Topology& topology, int driverMajor) {
  TableInForce chosen = tableInForce(settings, topology, driverMajor);
  gTableNamed = chosen.settingRefused                          ? "built-in (" + chosen.choice.why + ")"
                : chosen.choice.source == TableSource::BuiltIn ? std::string("built-in")
                : chosen.choice.source == TableSource::Setting ? "SYMMEM_TABLE=" + chosen.choice.path
                                                               : "installed " + chosen.choice.path;
  return std::move(chosen.table);
}

Settings readEnvironment() {
  std::vector<std::string> problems;
  Settings s = Settings::load([](const char* name) { return std::getenv(name); }, &problems);
  setLogDetail(s);  // before the first message below
  for (const std::string& p : problems) SYMMEM_WARN("%s", p.c_str());
  for (const std::string& w : unknownSettingWarnings(environ)) SYMMEM_WARN("%s", w.c_str());
  return s;
}
}  // namespace

Process::Process()
    : settings_(readEnvironment()),
      topology_(discoverThisNode(settings_.text(SettingId::TopoFile))),
      table_(tableNamed(settings_, topology_, thisDriverMajor())) {
  context_.policy = policyFrom(settings_);
  context_.node = summarizeNode(topology_, settings_);
  context_.table = &table_;
  context_.topology = &topology_;
  context_.timeoutMs = settings_.integer(SettingId::TimeoutMs);
  context_.p2pCheck = settings_.flag(SettingId::P2pCheck);
  context_.sharedGpuTest = settings_.flag(SettingId::SharedGpuTest);
  context_.halves = halvesModeFrom(settings_);
  context_.driverTooOld = driverTooOldReason(thisDriverMajor());
  // Said only where NCCL loaded the plugin (its logger arrived with the first tuner init), not in the
  // tools that use this state; and not with SYMMEM_ENABLE=0, where an unpinned plugin is loaded anew
  // at every communicator.
  if (ncclLogger() != nullptr && settings_.flag(SettingId::Enable)) {
    SYMMEM_NOTICE_ONCE("active", "%s active in this process (pid %d), decision table: %s", SYMMEM_VERSION_STRING,
                       static_cast<int>(getpid()), gTableNamed.c_str());
    if (!context_.driverTooOld.empty())
      SYMMEM_NOTICE_ONCE("driver", "%s: every all-reduce stays on NCCL (update the driver to %d or later)",
                         context_.driverTooOld.c_str(), kMinDriverMajor);
  }
  if (context_.sharedGpuTest)
    SYMMEM_WARN(
        "SYMMEM_TEST_SHARED_GPU=1: testing mode, ranks that share one GPU may form a symmetric communicator "
        "(when every rank sets it); processes time-slice the GPU, so nothing measured this way is a latency "
        "figure. Never set it in production");
}

namespace {
std::atomic<Process*> gProcess{nullptr};
std::mutex gProcessMutex;
Process* gForking = nullptr;  // the state the fork handlers locked, for the parent's and child's halves
}  // namespace

Process& Process::get() {
  if (Process* p = gProcess.load(std::memory_order_acquire)) return *p;
  std::lock_guard<std::mutex> lock(gProcessMutex);
  Process* p = gProcess.load(std::memory_order_acquire);
  if (!p) {
    p = new Process();  // the pointer keeps it reachable for leak checkers
    gProcess.store(p, std::memory_order_release);
    registerForkHandlers();
  }
  return *p;
}

void Process::releaseIfUnused() {
  std::lock_guard<std::mutex> lock(gProcessMutex);
  Process* p = gProcess.load(std::memory_order_acquire);
  if (!p || p->reachable_.load(std::memory_order_acquire) || p->anyInterposer() || tuner::liveContexts() != 0) return;
  gProcess.store(nullptr, std::memory_order_release);
  delete p;
}

Process::~Process() = default;

bool Process::anyInterposer() const {
  for (int i = 0; i < kMaxNcclCopies; ++i)
    if (existingInterposer(i) != nullptr) return true;
  return false;
}

NcclCopies& Process::ncclCopies() {
  std::call_once(ncclOnce_, [this] { copies_.emplace(loadRealNccl()); });
  return *copies_;
}

Interposer& Process::interposer(int copy) {
  if (Interposer* ip = existingInterposer(copy)) return *ip;
  std::lock_guard<std::mutex> lock(interposersMutex_);
  if (Interposer* ip = existingInterposer(copy)) return *ip;
  RealNccl& real = nccl(copy);
  reachable_.store(true, std::memory_order_release);  // an entry point was called: it may be called again
  auto made =
      std::make_unique<Interposer>(real, context_, symmetricSetupSteps(real, context_, copy), streamIsCapturing, copy);
  const bool first = !anyInterposer();
  if (first && settings_.flag(SettingId::Stats) && settings_.flag(SettingId::Enable)) {
    std::unique_ptr<CallStats> stats = CallStats::open(settings_.text(SettingId::StatsDir));
    const std::string& gpu = settings_.text(SettingId::StatsGpu);
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

void Process::registerForkHandlers() {
  // A forked child calls NCCL through the hooks too: no lock it needs is inherited held. The
  // interposers' building lock first (so no interposer is half built in the child), each interposer's
  // table, the process-wide tables, then the statistics' (the order every path takes them). The child's counts go to
  // memory of its own: the statistics file is its parent's. Registered with the first Process of this loaded object
  // (glibc drops an object's handlers when it is unloaded).
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_atfork(
        [] {
          Process* p = gProcess.load(std::memory_order_acquire);
          gForking = p;
          if (!p) return;
          p->interposersMutex_.lock();
          for (int i = 0; i < kMaxNcclCopies; ++i)
            if (Interposer* ip = p->existingInterposer(i)) ip->lockForFork();
          for (std::mutex* table : processTables()) table->lock();
          if (p->stats_) p->stats_->lockForFork();
        },
        [] {
          Process* p = gForking;
          if (!p) return;
          if (p->stats_) p->stats_->unlockAfterFork();
          for (std::mutex* table : processTables()) table->unlock();
          for (int i = kMaxNcclCopies - 1; i >= 0; --i)
            if (Interposer* ip = p->existingInterposer(i)) ip->unlockAfterFork();
          p->interposersMutex_.unlock();
        },
        [] {
          Process* p = gForking;
          if (!p) return;
          for (int i = 0; i < kMaxNcclCopies; ++i)
            if (Interposer* ip = p->existingInterposer(i)) ip->renewAfterFork();
          if (p->stats_) p->stats_->detachInForkedChild();
          for (std::mutex* table : processTables()) new (table) std::mutex;  // held by the forking thread
          new (&p->interposersMutex_) std::mutex;
        });
  });
}

void Process::registerExitHandler() {
  // Each live communicator's summary line, and no statistics file left behind. A forked child (a
  // data loader's worker, say) holds its parent's communicators: not its to sum up.
  std::atexit([] {
    Process& p = Process::get();
    if (!p.stats_ || p.stats_->inForkedChild()) return;
    p.stats_->stopPublishing();  // no copy from the device while the process ends
    for (int i = 0; i < kMaxNcclCopies; ++i)
      if (Interposer* ip = p.existingInterposer(i)) ip->sayLiveCommunicators();
    p.stats_->removeFile();
  });
}

}  // namespace symmem
