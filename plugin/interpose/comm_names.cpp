// SPDX-License-Identifier: Apache-2.0
#include "plugin/interpose/comm_names.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace symmem {

namespace {

struct Entry {
  std::optional<CommName> name;
  int children = 0;  // splits and grows of it so far; -1: lost (a failed split)
};

struct Names {
  std::mutex mutex;
  std::unordered_map<const void*, Entry> byComm;
  std::atomic<bool> unseenCountedFromStart{false};
};

// Never destroyed: creation and teardown calls can come from any thread at exit.
Names& names() {
  static Names* n = new Names();
  return *n;
}

}  // namespace

std::mutex& commNamesMutex() { return names().mutex; }

void nameComm(const void* comm, CommName name) {
  if (comm == nullptr) return;
  Names& n = names();
  std::lock_guard<std::mutex> lock(n.mutex);
  Entry& e = n.byComm[comm];
  e = Entry{name, 0};  // a reused address: a new communicator
}

void setUnseenParentsCountedFromTheirStart(bool counted) {
  names().unseenCountedFromStart.store(counted, std::memory_order_release);
}

std::optional<CommName> commName(const void* comm) {
  Names& n = names();
  std::lock_guard<std::mutex> lock(n.mutex);
  const auto it = n.byComm.find(comm);
  return it == n.byComm.end() ? std::nullopt : it->second.name;
}

int countChild(const void* parent) {
  Names& n = names();
  std::lock_guard<std::mutex> lock(n.mutex);
  if (parent == nullptr) return 0;
  auto it = n.byComm.find(parent);
  if (it == n.byComm.end()) {
    if (!n.unseenCountedFromStart.load(std::memory_order_acquire)) return 0;
    it = n.byComm.emplace(parent, Entry{std::nullopt, 0}).first;
  }
  if (it->second.children < 0) return 0;
  return ++it->second.children;
}

void loseChildCount(const void* parent) noexcept {
  try {
    Names& n = names();
    std::lock_guard<std::mutex> lock(n.mutex);
    n.byComm[parent].children = -1;
  } catch (...) {
  }
}

void forgetComm(const void* comm) noexcept {
  try {
    Names& n = names();
    std::lock_guard<std::mutex> lock(n.mutex);
    n.byComm.erase(comm);
  } catch (...) {
  }
}

void resetCommNamesForTests() {
  Names& n = names();
  std::lock_guard<std::mutex> lock(n.mutex);
  n.byComm.clear();
  n.unseenCountedFromStart.store(false);
}

}  // namespace symmem
