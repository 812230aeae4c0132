// SPDX-License-Identifier: Apache-2.0
#include "plugin/tuner/tuner.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <new>
#include <string>

#include "core/log.h"
#include "core/table_file.h"
#include "plugin/interpose/comm_tickets.h"
#include "plugin/interpose/creation_calls.h"
#include "plugin/interpose/served_copies.h"
#include "plugin/interpose/setup_vote.h"
#include "plugin/nccl/legacy_comm_hash.h"
#include "plugin/process/process.h"
#include "symmem/version.h"

namespace symmem {

// NCCL's counts are size_t; a count no int holds is not a communicator this plugin can reason about.
bool countsFit(size_t nRanks, size_t nNodes) {
  return nRanks <= static_cast<size_t>(INT_MAX) && nNodes <= static_cast<size_t>(INT_MAX);
}

TunerComm makeTunerComm(const ProcessContext& process, uint64_t commId, size_t nRanks, size_t nNodes) {
  TunerComm comm;
  comm.commId = commId;
  comm.policy = process.policy;
  if (!countsFit(nRanks, nNodes)) return comm;  // inactive: NCCL's choices stay
  comm.facts.nRanks = static_cast<int>(nRanks);
  comm.facts.nNodes = static_cast<int>(nNodes);
  comm.facts.cc = process.node.mixedCapabilities ? ComputeCapability{} : process.node.cc;
  comm.facts.link = process.node.link;
  comm.facts.allPairsP2p = process.node.allPairsP2p;
  comm.facts.symmetricCapacityBytes = 0;  // the tuner never sees calls the symmetric path takes
  if (!comm.policy.enabled || !comm.policy.tuner || nNodes != 1 || nRanks < 2) return comm;
  if (process.table && comm.facts.cc.known() && comm.facts.link != LinkClass::Unknown) {
    comm.entry =
        lookupWithFallbackWarning(*process.table, comm.facts.cc, comm.facts.link, static_cast<int>(nRanks)).entry;
  }
  comm.active = comm.entry != nullptr && comm.entry->numBands > 0;
  return comm;
}

uint64_t bandsFingerprint(const TunerComm& comm) {
  constexpr uint64_t kNoBands = 1;
  if (!comm.active || comm.entry == nullptr) return kNoBands;
  const uint64_t f = entryFingerprint(*comm.entry);
  return f == 0 || f == kNoBands ? f + 2 : f;
}

bool bandsAgreed(const TunerComm& comm) {
  int checked = comm.bandsChecked->load(std::memory_order_acquire);
  if (checked != 0) return checked == 1;
  const bool agreed = comm.agreement && comm.agreement->bandsAgreed();
  int expected = 0;
  if (comm.bandsChecked->compare_exchange_strong(expected, agreed ? 1 : 2, std::memory_order_acq_rel)) {
    if (!agreed)
      SYMMEM_INFO(kLogTuning, "comm 0x%llx: the table's NCCL bands are not applied: %s",
                  static_cast<unsigned long long>(comm.commId),
                  comm.agreement ? "the ranks' tuners declared different bands (or not every rank declared)"
                                 : "no agreement to check that every rank applies the same ones");
    return agreed;
  }
  return expected == 1;
}

bool costTableShapeKnown(int numAlgo, int numProto) {
  return numAlgo > 0 && numProto > 0 && numAlgo <= abi::kNumAlgorithms && numProto <= abi::kNumProtocols;
}

bool applyToCostTable(const Decision& decision, float** collCostTable, int numAlgo, int numProto, int* nChannels) {
  if (decision.path != Path::NcclTuned || collCostTable == nullptr || !costTableShapeKnown(numAlgo, numProto))
    return false;
  // NCCL passes a contiguous float[numAlgo][numProto] as float**: index it as such.
  float* table = reinterpret_cast<float*>(collCostTable);
  const int wantAlgo = static_cast<int>(decision.algo);
  const int wantProto = static_cast<int>(decision.proto);
  int best = -1;
  for (int a = 0; a < numAlgo; ++a) {
    if (wantAlgo >= 0 && a != wantAlgo) continue;
    for (int p = 0; p < numProto; ++p) {
      if (wantProto >= 0 && p != wantProto) continue;
      const float cost = table[a * numProto + p];
      if (cost < 0.0f) continue;  // IGNORE: unsupported or disabled by the user; never validate it
      if (best < 0 || cost < table[best]) best = a * numProto + p;
    }
  }
  if (best < 0) return false;  // the band's choice is not available here: keep NCCL's
  table[best] = 0.0f;          // NCCL picks the smallest non-negative entry
  if (decision.nChannels > 0 && nChannels) *nChannels = decision.nChannels;
  return true;
}

namespace {
std::atomic<TunerInitHook> gInitHook{nullptr};
std::atomic<int> gLiveContexts{0};

// Copies the leading rows both arrays have (all of them when the shapes match).
template <typename Row, size_t N, size_t M>
void copyRows(Row (&dst)[N], const Row (&src)[M]) {
  std::memcpy(dst, src, std::min(N, M) * sizeof(Row));
}

template <typename To, typename From>
void copyConstants(To& to, const From& from) {
  copyRows(to.baseLatencies, from.baseLatencies);
  copyRows(to.hwLatencies, from.hwLatencies);
  copyRows(to.llMaxBws, from.llMaxBws);
  copyRows(to.perChMaxRingLL128Bws, from.perChMaxRingLL128Bws);
  copyRows(to.perChMaxTreeLL128Bws, from.perChMaxTreeLL128Bws);
  copyRows(to.perChMaxTreeBws, from.perChMaxTreeBws);
  copyRows(to.perChMaxNVLSTreeBws, from.perChMaxNVLSTreeBws);
}
}  // namespace

abi::TunerConstantsV5 constantsV5(const abi::TunerConstantsV7& v7) {
  abi::TunerConstantsV5 v5;
  copyConstants(v5, v7);
  return v5;
}

void storeConstantsV5(const abi::TunerConstantsV5& v5, abi::TunerConstantsV7& v7) { copyConstants(v7, v5); }

void setTunerInitHook(TunerInitHook hook) { gInitHook.store(hook, std::memory_order_release); }

Declaration declarationFor(const ProcessContext& process, uint64_t commId, size_t nRanks, size_t nNodes,
                           bool reachesInterposer, const std::string& whyNotReached) {
  Declaration d;
  // Outcomes every rank reaches alike (NCCL's id, rank and node counts are the communicator's): no
  // agreement at all, and every rank stays on NCCL without waiting for another.
  if (commId == 0) {
    d.whyNot =
        "this NCCL gives its tuner no communicator id, and without the code hooks no creation call names it "
        "(NCCL 2.28.3 or later gives one)";
    return d;
  }
  if (nRanks < 2 || nRanks > static_cast<size_t>(kRendezvousSlots)) {
    d.whyNot = nRanks < 2 ? "single-rank communicator" : "more ranks than the symmetric kernels take";
    return d;
  }
  // Per-process outcomes: this rank joins and tells its peers, so that they stay on NCCL with it.
  d.join = true;
  if (!process.policy.enabled || !process.policy.symmetric)
    d.whyNot = !process.policy.enabled ? "SYMMEM_ENABLE=0 on this rank" : "SYMMEM_SYMMETRIC=0 on this rank";
  else if (!process.driverTooOld.empty())
    d.whyNot = process.driverTooOld;
  else if (nNodes != 1 && !process.sharedGpuTest)
    d.whyNot = "NCCL sees " + std::to_string(nNodes) + " nodes";
  else if (!reachesInterposer)
    d.whyNot = whyNotReached.empty() ? "its all-reduces do not reach the plugin" : whyNotReached;
  d.reach = d.whyNot.empty() ? Reach::Every : Reach::None;
  return d;
}

namespace tuner {

namespace {
// The communicator's ticket for the interposer, and this rank's declaration to its peers (with the
// bands it would apply). Returns the agreement, or null.
std::shared_ptr<Rendezvous> openAgreement(const ProcessContext& process, const void* contextSlot, int copy,
                                          uint64_t commId, size_t nRanks, size_t nNodes, bool reaches,
                                          const std::string& whyNotReached, uint64_t bands, bool namedByCreation,
                                          const std::string& unnamed) {
  auto ticket = std::make_shared<CommTicket>();
  ticket->contextSlot = contextSlot;
  ticket->copy = copy;
  ticket->commId = commId;
  ticket->idFromNccl = commId != 0 && unnamed.empty() && !namedByCreation;
  ticket->nRanks = countsFit(nRanks, nNodes) ? static_cast<int>(nRanks) : 0;
  ticket->nNodes = countsFit(nRanks, nNodes) ? static_cast<int>(nNodes) : 0;
  Declaration d = declarationFor(process, commId, nRanks, nNodes, reaches, whyNotReached);
  if (commId == 0 && !unnamed.empty()) d.whyNot = "this NCCL gives its tuner no communicator id, and " + unnamed;
  ticket->whyNot = d.whyNot;
  // Said here too: a rank whose calls never reach the interposer has no other moment to say it.
  if (d.join && !d.whyNot.empty()) {
    SYMMEM_INFO(kLogInit | kLogColl, "comm 0x%llx: all-reduces stay on NCCL, on every rank (%s)",
                static_cast<unsigned long long>(commId), d.whyNot.c_str());
    // (Said at the default level by the cause's own notice where it defeats the plugin's purpose: a
    // refused hook install, a driver too old; the peers say it when they read this declaration.)
  }
  if (d.join) {
    std::string why;
    ticket->rendezvous = Rendezvous::join(commId, ticket->nRanks, &why);
    if (ticket->rendezvous) {
      ticket->rendezvous->declare(d.reach, d.whyNot, bands);
    } else {
      // Peers find no declaration from this rank: on one node they stay on NCCL at once, across
      // "nodes" (the testing mode) when their wait ends.
      SYMMEM_WARN("comm 0x%llx: cannot join the communicator's agreement (%s); its all-reduces stay on NCCL",
                  static_cast<unsigned long long>(commId), why.c_str());
      ticket->whyNot = "cannot join the agreement: " + why;
    }
  }
  std::shared_ptr<Rendezvous> agreement = ticket->rendezvous;
  registerTicket(std::move(ticket));
  return agreement;
}

std::string describeEntry(const Thresholds* e) {
  if (!e) return "none";
  std::string s = "cc=" + e->cc.str() + " link=" + std::string(linkClassName(e->link)) +
                  " ranks=" + (e->nRanks == kBeyondEightRanks ? std::string("9+") : std::to_string(e->nRanks)) +
                  " oneshot<=" + formatBytes(e->oneShotMaxBytes) + " twoshot<=" + formatBytes(e->twoShotMaxBytes) +
                  " bands=" + std::to_string(e->numBands) + " (" + e->source + ")";
  return s;
}
// The NCCL copy that handed over `log` (plugin/interpose/nccl_copies.h); -1 where it cannot be told.
int loadingCopy(abi::Logger log) {
  std::string why;
  const std::optional<int> copy = ServedCopies::get().ncclCopies().copyThatLoaded(log, &why);
  return copy ? *copy : -1;
}
// That copy's version; 0 where it cannot be told.
int ncclVersionOf(int copy) { return copy >= 0 ? ServedCopies::get().ncclCopies().versionCode(copy) : 0; }
}  // namespace

abi::Result init(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, abi::Logger log,
                 abi::NvlDomainInfoV5* /*nvlDomainInfo*/, abi::TunerConstantsV5* /*constants*/) {
  if (ctx == nullptr) return abi::kSuccess;
  *ctx = nullptr;
  setNcclLogger(log);
  std::string whyNotReached = "the plugin is not attached to libnccl in this process";
  const TunerInitHook hook = gInitHook.load(std::memory_order_acquire);
  const bool reaches = hook != nullptr && hook(log, &whyNotReached);
  // Never fail communicator creation: any problem leaves the communicator on NCCL's own model.
  try {
    const ProcessContext& process = processContext();
    // Which NCCL copy this is: for the interposer (then set up already) where its all-reduces reach
    // it, and for the version on NCCLs that give no id. Asked otherwise, it would set up the process's
    // NCCL state for nothing.
    const int copy = reaches || commId == 0 ? loadingCopy(log) : -1;
    // NCCL 2.27 and older give no id: the creation call under way names the communicator, where the
    // code hooks saw it (plugin/interpose/creation_calls.h).
    std::string unnamed;
    bool namedByCreation = false;
    if (commId == 0) {
      // The one made before the code hooks went in (the process's first) has no creation record: on the
      // releases whose layout is known, NCCL's own id for it is read from its struct
      // (plugin/nccl/legacy_comm_hash.h), and checked against the creation record wherever both exist.
      const int version = ncclVersionOf(copy);
      std::string notRead;
      const std::optional<uint64_t> read = legacyCommHash(ctx, version, nRanks, nNodes, &notRead);
      if (const std::optional<CommName> name = claimCreationForTunerInit(ctx, nRanks, &unnamed)) {
        commId = name->identity;
        namedByCreation = true;
        SYMMEM_INFO(kLogInit, "tuner: this NCCL gives its tuner no communicator id; 0x%llx from its creation call",
                    static_cast<unsigned long long>(commId));
        if (read) crossCheckLegacyCommHash(*read, commId);
      } else if (read) {
        commId = *read;
        namedByCreation = true;
        unnamed.clear();
        SYMMEM_INFO(kLogInit,
                    "tuner: this NCCL gives its tuner no communicator id, and no creation call names it; 0x%llx "
                    "read from NCCL's communicator struct",
                    static_cast<unsigned long long>(commId));
      } else if (legacyCommLayout(version) != nullptr) {
        unnamed += "; " + notRead;
      }
    }
    auto* comm = new (std::nothrow) TunerComm(makeTunerComm(process, commId, nRanks, nNodes));
    if (comm == nullptr) return abi::kSuccess;
    gLiveContexts.fetch_add(1, std::memory_order_acq_rel);
    *ctx = comm;
    comm->contextSlot = ctx;
    std::shared_ptr<Rendezvous> agreement =
        openAgreement(process, ctx, copy, commId, nRanks, nNodes, reaches, whyNotReached, bandsFingerprint(*comm),
                      namedByCreation, unnamed);
    // NCCL 2.27 and older run this init after their intra-node barrier: a rank's first collective can
    // come before a peer has declared, so no rank could know that the others apply the same bands.
    if (!namedByCreation) comm->agreement = std::move(agreement);
    const char* why = !countsFit(nRanks, nNodes) ? "rank or node count out of range: NCCL untouched"
                      : !process.policy.enabled  ? "disabled by SYMMEM_ENABLE=0"
                      : !process.policy.tuner    ? "NCCL bands off by SYMMEM_TUNER=0"
                      : nNodes != 1              ? "multi-node: NCCL untouched"
                      : nRanks < 2               ? "single rank: NCCL untouched"
                      : comm->entry == nullptr   ? "no table entry: NCCL untouched"
                      : comm->active             ? "applying NCCL bands"
                                                 : "no NCCL bands: NCCL's choices kept";
    SYMMEM_INFO(kLogTuning | kLogInit,
                "nccl-symmem %s tuner: comm 0x%llx nRanks %zu nNodes %zu; node: %s; entry: %s; %s",
                SYMMEM_VERSION_STRING, static_cast<unsigned long long>(commId), nRanks, nNodes,
                process.node.description.c_str(), describeEntry(comm->entry).c_str(), why);
  } catch (...) {
    SYMMEM_WARN("tuner init failed unexpectedly; this communicator keeps NCCL's own choices");
  }
  return abi::kSuccess;
}

abi::Result getCollInfo(void* ctx, abi::Func collType, size_t nBytes, int /*numPipeOps*/, float** collCostTable,
                        int numAlgo, int numProto, int /*regBuff*/, int* nChannels) {
  const auto* comm = static_cast<const TunerComm*>(ctx);
  if (comm == nullptr || !comm->active || collType < 0 || collType >= kNumCollectives) return abi::kSuccess;
  if (!bandsAgreed(*comm)) return abi::kSuccess;
  const CollRequest request{static_cast<Collective>(collType), ReduceOp::Other, DataType::Other, nBytes};
  if (!costTableShapeKnown(numAlgo, numProto)) {
    SYMMEM_WARN_ONCE("tuner:cost-table-shape",
                     "tuner: NCCL passed a %dx%d cost table; this plugin knows at most %dx%d "
                     "(NCCL_NUM_ALGORITHMS x NCCL_NUM_PROTOCOLS), so it leaves NCCL's choices untouched",
                     numAlgo, numProto, abi::kNumAlgorithms, abi::kNumProtocols);
    return abi::kSuccess;
  }
  const Decision d = decide(request, comm->facts, comm->entry, comm->policy);
  if (applyToCostTable(d, collCostTable, numAlgo, numProto, nChannels)) {
    SYMMEM_TRACE(kLogTuning, "%s %zu bytes: %s/%s channels %d (table band)",
                 std::string(collectiveName(request.collective)).c_str(), nBytes,
                 std::string(ncclAlgoName(d.algo)).c_str(), std::string(ncclProtoName(d.proto)).c_str(), d.nChannels);
  }
  return abi::kSuccess;
}

int liveContexts() { return gLiveContexts.load(std::memory_order_acquire); }

abi::Result finalize(void* ctx) {
  if (ctx) {
    gLiveContexts.fetch_sub(1, std::memory_order_acq_rel);
    retireTicket(static_cast<const TunerComm*>(ctx)->contextSlot);
  }
  delete static_cast<TunerComm*>(ctx);
  return abi::kSuccess;
}

abi::Result getCollInfoV2(void* ctx, abi::Func collType, size_t nBytes, int /*collNetSupport*/, int /*nvlsSupport*/,
                          int /*numPipeOps*/, int* algorithm, int* protocol, int* nChannels) {
  const auto* comm = static_cast<const TunerComm*>(ctx);
  if (comm == nullptr || !comm->active || collType < 0 || collType >= kNumCollectives) return abi::kSuccess;
  if (!bandsAgreed(*comm)) return abi::kSuccess;
  const CollRequest request{static_cast<Collective>(collType), ReduceOp::Other, DataType::Other, nBytes};
  const Decision d = decide(request, comm->facts, comm->entry, comm->policy);
  // Without a cost table NCCL cannot say what is available: only a fully specified band applies.
  if (d.path != Path::NcclTuned || d.algo == NcclAlgo::Any || d.proto == NcclProto::Any) return abi::kSuccess;
  if (algorithm) *algorithm = static_cast<int>(d.algo);
  if (protocol) *protocol = static_cast<int>(d.proto);
  if (nChannels && d.nChannels > 0) *nChannels = d.nChannels;
  return abi::kSuccess;
}

}  // namespace tuner
}  // namespace symmem
