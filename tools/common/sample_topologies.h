// SPDX-License-Identifier: Apache-2.0
#pragma once
// The real topologies shipped with the tools (tests/data/topologies, installed under
// share/nccl-symmem/topologies, nccl_symmem/topologies in the wheel): machines a user can plan for
// before theirs arrives, with `symmem-info --topo FILE --cc X.Y` and `symmem-tune --plan --topo FILE`.
// A topology file names no capability, so each entry carries the one its GPUs have.
#include <span>
#include <string>

namespace symmem {

struct SampleTopology {
  const char* file;        // name inside the directory (a `topo -p2p` matrix that goes with it: p2pFile)
  const char* p2pFile;     // "" when the capture has none
  int gpus;                // GPUs in the capture
  const char* gpu;         // their model
  const char* capability;  // as --cc takes it
  const char* fabric;      // what joins them, in a few words
};

// Every shipped topology, PCIe machines first.
std::span<const SampleTopology> sampleTopologies();

// The directory that holds them, found beside the running tool: `<bin>/../share/nccl-symmem/topologies`
// (an install, the .deb, a build tree) or `<bin>/../topologies` (the wheel). Empty when neither exists.
std::string sampleTopologiesDir();

// The --help lines that list them in `dir` (sampleTopologiesDir()), with the command that plans for the
// first PCIe one; `tool` is "symmem-info" or "symmem-tune". With `dir` empty: where an install keeps them.
std::string sampleTopologiesHelp(const std::string& tool, const std::string& dir);

}  // namespace symmem
