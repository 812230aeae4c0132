// SPDX-License-Identifier: Apache-2.0
#pragma once
// The plugin's entry points, one set per NCCL copy it serves (plugin/interpose/nccl_copies.h): the code hooks on
// copy K's libnccl lead to Entries<K>, which hands each call to copy K's interposer, and anything it
// does not take to copy K's own functions. Copy 0's set is also what the exported ncclX symbols run
// (interpose_exports.cpp). Included by that one file.
#include <nccl.h>

#include <array>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>

#include "core/comm_identity.h"
#include "core/log.h"
#include "plugin/interpose/comm_names.h"
#include "plugin/interpose/comm_tickets.h"
#include "plugin/interpose/creation_calls.h"
#include "plugin/interpose/interposer.h"
#include "plugin/interpose/served_copies.h"
#include "plugin/nccl/nccl_real.h"

namespace symmem::entry {

// No exception may leave an entry point into the application's C caller (that would be
// std::terminate): a failure inside the plugin (an allocation, a thread that cannot start) is said once
// per entry point, and the call goes to NCCL as if the plugin were not there; unless the call had
// already passed its point of no return (PointOfNoReturn: a setup agreed on, a symmetric kernel
// launched, a group's end begun), where NCCL would run it a second time or pair it with nothing: it
// then returns ncclInternalError.
template <typename Ours, typename Nccls>
ncclResult_t guarded(std::once_flag& said, const char* name, int copy, Ours&& ours, Nccls&& nccls) {
  char what[192] = "unknown exception";
  bool begun = false;
  {
    const PointOfNoReturn point;
    try {
      return ours();
    } catch (const std::exception& e) {
      std::snprintf(what, sizeof(what), "%s", e.what());
    } catch (...) {
    }
    begun = point.passed();
  }
  try {
    if (begun) {
      std::call_once(said, [&] {
        SYMMEM_WARN(
            "%s: internal error (%s) after the call had begun; it returns ncclInternalError, and is not "
            "handed to NCCL",
            name, what);
      });
      return ncclInternalError;
    }
    std::call_once(said, [&] { SYMMEM_WARN("%s: internal error (%s); the call goes to NCCL", name, what); });
    return nccls(ServedCopies::get().nccl(copy));
  } catch (...) {
    return ncclInternalError;
  }
}

#define SYMMEM_GUARDED(name, ours, nccls)                                                  \
  do {                                                                                     \
    static std::once_flag said;                                                            \
    return guarded(                                                                        \
        said, name, K, [&] { return ours; }, [&](const RealNccl& real) { return nccls; }); \
  } while (0)

// A null function (an NCCL without it) answers as NCCL's own absence would.
template <typename F, typename... Args>
ncclResult_t callOrInvalid(F f, Args... args) {
  return f ? f(args...) : ncclInvalidUsage;
}

// Naming the communicators the creation calls make (plugin/interpose/comm_names.h) never fails the call: its
// own failure only leaves the communicator unnamed (found by its context slot, as before).
void nameCreated(ncclResult_t r, const ncclComm_t* newcomm, uint64_t identity, NamedBy by) noexcept;
// The caller's handle variable, as the creation record reads it (plugin/interpose/creation_calls.h).
inline const void* const* handleOf(const ncclComm_t* newcomm) { return reinterpret_cast<const void* const*>(newcomm); }
// The parent's name: from its own creation call, else the id NCCL copy `copy` gave its tuner (tuner v5).
uint64_t parentIdentity(ncclComm_t parent, int copy);
// ncclCommSplit's child name, counted before the call as NCCL counts it (0: unnamed).
uint64_t splitChildIdentity(ncclComm_t comm, int color, int copy);

template <int K>
struct Entries {
  static Interposer& interposer() { return ServedCopies::get().interposer(K); }
  static RealNccl& nccl() { return ServedCopies::get().nccl(K); }

