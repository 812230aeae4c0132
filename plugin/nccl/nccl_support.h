// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the plugin does with each NCCL release: the tuner interface NCCL loads, whether NCCL names the
// communicator to its tuner, and so which communicators can take the symmetric path
// (docs/communicator-identity.md). Pure: from NCCL's version code alone, for symmem-info and the docs.
#include <string>

namespace symmem {

struct NcclSupport {
  int tunerVersion = 0;       // the ncclTunerPlugin_vN NCCL looks up first; 0: not supported
  bool idForTuner = false;    // NCCL hands the tuner's init the communicator's id
  bool knownRelease = false;  // within the releases this plugin was written against (2.21 - 2.32)
  std::string summary;        // one line: what the plugin does with it
};

// From NCCL_VERSION_CODE (major*10000 + minor*100 + patch).
NcclSupport ncclSupport(int versionCode);

}  // namespace symmem
