// SPDX-License-Identifier: Apache-2.0
#pragma once
// The thread that brings the kernels' own counts to the statistics file while the application runs
// (docs/live-stats.md). Graph replays never reach the host, so nothing on the call path can do it:
// every period, for each communicator registered, one copy of its device entries
// (kernels::SymmetricComm::copyKernelStats, on a stream of its own, bounded) and one write into its
// slot. The kernels themselves never write host memory (kernels/kernel_clock.cuh).
//
// No CUDA here: what a copy is comes in as a function, so that the thread's life (start at the first
// registration, removal while a copy runs, stop at exit, a fork) is tested without a GPU.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace symmem {

class StatsPublisher {
 public:
  // One communicator's publication: copy what the device has now and write it where readers look;
  // false when nothing could be copied (the next period tries again, unless the copy says never).
  using Publish = std::function<bool()>;

  explicit StatsPublisher(std::chrono::milliseconds period);
  ~StatsPublisher();  // stop()
  StatsPublisher(const StatsPublisher&) = delete;
  StatsPublisher& operator=(const StatsPublisher&) = delete;

  // Starts the thread at the first registration. The returned handle removes it when destroyed: after
  // that `publish` is never called again, and a call in progress has returned (it waits for it).
  class Registration {
   public:
    Registration(StatsPublisher& owner, uint64_t id) : owner_(owner), id_(id) {}
    ~Registration() { owner_.remove(id_); }
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;

   private:
    StatsPublisher& owner_;
    uint64_t id_;
  };
  std::unique_ptr<Registration> add(Publish publish);

  // Ends the thread (after the publication in progress, if any) and publishes nothing more; at exit.
  void stop();
  // In a forked child: the thread is the parent's. Forgets it and every registration, publishes nothing.
  void forgetInForkedChild();
  // Around fork: the lock held by the forking thread (released in the parent; made anew in the child).
  void lockForFork() { mutex_.lock(); }
  void unlockAfterFork() { mutex_.unlock(); }

  // Publications done so far (tests).
  uint64_t rounds() const;

 private:
  void remove(uint64_t id);
  void run();

  const std::chrono::milliseconds period_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<uint64_t, Publish> entries_;
  uint64_t nextId_ = 1;
  uint64_t busy_ = 0;  // the registration whose publication runs now, 0 for none
  uint64_t rounds_ = 0;
  bool stopping_ = false;
  std::unique_ptr<std::thread> thread_;
};

}  // namespace symmem
