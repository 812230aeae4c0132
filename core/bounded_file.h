// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reading a file a user named (SYMMEM_TABLE, SYMMEM_TOPO_FILE, a tool's argument) without letting
// that file stall or exhaust the process it is read in. A name can lead anywhere: a FIFO that no one
// writes (an ordinary open blocks forever, inside ncclCommInitRank), /dev/zero or /dev/urandom
// (endless), a directory (reads as empty), a file far larger than any capture. Only regular files are
// read, and only up to a size the caller names; everything else is an error that says what the path
// is and why it was not read.
#include <cstddef>
#include <string>

namespace symmem {

// Largest files read, in bytes. The largest real captures are a few hundred KiB (an hwloc export of a
// 16-GPU NVSwitch node: 420 KiB; a table file: a few KiB).
inline constexpr size_t kTopologyFileMaxBytes = size_t{16} << 20;  // SYMMEM_TOPO_FILE, --topo
inline constexpr size_t kTableFileMaxBytes = size_t{1} << 20;      // SYMMEM_TABLE

struct BoundedFileText {
  enum class Failure : int { None, CannotOpen, NotARegularFile, TooLarge, ReadError };
  std::string text;
  std::string error;  // "path: reason" when the file was not read; text is then empty
  Failure failure = Failure::None;
  bool ok() const { return failure == Failure::None; }
};

// The whole content of the regular file `path` when it holds at most `maxBytes` bytes. Never blocks
// on the file (it is opened O_NONBLOCK and a non-regular file is refused before any read), reads at
// most maxBytes + 1 bytes, and does not trust the size the file system reports (files under /proc
// report 0). Errors: "path: cannot open: <errno text>", "path: is a directory, not a file" (also
// FIFO, character device, block device, socket), "path: larger than the limit of N bytes for this
// file", "path: read error: <errno text>".
BoundedFileText readBoundedFile(const std::string& path, size_t maxBytes);

}  // namespace symmem
