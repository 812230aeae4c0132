// SPDX-License-Identifier: Apache-2.0
#include "plugin/nccl/nccl_support.h"

#include "plugin/nccl/legacy_comm_hash.h"

namespace symmem {

namespace {
constexpr int code(int major, int minor, int patch) { return major * 10000 + minor * 100 + patch; }
}  // namespace

NcclSupport ncclSupport(int versionCode) {
  NcclSupport s;
  if (versionCode < code(2, 21, 0)) {
    s.summary = "older than 2.21, whose tuner interface this plugin does not speak: NCCL runs unchanged";
    return s;
  }
  s.knownRelease = versionCode < code(2, 33, 0);
  s.tunerVersion = versionCode < code(2, 22, 0)   ? 2
                   : versionCode < code(2, 24, 0) ? 3
                   : versionCode < code(2, 28, 0) ? 4
                   : versionCode < code(2, 30, 0) ? 5
                   : versionCode < code(2, 32, 6) ? 6
                                                  : 7;
  s.idForTuner = versionCode >= code(2, 28, 3);
  const std::string tuner = "tuner v" + std::to_string(s.tunerVersion);
  if (s.idForTuner) {
    s.summary = tuner +
                " with the communicator's id: the symmetric path and the table's NCCL choices for every "
                "single-node communicator whose all-reduces reach the plugin";
  } else if (legacyCommLayout(versionCode) != nullptr) {
    s.summary = tuner +
                " without a communicator id: the symmetric path for communicators the code hooks see made and "
                "the process's first (named by the id NCCL keeps in its struct), not those made inside a group "
                "or non-blocking after it; no NCCL choices";
  } else {
    s.summary = tuner +
                " without a communicator id: the symmetric path for communicators the code hooks see made "
                "(not the process's first, nor those made inside a group or non-blocking); no NCCL choices";
  }
  if (!s.knownRelease) s.summary += " (newer than the releases this plugin knows, 2.21 - 2.32: as for 2.32)";
  return s;
}

}  // namespace symmem
