// SPDX-License-Identifier: Apache-2.0
#include "core/decision.h"

#include <algorithm>
#include <cstddef>

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

std::string_view symAlgoName(SymAlgo a) {
  switch (a) {
    case SymAlgo::OneShot:
      return "oneshot";
    case SymAlgo::TwoShot:
      return "twoshot";
  }
  return "?";
}

bool setSymBands(Thresholds& entry, std::span<const SymBand> bands) {
  if (bands.size() > static_cast<size_t>(kMaxSymBands)) return false;
  std::array<SymBand, kMaxSymBands> sorted{};
  std::copy(bands.begin(), bands.end(), sorted.begin());
  const auto end = sorted.begin() + static_cast<std::ptrdiff_t>(bands.size());
  std::sort(sorted.begin(), end, [](const SymBand& a, const SymBand& b) { return a.maxBytes < b.maxBytes; });
  uint64_t oneShot = 0, twoShot = 0;
  for (auto it = sorted.begin(); it != end; ++it) {
    if (it->maxBytes == 0 || (it != sorted.begin() && it->maxBytes == (it - 1)->maxBytes)) return false;
    uint64_t& limit = it->algo == SymAlgo::OneShot ? oneShot : twoShot;
    limit = std::max(limit, it->maxBytes);
  }
  entry.symBands = sorted;
  entry.numSymBands = static_cast<int>(bands.size());
  entry.oneShotMaxBytes = oneShot;
  entry.twoShotMaxBytes = twoShot;
  return true;
}

namespace {

// What a pair of push limits means, as bands (at most two).
int pushBands(uint64_t oneShot, uint64_t twoShot, std::array<SymBand, 2>& out) {
  int n = 0;
  if (oneShot > 0) out[n++] = {oneShot, SymAlgo::OneShot, SymVariant::Push};
  if (twoShot > oneShot) out[n++] = {twoShot, SymAlgo::TwoShot, SymVariant::Push};
  return n;
}

}  // namespace

void setPushLimits(Thresholds& entry, uint64_t oneShot, uint64_t twoShot) {
  std::array<SymBand, 2> bands{};
  const int n = pushBands(oneShot, twoShot, bands);
  setSymBands(entry, std::span<const SymBand>(bands.data(), static_cast<size_t>(n)));
}

bool hasOnlyPushLimits(const Thresholds& entry) {
  std::array<SymBand, 2> bands{};
  const int n = pushBands(entry.oneShotMaxBytes, entry.twoShotMaxBytes, bands);
  return n == entry.numSymBands && std::equal(bands.begin(), bands.begin() + n, entry.symBands.begin());
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
      return "within a one-shot band";
    case Reason::WithinTwoShotLimit:
      return "within a two-shot band";
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

Decision symmetricPath(SymAlgo algo, SymVariant variant, Reason why) {
  return Decision{
      algo == SymAlgo::OneShot ? Path::SymOneShot : Path::SymTwoShot, NcclAlgo::Any, NcclProto::Any, 0, why, variant};
}

// Whether the halves variant can run here: two halves of at least 2 ranks each (core/sym_variant.h).
bool hasHalves(const CommFacts& facts) { return facts.halves == 2 && facts.nRanks >= 4; }

// The variant a band's call runs: the band's, except halves on a communicator without them, which runs
// push (every rank holds the same agreed facts, so every rank makes the same substitution).
SymVariant variantFor(const SymBand& band, const CommFacts& facts) {
  return band.variant == SymVariant::Halves && !hasHalves(facts) ? SymVariant::Push : band.variant;
}

// The first symmetric band that covers the size, or null above the last one.
const SymBand* symBandFor(const Thresholds& entry, uint64_t bytes) {
  for (int i = 0; i < entry.numSymBands; ++i)
    if (bytes <= entry.symBands[i].maxBytes) return &entry.symBands[i];
  return nullptr;
}

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
    // Forcing picks the algorithm only (testing): the variant stays push.
    return symmetricPath(policy.force == ForcedPath::OneShot ? SymAlgo::OneShot : SymAlgo::TwoShot, SymVariant::Push,
                         Reason::Forced);
  }

  if (facts.link == LinkClass::Unknown) return untouched(Reason::UnknownLink);
  if (entry == nullptr) return untouched(Reason::NoTableEntry);

  if (eligible) {
    if (const SymBand* band = symBandFor(*entry, request.bytes)) {
      const bool oneShot = band->algo == SymAlgo::OneShot;
      // The setup sized the kernel's buffers from the entry's limits; a band beyond them (an entry
      // edited without setSymBands) is never taken.
      const uint64_t setUpFor = oneShot ? entry->oneShotMaxBytes : entry->twoShotMaxBytes;
      if (request.bytes <= facts.symmetricCapacityBytes && request.bytes <= setUpFor)
        return symmetricPath(band->algo, variantFor(*band, facts),
                             oneShot ? Reason::WithinOneShotLimit : Reason::WithinTwoShotLimit);
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
