// SPDX-License-Identifier: Apache-2.0
#pragma once
// The NCCL copies the plugin serves in one process. Copy 0 is the libnccl.so.2 the plugin is linked
// against (matched by soname: the first one loaded); its own exported entry points forward there. A
// process can hold more: a ctypes client pointed at another libnccl (VLLM_NCCL_SO_PATH,
// SGLANG_NCCL_SO_PATH) while PyTorch keeps its own. Every copy that loads the plugin as its tuner is
// served, each with its own table of real entry points, so that a communicator only ever meets the
// functions of the NCCL that made it (plugin/process/process.h gives each copy its own interposer).
//
// A copy is known by the pncclAllReduce it defines: the address dlsym gives, which a code hook on that
// function does not change. Copies are added, never removed (a libnccl once loaded stays loaded: the
// plugin keeps a handle to it), so an index stays valid for the life of the process.
#include <array>
#include <atomic>
#include <mutex>
#include <optional>
#include <string>

#include "core/log.h"
#include "plugin/nccl/nccl_real.h"

namespace symmem {

class NcclCopies {
 public:
  // Copy 0, resolved from the loaded libnccl.so.2 (loadRealNccl).
  explicit NcclCopies(RealNccl linked);

  RealNccl& at(int copy) { return copies_[static_cast<size_t>(copy)].real; }
  int count() const { return count_.load(std::memory_order_acquire); }
  // NCCL_VERSION_CODE of a copy (its ncclGetVersion), 0 where it does not say.
  int versionCode(int copy);

  // The copy of the NCCL that handed the plugin `logger` (its tuner init's): the logger is a function
  // of the libnccl that loaded the plugin. A copy seen for the first time is added here. Nullopt, with
  // why, where it cannot be told (a logger outside every NCCL while several are loaded), where the
  // copy lacks what the interposer needs, or where kMaxNcclCopies are served already.
  std::optional<int> copyThatLoaded(NcclLoggerFn logger, std::string* why);

  // The path of the object holding `address`, or "unknown".
  static std::string objectName(const void* address);
  // The NCCL copies loaded in the process, counted by their pncclAllReduce.
  static int copiesLoaded();

 private:
  struct Copy {
    RealNccl real;
    const void* key = nullptr;  // its pncclAllReduce
    std::string path;
  };
  std::optional<int> find(const void* key) const;

  std::array<Copy, kMaxNcclCopies> copies_;
  std::atomic<int> count_{0};  // published after the copy is filled in
  std::mutex mutex_;           // serialises additions
};

}  // namespace symmem
