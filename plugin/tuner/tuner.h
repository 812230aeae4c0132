// SPDX-License-Identifier: Apache-2.0
#pragma once
// The tuner, implemented once against the v5 shape; plugin/entry/tuner_exports.cpp adapts it to
// every ABI version NCCL may ask for.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "plugin/interpose/rendezvous.h"
#include "plugin/nccl/tuner_abi.h"
#include "plugin/process/process_context.h"

namespace symmem {

// The name in every ncclTunerPlugin_vN object (NCCL logs it), which also tells a copy of this plugin.
inline constexpr const char kPluginName[] = "symmem";

// Per-communicator state: small, built from the process context at init.
struct TunerComm {
  uint64_t commId = 0;
  CommFacts facts;
  const Thresholds* entry = nullptr;
  Policy policy;
  bool active = false;                // false: every call leaves NCCL's choices untouched
  const void* contextSlot = nullptr;  // where NCCL keeps this context: the communicator's ticket key
  // NCCL's ranks must choose the same algorithm and protocol for each collective (a mix hangs), so
  // the bands apply only where every rank's tuner declared the same ones in the communicator's
  // agreement (plugin/interpose/rendezvous.h), checked at the first call: 0 not yet, 1 applied, 2 dropped.
  std::shared_ptr<Rendezvous> agreement;
  std::shared_ptr<std::atomic<int>> bandsChecked = std::make_shared<std::atomic<int>>(0);
};

// What this rank declares of its NCCL bands (non-zero; the same number on ranks that would apply the
// same bands, including none).
uint64_t bandsFingerprint(const TunerComm& comm);

// Whether `comm`'s bands may be applied: checked once, at its first call (every rank's declaration
// is in by then), against its agreement; without one (no communicator id), never.
bool bandsAgreed(const TunerComm& comm);

// Builds the per-communicator state from the process context (no NCCL involved; used by tests).
TunerComm makeTunerComm(const ProcessContext& process, uint64_t commId, size_t nRanks, size_t nNodes);

// Whether a cost table of numAlgo x numProto is one this plugin can index: both at least 1 and at most
// what NCCL's ABI allocates (abi::kNumAlgorithms x abi::kNumProtocols). A larger shape would make the
// row length, and so every cell's address, a guess that can land outside NCCL's buffer.
bool costTableShapeKnown(int numAlgo, int numProto);

// Applies a decision to NCCL's cost table (float[numAlgo][numProto], passed as float**) and
// nChannels. Never validates an IGNORE (-1) entry; returns true if it changed anything. A shape
// costTableShapeKnown refuses is left untouched.
bool applyToCostTable(const Decision& decision, float** collCostTable, int numAlgo, int numProto, int* nChannels);

// NCCL's v7 constants (a fifth, Rubin, compcap row in each bandwidth table) through the v5-shaped
// implementation: constantsV5 copies the latencies and the first four compcap rows;
// storeConstantsV5 writes them back to the same members and leaves the Rubin row as NCCL filled it.
abi::TunerConstantsV5 constantsV5(const abi::TunerConstantsV7& v7);
void storeConstantsV5(const abi::TunerConstantsV5& v5, abi::TunerConstantsV7& v7);

// Called at every tuner init, before anything else (the shared object uses it to attach the
// interposer when NCCL loaded the plugin only as its tuner), with the logger NCCL passed, which names
// the NCCL copy that loaded the plugin (plugin/interpose/nccl_copies.h). Returns whether every all-reduce of
// that copy now reaches the interposer (code hooks in place), and if not, why. Null: nothing
// attaches, and no communicator takes the symmetric path.
using TunerInitHook = bool (*)(abi::Logger logger, std::string* whyNot);
void setTunerInitHook(TunerInitHook hook);

// What a communicator's tuner init tells its peers through the agreement (plugin/interpose/rendezvous.h):
// whether this rank's all-reduces will reach the plugin, and why not. Pure.
struct Declaration {
  bool join = false;  // false: no agreement for this communicator (whyNot), on any rank
  Reach reach = Reach::None;
  std::string whyNot;
};
Declaration declarationFor(const ProcessContext& process, uint64_t commId, size_t nRanks, size_t nNodes,
                           bool reachesInterposer, const std::string& whyNotReached);

namespace tuner {
abi::Result init(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, abi::Logger log,
                 abi::NvlDomainInfoV5* nvlDomainInfo, abi::TunerConstantsV5* constants);
abi::Result getCollInfo(void* ctx, abi::Func collType, size_t nBytes, int numPipeOps, float** collCostTable,
                        int numAlgo, int numProto, int regBuff, int* nChannels);
abi::Result finalize(void* ctx);
// Tuner contexts made by init and not yet finalized (the process state is kept while any is alive).
int liveContexts();
// v2: NCCL asks for the algorithm and protocol directly (-1 = keep NCCL's).
abi::Result getCollInfoV2(void* ctx, abi::Func collType, size_t nBytes, int collNetSupport, int nvlsSupport,
                          int numPipeOps, int* algorithm, int* protocol, int* nChannels);
}  // namespace tuner

}  // namespace symmem
