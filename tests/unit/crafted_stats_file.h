// SPDX-License-Identifier: Apache-2.0
#pragma once
// Statistics files of any bytes (core/call_stats_layout.h), for the tests of the readers that must
// survive them (anyone can make a file of any name in /dev/shm): a whole segment in memory, made
// valid and then changed at will, written to a path at any size.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/call_stats_segment.h"

namespace symmem::testing {

class CraftedStatsFile {
 public:
  // A valid header for process `pid` with start time `startTicks` (this layout, its sizes, the
  // magic), every slot free.
  CraftedStatsFile(pid_t pid, uint64_t startTicks, const std::string& program)
      : bytes_(static_cast<unsigned char*>(std::aligned_alloc(4096, stats::kSegmentBytes))) {
    std::memset(bytes_.get(), 0, stats::kSegmentBytes);
    clear(pid, startTicks, program);
  }

  // Back to a valid header and free slots.
  void clear(pid_t pid, uint64_t startTicks, const std::string& program) {
    std::memset(bytes_.get(), 0, stats::kHeaderBytes);
    for (int i = 0; i < stats::kSlots; ++i)
      if (touched_[i]) std::memset(slotBytes(i), 0, stats::kSlotBytes);
    std::fill(std::begin(touched_), std::end(touched_), false);
    stats::initHeader(header(), pid, startTicks, program, "crafted");
    std::memcpy(header()->magic, stats::kMagic, sizeof stats::kMagic);
  }

  stats::Header* header() { return reinterpret_cast<stats::Header*>(bytes_.get()); }
  unsigned char* headerBytes() { return bytes_.get(); }
  // Slot `i`, to be written: it goes into the file.
  stats::CommSlot* slot(int i) {
    touched_[i] = true;
    return reinterpret_cast<stats::CommSlot*>(slotBytes(i));
  }
  // Slot `i` made a live symmetric communicator `comm`, rank 0 of 2, timed one call in 64.
  stats::CommSlot* liveSlot(int i, uint64_t comm) {
    stats::CommSlot* s = slot(i);
    s->state = stats::SlotState::Live;
    s->rank = 0;
    s->nRanks = 2;
    s->comm = comm;
    s->openedNs = 1;
    s->symmetric = 1;
    s->gpuSampling = stats::kDefaultSamplePeriod;
    std::strncpy(s->path, "symmetric (crafted)", sizeof s->path - 1);
    return s;
  }

  // The file at `path` made `size` bytes long, holding the header and the slots written (the rest
  // is zeros, as a sparse file reads), cut at `size`.
  bool writeTo(const std::string& path, size_t size = stats::kSegmentBytes) {
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    bool ok = ftruncate(fd, 0) == 0 && ftruncate(fd, static_cast<off_t>(size)) == 0 &&
              writePart(fd, bytes_.get(), 0, stats::kHeaderBytes, size);
    for (int i = 0; ok && i < stats::kSlots; ++i)
      if (touched_[i]) ok = writePart(fd, slotBytes(i), slotOffset(i), stats::kSlotBytes, size);
    close(fd);
    return ok;
  }

  static size_t slotOffset(int i) { return stats::kHeaderBytes + static_cast<size_t>(i) * stats::kSlotBytes; }

 private:
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  unsigned char* slotBytes(int i) { return bytes_.get() + slotOffset(i); }
  static bool writePart(int fd, const unsigned char* from, size_t at, size_t bytes, size_t size) {
    if (at >= size) return true;
    const size_t n = std::min(bytes, size - at);
    return pwrite(fd, from, n, static_cast<off_t>(at)) == static_cast<ssize_t>(n);
  }

  std::unique_ptr<unsigned char, Free> bytes_;  // page-aligned: the layout's structs are 32-byte aligned
  bool touched_[stats::kSlots] = {};
};

}  // namespace symmem::testing
