// SPDX-License-Identifier: Apache-2.0
#pragma once
// NCCL's tuner plugin ABI, versions 2 to 7, declared by this project from NCCL's documented
// layout (NCCL does not install its plugin headers). Each ncclTunerPlugin_vN symbol is a data
// object: a struct of four (v6, v7: five) pointer-sized members, looked up with dlsym.
#include <cstddef>
#include <cstdint>

namespace symmem::abi {

// ncclResult_t: an int-sized enum.
enum Result : int {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
};

// ncclFunc_t: only Broadcast..AllReduce (0..4) reach the tuner.
using Func = int;

inline constexpr float kAlgoProtoIgnore = -1.0f;  // NCCL_ALGO_PROTO_IGNORE

// NCCL_NUM_ALGORITHMS (tree, ring, collnet direct, collnet chain, nvls, nvls tree, pat) and
// NCCL_NUM_PROTOCOLS (ll, ll128, simple): the cost table NCCL hands to getCollInfo is
// float[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], and numAlgo / numProto are never larger.
inline constexpr int kNumAlgorithms = 7;
inline constexpr int kNumProtocols = 3;

using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

struct NvlDomainInfoV5 {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
};

inline constexpr int kConstAlgos = kNumAlgorithms;
inline constexpr int kConstProtos = kNumProtocols;
inline constexpr int kConstLinks = 3;       // NVLINK 0, PCI 1, NET 2
inline constexpr int kConstCompCaps = 4;    // Volta 0, Ampere 1, Hopper 2, Blackwell 3
inline constexpr int kConstCompCapsV7 = 5;  // v7: the same four, then Rubin 4
inline constexpr int kConstScales = 3;      // 1 node 0, 2 nodes 1, 4 nodes 2

struct TunerConstantsV5 {
  double baseLatencies[kConstAlgos][kConstProtos];
  double hwLatencies[kConstLinks][kConstAlgos][kConstProtos];
  double llMaxBws[kConstCompCaps][kConstScales];
  double perChMaxRingLL128Bws[kConstCompCaps][kConstScales];
  double perChMaxTreeLL128Bws[kConstCompCaps][kConstScales];
  double perChMaxTreeBws[kConstCompCaps][kConstScales];
  double perChMaxNVLSTreeBws[kConstCompCaps][kConstScales];
};

// v7: the v5 members in the same order; each bandwidth table has a fifth (Rubin) compcap row.
struct TunerConstantsV7 {
  double baseLatencies[kConstAlgos][kConstProtos];
  double hwLatencies[kConstLinks][kConstAlgos][kConstProtos];
  double llMaxBws[kConstCompCapsV7][kConstScales];
  double perChMaxRingLL128Bws[kConstCompCapsV7][kConstScales];
  double perChMaxTreeLL128Bws[kConstCompCapsV7][kConstScales];
  double perChMaxTreeBws[kConstCompCapsV7][kConstScales];
  double perChMaxNVLSTreeBws[kConstCompCapsV7][kConstScales];
};

// v2 (NCCL 2.21): NCCL asks for algorithm/protocol directly.
struct TunerV2 {
  const char* name;
  Result (*init)(size_t nRanks, size_t nNodes, Logger logFunction, void** context);
  Result (*getCollInfo)(void* context, Func collType, size_t nBytes, int collNetSupport, int nvlsSupport,
                        int numPipeOps, int* algorithm, int* protocol, int* nChannels);
  Result (*destroy)(void* context);
};

// v3 (NCCL 2.22): the cost table appears.
struct TunerV3 {
  const char* name;
  Result (*init)(size_t nRanks, size_t nNodes, Logger logFunction, void** context);
  Result (*getCollInfo)(void* context, Func collType, size_t nBytes, int numPipeOps, float** collCostTable, int numAlgo,
                        int numProto, int* nChannels);
  Result (*destroy)(void* context);
};

// v4 (NCCL 2.24): regBuff before nChannels.
struct TunerV4 {
  const char* name;
  Result (*init)(size_t nRanks, size_t nNodes, Logger logFunction, void** context);
  Result (*getCollInfo)(void* context, Func collType, size_t nBytes, int numPipeOps, float** collCostTable, int numAlgo,
                        int numProto, int regBuff, int* nChannels);
  Result (*destroy)(void* context);
};

// v5 (NCCL 2.28.3): new init with the communicator id, NVLink domains and NCCL's model constants.
struct TunerV5 {
  const char* name;
  Result (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, Logger logFunction,
                 NvlDomainInfoV5* nvlDomainInfo, TunerConstantsV5* constants);
  Result (*getCollInfo)(void* context, Func collType, size_t nBytes, int numPipeOps, float** collCostTable, int numAlgo,
                        int numProto, int regBuff, int* nChannels);
  Result (*finalize)(void* context);
};

// v6 (NCCL 2.30): v5 plus an optional chunk-size hook (may be null).
struct TunerV6 {
  const char* name;
  Result (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, Logger logFunction,
                 NvlDomainInfoV5* nvlDomainInfo, TunerConstantsV5* constants);
  Result (*getCollInfo)(void* context, Func collType, size_t nBytes, int numPipeOps, float** collCostTable, int numAlgo,
                        int numProto, int regBuff, int* nChannels);
  Result (*finalize)(void* context);
  Result (*getChunkSize)(void* context, Func collType, size_t nBytes, int algo, int proto, int nChannels,
                         size_t* chunkSize);
};

// v7 (NCCL 2.32.6): v6's five members; init takes the v7 constants (Rubin row added).
struct TunerV7 {
  const char* name;
  Result (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, Logger logFunction,
                 NvlDomainInfoV5* nvlDomainInfo, TunerConstantsV7* constants);
  Result (*getCollInfo)(void* context, Func collType, size_t nBytes, int numPipeOps, float** collCostTable, int numAlgo,
                        int numProto, int regBuff, int* nChannels);
  Result (*finalize)(void* context);
  Result (*getChunkSize)(void* context, Func collType, size_t nBytes, int algo, int proto, int nChannels,
                         size_t* chunkSize);
};

// Layout checks: a mismatch here is a crash inside NCCL, so the build stops instead.
static_assert(sizeof(Result) == 4);
static_assert(sizeof(NvlDomainInfoV5) == 3 * sizeof(int));
static_assert(sizeof(TunerConstantsV5) == 144 * sizeof(double));
static_assert(offsetof(TunerConstantsV5, hwLatencies) == 21 * sizeof(double));
static_assert(offsetof(TunerConstantsV5, llMaxBws) == 84 * sizeof(double));
static_assert(offsetof(TunerConstantsV5, perChMaxRingLL128Bws) == 96 * sizeof(double));
static_assert(offsetof(TunerConstantsV5, perChMaxTreeLL128Bws) == 108 * sizeof(double));
static_assert(offsetof(TunerConstantsV5, perChMaxTreeBws) == 120 * sizeof(double));
static_assert(offsetof(TunerConstantsV5, perChMaxNVLSTreeBws) == 132 * sizeof(double));
static_assert(sizeof(TunerConstantsV7) == 159 * sizeof(double));
static_assert(offsetof(TunerConstantsV7, hwLatencies) == 21 * sizeof(double));
static_assert(offsetof(TunerConstantsV7, llMaxBws) == 84 * sizeof(double));
static_assert(offsetof(TunerConstantsV7, perChMaxRingLL128Bws) == 99 * sizeof(double));
static_assert(offsetof(TunerConstantsV7, perChMaxTreeLL128Bws) == 114 * sizeof(double));
static_assert(offsetof(TunerConstantsV7, perChMaxTreeBws) == 129 * sizeof(double));
static_assert(offsetof(TunerConstantsV7, perChMaxNVLSTreeBws) == 144 * sizeof(double));

template <typename T>
constexpr bool kFourPointerStruct = sizeof(T) == 4 * sizeof(void*) && offsetof(T, name) == 0 &&
                                    offsetof(T, init) == sizeof(void*) && offsetof(T, getCollInfo) == 2 * sizeof(void*);
static_assert(kFourPointerStruct<TunerV2> && offsetof(TunerV2, destroy) == 3 * sizeof(void*));
static_assert(kFourPointerStruct<TunerV3> && offsetof(TunerV3, destroy) == 3 * sizeof(void*));
static_assert(kFourPointerStruct<TunerV4> && offsetof(TunerV4, destroy) == 3 * sizeof(void*));
static_assert(kFourPointerStruct<TunerV5> && offsetof(TunerV5, finalize) == 3 * sizeof(void*));
static_assert(sizeof(TunerV6) == 5 * sizeof(void*) && offsetof(TunerV6, finalize) == 3 * sizeof(void*) &&
              offsetof(TunerV6, getChunkSize) == 4 * sizeof(void*));
static_assert(sizeof(TunerV7) == 5 * sizeof(void*) && offsetof(TunerV7, name) == 0 &&
              offsetof(TunerV7, init) == sizeof(void*) && offsetof(TunerV7, getCollInfo) == 2 * sizeof(void*) &&
              offsetof(TunerV7, finalize) == 3 * sizeof(void*) && offsetof(TunerV7, getChunkSize) == 4 * sizeof(void*));

}  // namespace symmem::abi
