// The tuner objects NCCL looks up by name. One implementation (plugin/tuner.cpp, v5 shape);
// every other version is a thin adapter. NCCL 2.30+ tries v6 first, 2.28 tries v5, older ones
// v4, v3, v2 in turn, so one binary serves NCCL 2.21 to 2.32.
#include "plugin/tuner.h"

namespace {

using namespace symmem;

constexpr const char* kPluginName = "symmem";

abi::Result initV2toV4(size_t nRanks, size_t nNodes, abi::Logger log, void** ctx) {
  // Pre-2.28 NCCL gives no communicator id, NVLink domain info or model constants.
  return tuner::init(ctx, 0, nRanks, nNodes, log, nullptr, nullptr);
}

abi::Result getCollInfoV3(void* ctx, abi::Func collType, size_t nBytes, int numPipeOps, float** collCostTable,
                          int numAlgo, int numProto, int* nChannels) {
  return tuner::getCollInfo(ctx, collType, nBytes, numPipeOps, collCostTable, numAlgo, numProto, 0, nChannels);
}

}  // namespace

#define SYMMEM_EXPORT extern "C" __attribute__((visibility("default")))

SYMMEM_EXPORT const abi::TunerV6 ncclTunerPlugin_v6 = {kPluginName, tuner::init, tuner::getCollInfo,
                                                       tuner::finalize, nullptr};
SYMMEM_EXPORT const abi::TunerV5 ncclTunerPlugin_v5 = {kPluginName, tuner::init, tuner::getCollInfo,
                                                       tuner::finalize};
SYMMEM_EXPORT const abi::TunerV4 ncclTunerPlugin_v4 = {kPluginName, initV2toV4, tuner::getCollInfo, tuner::finalize};
SYMMEM_EXPORT const abi::TunerV3 ncclTunerPlugin_v3 = {kPluginName, initV2toV4, getCollInfoV3, tuner::finalize};
SYMMEM_EXPORT const abi::TunerV2 ncclTunerPlugin_v2 = {kPluginName, initV2toV4, tuner::getCollInfoV2,
                                                       tuner::finalize};