  static ncclResult_t allReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    SYMMEM_GUARDED("ncclAllReduce", interposer().allReduce(sendbuff, recvbuff, count, datatype, op, comm, stream),
                   callOrInvalid(real.allReduce, sendbuff, recvbuff, count, datatype, op, comm, stream));
  }
  static ncclResult_t commDestroy(ncclComm_t comm) {
    forgetComm(comm);  // its address may be the next communicator's
    SYMMEM_GUARDED("ncclCommDestroy", interposer().commDestroy(comm), callOrInvalid(real.commDestroy, comm));
  }
  static ncclResult_t commFinalize(ncclComm_t comm) {
    SYMMEM_GUARDED("ncclCommFinalize", interposer().commFinalize(comm), callOrInvalid(real.commFinalize, comm));
  }
  static ncclResult_t commAbort(ncclComm_t comm) {
    forgetComm(comm);
    SYMMEM_GUARDED("ncclCommAbort", interposer().commAbort(comm), callOrInvalid(real.commAbort, comm));
  }
  static ncclResult_t commRevoke(ncclComm_t comm, int flags) {
    SYMMEM_GUARDED("ncclCommRevoke", interposer().commRevoke(comm, flags), callOrInvalid(real.commRevoke, comm, flags));
  }
  static ncclResult_t commGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
    SYMMEM_GUARDED("ncclCommGetAsyncError", interposer().commGetAsyncError(comm, asyncError),
                   callOrInvalid(real.commGetAsyncError, comm, asyncError));
  }
  static ncclResult_t groupStart() {
    SYMMEM_GUARDED("ncclGroupStart", interposer().groupStart(), callOrInvalid(real.groupStart));
  }
  static ncclResult_t groupEnd() {
    SYMMEM_GUARDED("ncclGroupEnd", interposer().groupEnd(), callOrInvalid(real.groupEnd));
  }
  static ncclResult_t groupSimulateEnd(ncclSimInfo_t* simInfo) {
    SYMMEM_GUARDED("ncclGroupSimulateEnd", interposer().groupSimulateEnd(simInfo),
                   callOrInvalid(real.groupSimulateEnd, simInfo));
  }
  // NCCL 2.31's ncclAllReduceConfig (its config type is not in the headers built against): reached only
  // through the code hooks and GOT rebinding, never exported (exports.map).
  static ncclResult_t allReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const void* config) {
    SYMMEM_GUARDED("ncclAllReduceConfig",
                   interposer().allReduceConfig(sendbuff, recvbuff, count, datatype, op, comm, stream, config),
                   callOrInvalid(real.allReduceConfig, sendbuff, recvbuff, count, datatype, op, comm, stream, config));
  }

  // The calls that make communicators: each goes to NCCL unchanged, and the communicator it made is
  // named from its arguments (plugin/interpose/comm_names.h), on the record of the call under way the tuner's
  // init claims where NCCL gives it no id (plugin/interpose/creation_calls.h). Reached only through the code
  // hooks and GOT rebinding, never exported.
  static ncclResult_t commInitRank(ncclComm_t* newcomm, int nranks, ncclUniqueId id, int rank) {
    const uint64_t identity = commIdentityFromUniqueId(&id);
    ncclResult_t r;
    {
      const CreationUnderWay underWay({identity, NamedBy::UniqueId}, nranks, handleOf(newcomm));
      r = callOrInvalid(nccl().commInitRank, newcomm, nranks, id, rank);
    }
    nameCreated(r, newcomm, identity, NamedBy::UniqueId);
    return r;
  }
  static ncclResult_t commInitRankConfig(ncclComm_t* newcomm, int nranks, ncclUniqueId id, int rank,
                                         ncclConfig_t* config) {
    const uint64_t identity = commIdentityFromUniqueId(&id);
    ncclResult_t r;
    {
      const CreationUnderWay underWay({identity, NamedBy::UniqueId}, nranks, handleOf(newcomm));
      r = callOrInvalid(nccl().commInitRankConfig, newcomm, nranks, id, rank, config);
    }
    nameCreated(r, newcomm, identity, NamedBy::UniqueId);
    return r;
  }
  static ncclResult_t commInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* ids,
                                           ncclConfig_t* config) {
    // NCCL names it from the first id alone; read before the call, which may return before it is used.
    const uint64_t identity = nId >= 1 && ids != nullptr ? commIdentityFromUniqueId(ids) : 0;
    ncclResult_t r;
    {
      const CreationUnderWay underWay({identity, NamedBy::UniqueId}, nranks, handleOf(newcomm));
      r = callOrInvalid(nccl().commInitRankScalable, newcomm, nranks, myrank, nId, ids, config);
    }
    nameCreated(r, newcomm, identity, NamedBy::UniqueId);
    return r;
  }
  static ncclResult_t commSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
    const uint64_t identity = splitChildIdentity(comm, color, K);
    ncclResult_t r;
    {
      // The child's rank count is known only once NCCL has gathered the colors.
      const CreationUnderWay underWay({identity, NamedBy::Split}, -1, handleOf(newcomm));
      r = callOrInvalid(nccl().commSplit, comm, color, key, newcomm, config);
    }
    if (r != ncclSuccess && r != ncclInProgress) {
      loseChildCount(comm);
      return r;
    }
    // A split inside a group, or non-blocking, writes *newcomm only when it completes: left unnamed.
    if (identity != 0) nameCreated(r, newcomm, identity, NamedBy::Split);
    return r;
  }
  // NCCL 2.29+: a grow counts as a child of the communicator it grows (its existing ranks), so the
  // splits after it are counted as NCCL counts them; the grown communicator itself is not named
  // (NCCL combines its id from the parent's internals).
  static ncclResult_t commGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* id, int rank, ncclComm_t* newcomm,
                               ncclConfig_t* config) {
    if (comm != nullptr) {
      try {
        countChild(comm);
      } catch (...) {
      }
    }
    const ncclResult_t r = callOrInvalid(nccl().commGrow, comm, nRanks, id, rank, newcomm, config);
    if (comm != nullptr && r != ncclSuccess && r != ncclInProgress) loseChildCount(comm);
    return r;
  }
};

