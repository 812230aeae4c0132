// SPDX-License-Identifier: Apache-2.0
// The tuner objects NCCL looks up by name. One implementation (plugin/tuner/tuner.cpp, v5 shape);
// every other version is a thin adapter. NCCL takes the first symbol it finds, newest first:
// 2.32.6+ tries v7, then v6 ... v2; 2.30 - 2.32.5 start at v6; 2.28 - 2.29 at v5; older ones
// try v4, v3, v2 in turn. One binary serves NCCL 2.21 onwards.
#include "plugin/tuner/tuner.h"

namespace {

using namespace symmem;

abi::Result initV2toV4(size_t nRanks, size_t nNodes, abi::Logger log, void** ctx) {
  // Pre-2.28 NCCL gives no communicator id, NVLink domain info or model constants.
  return tuner::init(ctx, 0, nRanks, nNodes, log, nullptr, nullptr);
}

abi::Result getCollInfoV3(void* ctx, abi::Func collType, size_t nBytes, int numPipeOps, float** collCostTable,
                          int numAlgo, int numProto, int* nChannels) {
  return tuner::getCollInfo(ctx, collType, nBytes, numPipeOps, collCostTable, numAlgo, numProto, 0, nChannels);
}

// v7: the implementation sees a v5-shaped copy of NCCL's constants; what it writes goes back to
// the same members, and the Rubin row it cannot see keeps NCCL's values.
abi::Result initV7(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, abi::Logger log,
                   abi::NvlDomainInfoV5* nvlDomainInfo, abi::TunerConstantsV7* constants) {
  if (constants == nullptr) return tuner::init(ctx, commId, nRanks, nNodes, log, nvlDomainInfo, nullptr);
  abi::TunerConstantsV5 v5 = constantsV5(*constants);
  const abi::Result result = tuner::init(ctx, commId, nRanks, nNodes, log, nvlDomainInfo, &v5);
  if (result == abi::kSuccess) storeConstantsV5(v5, *constants);
  return result;
}

}  // namespace

#define SYMMEM_EXPORT extern "C" __attribute__((visibility("default")))

SYMMEM_EXPORT const abi::TunerV7 ncclTunerPlugin_v7 = {kPluginName, initV7, tuner::getCollInfo, tuner::finalize,
                                                       nullptr};
SYMMEM_EXPORT const abi::TunerV6 ncclTunerPlugin_v6 = {kPluginName, tuner::init, tuner::getCollInfo, tuner::finalize,
                                                       nullptr};
SYMMEM_EXPORT const abi::TunerV5 ncclTunerPlugin_v5 = {kPluginName, tuner::init, tuner::getCollInfo, tuner::finalize};
SYMMEM_EXPORT const abi::TunerV4 ncclTunerPlugin_v4 = {kPluginName, initV2toV4, tuner::getCollInfo, tuner::finalize};
SYMMEM_EXPORT const abi::TunerV3 ncclTunerPlugin_v3 = {kPluginName, initV2toV4, getCollInfoV3, tuner::finalize};
SYMMEM_EXPORT const abi::TunerV2 ncclTunerPlugin_v2 = {kPluginName, initV2toV4, tuner::getCollInfoV2, tuner::finalize};
