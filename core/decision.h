// SPDX-License-Identifier: Apache-2.0
#pragma once
// The decision core: a pure function from plain values to one path. The tuner, the interposer,
// the tools and the tests all call decide(); nothing here reads the environment or the machine.
#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/capability.h"
#include "core/collective.h"
#include "core/link_class.h"
#include "core/sym_variant.h"

namespace symmem {

enum class Path : int {
  SymOneShot,     // our one-shot kernel, in the variant the decision names
  SymTwoShot,     // our two-shot kernel, in the variant the decision names
  NcclTuned,      // NCCL, with the algorithm/protocol/channels of a table band
  NcclUntouched,  // NCCL exactly as it would run without us
};
std::string_view pathName(Path p);

// NCCL's algorithm and protocol indices (the cost table is float[numAlgo][numProto]).
enum class NcclAlgo : int {
  Any = -1,
  Tree = 0,
  Ring = 1,
  CollNetDirect = 2,
  CollNetChain = 3,
  Nvls = 4,
  NvlsTree = 5,
  Pat = 6
};
enum class NcclProto : int { Any = -1, LL = 0, LL128 = 1, Simple = 2 };
inline constexpr int kNcclNumAlgos = 7;
inline constexpr int kNcclNumProtos = 3;
std::string_view ncclAlgoName(NcclAlgo a);
std::string_view ncclProtoName(NcclProto p);

// One band of NCCL choices: for `collective` at sizes <= maxBytes (and above the previous band),
// prefer algo/proto (Any = leave NCCL's choice) and nChannels (0 = NCCL's choice).
struct NcclBand {
  Collective collective = Collective::AllReduce;
  uint64_t maxBytes = 0;
  NcclAlgo algo = NcclAlgo::Any;
  NcclProto proto = NcclProto::Any;
  int nChannels = 0;
  constexpr bool operator==(const NcclBand&) const = default;
};

inline constexpr int kMaxBands = 8;

// The two symmetric kernels.
enum class SymAlgo : int { OneShot, TwoShot };
std::string_view symAlgoName(SymAlgo a);  // "oneshot", "twoshot" (the table file's words)

// One band of the symmetric path: all-reduces above the previous band up to maxBytes run `algo` in
// `variant` (core/sym_variant.h says what each variant does to the links).
struct SymBand {
  uint64_t maxBytes = 0;
  SymAlgo algo = SymAlgo::OneShot;
  SymVariant variant = SymVariant::Push;
  constexpr bool operator==(const SymBand&) const = default;
};
inline constexpr int kMaxSymBands = 8;

// One table entry: the thresholds for one (capability, link class, world size).
struct Thresholds {
  ComputeCapability cc;
  LinkClass link = LinkClass::Unknown;
  int nRanks = 0;  // 2..8; kBeyondEightRanks for the rule that covers 9 and more
  // The symmetric bands, sorted by maxBytes (each above 0 and distinct): an all-reduce takes the first
  // band whose maxBytes covers it; above the last band the NCCL bands apply. Set them with
  // setSymBands() or setPushLimits(), which keep the two limits below in step.
  std::array<SymBand, kMaxSymBands> symBands{};
  int numSymBands = 0;
  // Derived from the bands: the largest maxBytes of a one-shot band and of a two-shot band (0: none).
  // The symmetric setup sizes its buffers from these (core/symmetric_limits.h).
  uint64_t oneShotMaxBytes = 0;
  uint64_t twoShotMaxBytes = 0;
  std::array<NcclBand, kMaxBands> bands{};  // sorted by (collective, maxBytes)
  int numBands = 0;
  const char* source = "";  // where the numbers come from (built-in: a citation; file: path:line)
};
inline constexpr int kBeyondEightRanks = 9;

// Replaces the entry's symmetric bands with `bands` (in any order; sorted here) and derives the two
// limits from them. Refuses (false, entry unchanged) more than kMaxSymBands bands, a maxBytes of 0, or
// two bands with the same maxBytes: those would contradict each other.
bool setSymBands(Thresholds& entry, std::span<const SymBand> bands);

// The bands that a pair of push limits means (the `entry ... oneshot= twoshot=` line of a table file):
// one-shot push up to oneShot, then two-shot push up to twoShot; 0 turns a path off, and a two-shot
// limit not above the one-shot limit adds nothing.
void setPushLimits(Thresholds& entry, uint64_t oneShot, uint64_t twoShot);

// Whether the bands are exactly what setPushLimits(entry, oneShotMaxBytes, twoShotMaxBytes) makes.
bool hasOnlyPushLimits(const Thresholds& entry);

// The most ranks whose halves CommFacts carries (the per-rank facts list at most 16 GPUs of a node).
inline constexpr int kMaxHalvesRanks = 16;

// What every rank of the communicator agrees on (exchanged at setup; for the tuner, node-wide facts).
struct CommFacts {
  int nRanks = 0;
  int nNodes = 1;
  ComputeCapability cc;                 // common capability; {0,0} if unknown or mixed
  LinkClass link = LinkClass::Unknown;  // worst link among the ranks
  bool allPairsP2p = false;             // every pair can read and write its peers' memory
  uint64_t symmetricCapacityBytes = 0;  // largest message the set-up symmetric path can take (0: none)
  // The two halves (topology/halves.h), for the halves variant (core/sym_variant.h). halves is 2 when the
  // ranks split into two equal halves at the slowest level between them (then halfOf[r] is rank r's half,
  // 0 for rank 0's, for r < nRanks <= kMaxHalvesRanks, and middle is the link class of the pairs across
  // the middle), 0 otherwise: then only the flat kernels. decide() reads halves and nRanks: a band naming
  // the halves variant runs push unless halves is 2 with at least 2 ranks per half (nRanks >= 4).
  int halves = 0;
  LinkClass middle = LinkClass::Unknown;
  std::array<uint8_t, kMaxHalvesRanks> halfOf{};
};

struct CollRequest {
  Collective collective = Collective::AllReduce;
  ReduceOp op = ReduceOp::Other;     // Other when unknown (the tuner does not see the op)
  DataType dtype = DataType::Other;  // Other when unknown (the tuner does not see the dtype)
  uint64_t bytes = 0;
};

enum class ForcedPath : int { Auto, OneShot, TwoShot, Nccl };

// Switches that come from settings (the same on every rank: same environment is part of the contract).
struct Policy {
  bool enabled = true;    // SYMMEM_ENABLE
  bool symmetric = true;  // SYMMEM_SYMMETRIC
  bool tuner = true;      // SYMMEM_TUNER
  ForcedPath force = ForcedPath::Auto;
};

enum class Reason : int {
  Disabled,  // SYMMEM_ENABLE=0
  MultiNode,
  SingleRank,
  EmptyMessage,
  NoTableEntry,
  UnknownLink,
  WithinOneShotLimit,
  WithinTwoShotLimit,
  Forced,
  TableBand,
  NoBandForSize,
  NotAllReduce,
  UnsupportedDtypeOrOp,
  NoP2p,
  SymmetricOff,     // SYMMEM_SYMMETRIC=0
  TunerOff,         // SYMMEM_TUNER=0
  ExceedsCapacity,  // symmetric buffers are smaller than the message
  TooManyRanks,     // more ranks than the symmetric kernels take (core/symmetric_limits.h)
};
std::string_view reasonText(Reason r);

struct Decision {
  Path path = Path::NcclUntouched;
  NcclAlgo algo = NcclAlgo::Any;
  NcclProto proto = NcclProto::Any;
  int nChannels = 0;
  Reason reason = Reason::NoTableEntry;
  SymVariant variant = SymVariant::Push;  // for the symmetric paths: how the kernel moves the data
  constexpr bool symmetric() const { return path == Path::SymOneShot || path == Path::SymTwoShot; }
};

// The dtypes/ops the symmetric kernels implement: bf16, fp16, fp32 with sum, prod, min, max.
bool symmetricSupports(DataType dtype, ReduceOp op);

// The decision for one collective. `entry` may be null (no table entry applies): then NCCL untouched.
Decision decide(const CollRequest& request, const CommFacts& facts, const Thresholds* entry, const Policy& policy);

}  // namespace symmem
