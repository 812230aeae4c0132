// SPDX-License-Identifier: Apache-2.0
#pragma once
// The plugin's process-wide state and its one owner: the settings (the only place the environment is
// read), the node's topology, the decision table, the context that decisions are made from, the NCCL
// functions the interposer forwards to, and the interposer. Built at first use, thread-safe. Once
// anything outside can lead into it (the plugin pinned itself, an entry point was called, a tuner
// context is alive), it is never destroyed: NCCL calls can arrive from other threads and atexit
// handlers until the process ends. Otherwise it goes when the shared object is unloaded
// (releaseIfUnused), so NCCL's load/unload of its tuner per communicator leaks nothing.
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>

#include "core/decision_table.h"
#include "core/settings.h"
#include "plugin/nccl/nccl_real.h"
#include "plugin/nccl_copies.h"
#include "plugin/process_context.h"
#include "topology/model.h"

namespace symmem {

class CallStats;
class Interposer;

class Process {
 public:
  static Process& get();

  // Deletes the state when nothing can reach it any more (see above); a later get() builds it anew.
  // Called as the shared object is unloaded.
  static void releaseIfUnused();
  // Something outside now leads into the plugin (pinned, hooks, rebound slots): never released.
  void markReachable() { reachable_.store(true, std::memory_order_release); }

  const Settings& settings() const { return settings_; }
  const Topology& topology() const { return topology_; }
  const DecisionTable& table() const { return table_; }
  const ProcessContext& context() const { return context_; }
  // The NCCL copies served; copy 0 is resolved from the loaded libnccl.so.2 at first use (tools that
  // never forward never resolve it).
  NcclCopies& ncclCopies();
  RealNccl& nccl(int copy = 0) { return ncclCopies().at(copy); }
  // The interposer of one NCCL copy, built at its first use over that copy's functions and context().
  // Every copy's interposer counts into the one statistics file of the process.
  Interposer& interposer(int copy = 0);

 private:
  Process();
  ~Process();
  Interposer* existingInterposer(int copy) const {
    return interposers_[static_cast<size_t>(copy)].load(std::memory_order_acquire);
  }
  static void registerForkHandlers();  // once per loaded object
  void registerExitHandler();          // with the first interposer
  bool anyInterposer() const;

  Settings settings_;
  Topology topology_;
  DecisionTable table_;
  ProcessContext context_;
  std::once_flag ncclOnce_;
  std::optional<NcclCopies> copies_;
  std::mutex interposersMutex_;  // serialises building them, and is held across fork
  std::array<std::atomic<Interposer*>, kMaxNcclCopies> interposers_{};
  std::array<std::unique_ptr<Interposer>, kMaxNcclCopies> owned_;
  std::shared_ptr<CallStats> stats_;
  std::atomic<bool> reachable_{false};
};

}  // namespace symmem
