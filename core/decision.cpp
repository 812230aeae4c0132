// SPDX-License-Identifier: Apache-2.0
#include "core/decision.h"

#include "core/symmetric_limits.h"

namespace symmem {

std::string_view pathName(Path p) {
  switch (p) {
    case Path::SymOneShot:
      return "symmetric one-shot";
    case Path::SymTwoShot:
      return "symmetric two-shot";
    case Path::NcclTuned:
      return "NCCL tuned";
    case Path::NcclUntouched:
      return "NCCL";
  }
  return "?";
}

std::string_view ncclAlgoName(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::Any:
      return "any";
    case NcclAlgo::Tree:
      return "tree";
    case NcclAlgo::Ring:
      return "ring";
    case NcclAlgo::CollNetDirect:
      return "collnet_direct";
    case NcclAlgo::CollNetChain:
      return "collnet_chain";
    case NcclAlgo::Nvls:
      return "nvls";
    case NcclAlgo::NvlsTree:
      return "nvls_tree";
    case NcclAlgo::Pat:
      return "pat";
  }
  return "?";
}

std::string_view ncclProtoName(NcclProto p) {
  switch (p) {
    case NcclProto::Any:
      return "any";
    case NcclProto::LL:
      return "ll";
    case NcclProto::LL128:
      return "ll128";
    case NcclProto::Simple:
      return "simple";
  }
  return "?";
}

std::string_view reasonText(Reason r) {
  switch (r) {
    case Reason::Disabled:
      return "plugin disabled (SYMMEM_ENABLE=0)";
    case Reason::MultiNode:
      return "multi-node communicator";
    case Reason::SingleRank:
      return "single-rank communicator";
    case Reason::EmptyMessage:
      return "empty message";
    case Reason::NoTableEntry:
      return "no table entry for this capability/link/size";
    case Reason::UnknownLink:
      return "link class unknown";
    case Reason::WithinOneShotLimit:
      return "within the one-shot limit";
    case Reason::WithinTwoShotLimit:
      return "within the two-shot limit";
    case Reason::Forced:
      return "forced by SYMMEM_FORCE_PATH";
    case Reason::TableBand:
      return "table band";
    case Reason::NoBandForSize:
      return "above the symmetric limits, no NCCL band";
    case Reason::NotAllReduce:
      return "not an all-reduce";
    case Reason::UnsupportedDtypeOrOp:
      return "dtype/op not implemented by the kernels";
    case Reason::NoP2p:
      return "not every pair can do P2P";
    case Reason::SymmetricOff:
      return "symmetric path off (SYMMEM_SYMMETRIC=0)";
    case Reason::TunerOff:
      return "tuner off (SYMMEM_TUNER=0)";
    case Reason::ExceedsCapacity:
      return "message larger than the symmetric buffers";
    case Reason::TooManyRanks:
      return "the symmetric kernels take at most 8 ranks";
  }
  return "?";
}

bool symmetricSupports(DataType dtype, ReduceOp op) {
  const bool typeOk = dtype == DataType::Bfloat16 || dtype == DataType::Float16 || dtype == DataType::Float32;
  const bool opOk = op == ReduceOp::Sum || op == ReduceOp::Prod || op == ReduceOp::Min || op == ReduceOp::Max;
  return typeOk && opOk;
}

namespace {

Decision untouched(Reason why) { return Decision{Path::NcclUntouched, NcclAlgo::Any, NcclProto::Any, 0, why}; }

// NCCL's band for this size, if the table has one and the tuner is on.
Decision ncclChoice(const CollRequest& request, const Thresholds& entry, const Policy& policy) {
  if (!policy.tuner) return untouched(Reason::TunerOff);
  for (int i = 0; i < entry.numBands; ++i) {
    const NcclBand& band = entry.bands[i];
    if (band.collective == request.collective && request.bytes <= band.maxBytes) {
      if (band.algo == NcclAlgo::Any && band.proto == NcclProto::Any && band.nChannels == 0) break;
      return Decision{Path::NcclTuned, band.algo, band.proto, band.nChannels, Reason::TableBand};
    }
  }
  return untouched(Reason::NoBandForSize);
}

// Whether the symmetric path could take this call at all (size limits aside); if not, why.
bool symmetricEligible(const CollRequest& request, const CommFacts& facts, const Policy& policy, Reason& why) {
  if (request.collective != Collective::AllReduce) {
    why = Reason::NotAllReduce;
    return false;
  }
  if (!policy.symmetric) {
    why = Reason::SymmetricOff;
    return false;
  }
  if (!symmetricSupports(request.dtype, request.op)) {
    why = Reason::UnsupportedDtypeOrOp;
    return false;
  }
  if (!facts.allPairsP2p) {
    why = Reason::NoP2p;
    return false;
  }
  if (facts.nRanks > kSymmetricMaxRanks) {
    why = Reason::TooManyRanks;
    return false;
  }
  return true;
}

}  // namespace

Decision decide(const CollRequest& request, const CommFacts& facts, const Thresholds* entry, const Policy& policy) {
  if (!policy.enabled) return untouched(Reason::Disabled);
  if (facts.nNodes != 1) return untouched(Reason::MultiNode);
  if (facts.nRanks < 2) return untouched(Reason::SingleRank);
  if (request.bytes == 0) return untouched(Reason::EmptyMessage);

  Reason why = Reason::NoTableEntry;
  const bool eligible = symmetricEligible(request, facts, policy, why);

  if (policy.force != ForcedPath::Auto) {
    if (policy.force == ForcedPath::Nccl) return untouched(Reason::Forced);
    if (!eligible) return untouched(why);
    if (request.bytes > facts.symmetricCapacityBytes) return untouched(Reason::ExceedsCapacity);
    return Decision{policy.force == ForcedPath::OneShot ? Path::SymOneShot : Path::SymTwoShot, NcclAlgo::Any,
                    NcclProto::Any, 0, Reason::Forced};
  }

  if (facts.link == LinkClass::Unknown) return untouched(Reason::UnknownLink);
  if (entry == nullptr) return untouched(Reason::NoTableEntry);

  if (eligible) {
    const bool fits = request.bytes <= facts.symmetricCapacityBytes;
    if (request.bytes <= entry->oneShotMaxBytes) {
      if (fits) return Decision{Path::SymOneShot, NcclAlgo::Any, NcclProto::Any, 0, Reason::WithinOneShotLimit};
      why = Reason::ExceedsCapacity;
    } else if (request.bytes <= entry->twoShotMaxBytes) {
      if (fits) return Decision{Path::SymTwoShot, NcclAlgo::Any, NcclProto::Any, 0, Reason::WithinTwoShotLimit};
      why = Reason::ExceedsCapacity;
    } else {
      why = Reason::NoBandForSize;
    }
  }
  Decision d = ncclChoice(request, *entry, policy);
  // Keep the more telling reason when nothing applies: why the symmetric path was not taken.
  if (d.path == Path::NcclUntouched && d.reason != Reason::TunerOff) d.reason = why;
  return d;
}

}  // namespace symmem
