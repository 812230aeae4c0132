// SPDX-License-Identifier: Apache-2.0
#include "plugin/stats/stats_publisher.h"

#include <pthread.h>
#include <signal.h>

#include <new>
#include <vector>

namespace symmem {

StatsPublisher::StatsPublisher(std::chrono::milliseconds period) : period_(period) {}

StatsPublisher::~StatsPublisher() { stop(); }

std::unique_ptr<StatsPublisher::Registration> StatsPublisher::add(Publish publish) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) return nullptr;
  const uint64_t id = nextId_++;
  entries_.emplace(id, std::move(publish));
  if (!thread_) {
    // Every signal blocked in the thread: the application's handlers run on its own threads.
    sigset_t all, before;
    sigfillset(&all);
    const bool masked = pthread_sigmask(SIG_SETMASK, &all, &before) == 0;
    try {
      thread_ = std::make_unique<std::thread>([this] { run(); });
    } catch (...) {
      if (masked) pthread_sigmask(SIG_SETMASK, &before, nullptr);
      entries_.erase(id);
      return nullptr;  // no thread: the counts reach the file at teardown only
    }
    if (masked) pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }
  return std::make_unique<Registration>(*this, id);
}

void StatsPublisher::remove(uint64_t id) {
  std::unique_lock<std::mutex> lock(mutex_);
  entries_.erase(id);
  changed_.wait(lock, [&] { return busy_ != id; });
}

void StatsPublisher::stop() {
  std::unique_ptr<std::thread> thread;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    thread = std::move(thread_);
  }
  changed_.notify_all();
  if (thread && thread->joinable()) thread->join();
}

void StatsPublisher::forgetInForkedChild() {
  // The parent's thread does not exist here, and it may have held the lock at the fork (unless the
  // fork went through lockForFork). The registrations are left as they are, never run nor destroyed:
  // what they hold is the parent's.
  new (&mutex_) std::mutex;
  new (&changed_) std::condition_variable;
  (void)thread_.release();  // never joined, never destroyed: a std::thread still joinable would terminate
  new (&entries_) std::map<uint64_t, Publish>;
  busy_ = 0;
  stopping_ = true;
}

uint64_t StatsPublisher::rounds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rounds_;
}

void StatsPublisher::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait_for(lock, period_, [&] { return stopping_; });
    if (stopping_) return;
    std::vector<uint64_t> ids;
    ids.reserve(entries_.size());
    for (const auto& [id, publish] : entries_) ids.push_back(id);
    for (uint64_t id : ids) {
      if (stopping_) return;
      auto it = entries_.find(id);
      if (it == entries_.end()) continue;  // removed meanwhile
      Publish publish = it->second;
      busy_ = id;
      lock.unlock();
      try {
        publish();
      } catch (...) {
      }
      lock.lock();
      busy_ = 0;
      changed_.notify_all();
    }
    ++rounds_;
  }
}

}  // namespace symmem
