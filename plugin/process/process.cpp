// SPDX-License-Identifier: Apache-2.0
#include "plugin/process/process.h"

#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/setting_names.h"
#include "plugin/process/table_in_force.h"
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
}  // namespace

Process& Process::get() {
  if (Process* p = gProcess.load(std::memory_order_acquire)) return *p;
  std::lock_guard<std::mutex> lock(gProcessMutex);
  Process* p = gProcess.load(std::memory_order_acquire);
  if (!p) {
    p = new Process();  // the pointer keeps it reachable for leak checkers
    gProcess.store(p, std::memory_order_release);
  }
  return *p;
}

bool Process::reachable() {
  const Process* p = gProcess.load(std::memory_order_acquire);
  return p && p->reachable_.load(std::memory_order_acquire);
}

void Process::releaseIfUnused(bool stillHeld) {
  std::lock_guard<std::mutex> lock(gProcessMutex);
  Process* p = gProcess.load(std::memory_order_acquire);
  if (!p || stillHeld || p->reachable_.load(std::memory_order_acquire)) return;
  gProcess.store(nullptr, std::memory_order_release);
  delete p;
}

Process::~Process() = default;

}  // namespace symmem
