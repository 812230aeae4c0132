// SPDX-License-Identifier: Apache-2.0
#pragma once
// The plugin's process-wide facts and their one owner: the settings (the only place the environment is
// read), the node's topology, the decision table and the context that decisions are made from. Built
// at first use, thread-safe. Once anything outside can lead into the plugin (it pinned itself, an entry
// point was called), it is never destroyed: NCCL calls can arrive from other threads and atexit handlers
// until the process ends. Otherwise it goes when the shared object is unloaded (releaseIfUnused), so
// NCCL's load/unload of its tuner per communicator leaks nothing. The NCCL copies served and their
// interposers are owned by plugin/interpose/served_copies.h, on top of this.
#include <atomic>

#include "core/decision_table.h"
#include "core/settings.h"
#include "plugin/process/process_context.h"
#include "topology/model.h"

namespace symmem {

class Process {
 public:
  static Process& get();

  // Deletes the state unless something outside leads into the plugin or `stillHeld` (a tuner context
  // or an interposer lives on it); a later get() builds it anew. Called as the shared object is
  // unloaded.
  static void releaseIfUnused(bool stillHeld);
  // Whether something outside leads into the plugin; false while no state is built.
  static bool reachable();
  // Something outside now leads into the plugin (pinned, hooks, rebound slots, an entry point called):
  // never released.
  void markReachable() { reachable_.store(true, std::memory_order_release); }

  const Settings& settings() const { return settings_; }
  const Topology& topology() const { return topology_; }
  const DecisionTable& table() const { return table_; }
  const ProcessContext& context() const { return context_; }

 private:
  Process();
  ~Process();

  Settings settings_;
  Topology topology_;
  DecisionTable table_;
  ProcessContext context_;
  std::atomic<bool> reachable_{false};
};

}  // namespace symmem