#undef SYMMEM_GUARDED

// Where one copy's calls lead: Entries<K>'s functions, by the NCCL name they replace.
struct EntrySet {
  void* allReduce;
  void* commDestroy;
  void* commFinalize;
  void* commAbort;
  void* commRevoke;
  void* commGetAsyncError;
  void* groupStart;
  void* groupEnd;
  void* groupSimulateEnd;
  void* allReduceConfig;
  void* commInitRank;
  void* commInitRankConfig;
  void* commInitRankScalable;
  void* commSplit;
  void* commGrow;
};

template <int K>
EntrySet entrySetOf() {
  auto fn = [](auto f) { return reinterpret_cast<void*>(f); };
  using E = Entries<K>;
  return {fn(&E::allReduce),
          fn(&E::commDestroy),
          fn(&E::commFinalize),
          fn(&E::commAbort),
          fn(&E::commRevoke),
          fn(&E::commGetAsyncError),
          fn(&E::groupStart),
          fn(&E::groupEnd),
          fn(&E::groupSimulateEnd),
          fn(&E::allReduceConfig),
          fn(&E::commInitRank),
          fn(&E::commInitRankConfig),
          fn(&E::commInitRankScalable),
          fn(&E::commSplit),
          fn(&E::commGrow)};
}

static_assert(kMaxNcclCopies == 4, "one Entries<K> per copy below");
inline const EntrySet& entrySet(int copy) {
  static const std::array<EntrySet, kMaxNcclCopies> sets = {entrySetOf<0>(), entrySetOf<1>(), entrySetOf<2>(),
                                                            entrySetOf<3>()};
  return sets[static_cast<size_t>(copy)];
}

}  // namespace symmem::entry
