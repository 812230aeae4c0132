// SPDX-License-Identifier: Apache-2.0
#pragma once
// The NCCL copies the plugin serves in this process and, for each, its interposer: built at first
// use over the process's facts (plugin/process/process.h), thread-safe. Every copy's interposer counts
// into the one statistics file of the process. Its fork handlers keep a forked child's locks free,
// and its exit handler sums up each live communicator. Released with the process's facts, never while
// an interposer lives (entry/interpose_exports.cpp).
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>

#include "plugin/interpose/nccl_copies.h"
#include "plugin/nccl/nccl_real.h"

namespace symmem {

class CallStats;
class Interposer;

class ServedCopies {
 public:
  static ServedCopies& get();

  // Deletes the state unless an interposer lives or `stillHeld`; true when none is left. A later get()
  // builds it anew.
  static bool releaseIfUnused(bool stillHeld);
  // The fork handlers that keep a forked child's locks free (the process-wide communicator tables,
  // and each copy's interposer once served). Once per loaded object; get() calls it too.
  static void registerForkHandlers();

  // The NCCL copies served; copy 0 is resolved from the loaded libnccl.so.2 at first use.
  NcclCopies& ncclCopies();
  RealNccl& nccl(int copy = 0) { return ncclCopies().at(copy); }
  // The interposer of one NCCL copy, built at its first use over that copy's functions.
  Interposer& interposer(int copy = 0);

 private:
  ServedCopies() = default;
  ~ServedCopies();
  Interposer* existingInterposer(int copy) const {
    return interposers_[static_cast<size_t>(copy)].load(std::memory_order_acquire);
  }
  void registerExitHandler();  // with the first interposer
  bool anyInterposer() const;

  std::once_flag ncclOnce_;
  std::optional<NcclCopies> copies_;
  std::mutex interposersMutex_;  // serialises building them, and is held across fork
  std::array<std::atomic<Interposer*>, kMaxNcclCopies> interposers_{};
  std::array<std::unique_ptr<Interposer>, kMaxNcclCopies> owned_;
  std::shared_ptr<CallStats> stats_;
};

}  // namespace symmem
