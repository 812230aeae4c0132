// SPDX-License-Identifier: Apache-2.0
#pragma once
// The decision core: a pure function from plain values to one path. The tuner, the interposer,
// the tools and the tests all call decide(); nothing here reads the environment or the machine.
#include <array>
#include <cstdint>
#include <string_view>

#include "core/capability.h"
#include "core/collective.h"
#include "core/link_class.h"

namespace symmem {

enum class Path : int {
  SymOneShot,     // our one-shot push kernel
  SymTwoShot,     // our two-shot push kernel
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

// One table entry: the thresholds for one (capability, link class, world size).
struct Thresholds {
  ComputeCapability cc;
  LinkClass link = LinkClass::Unknown;
  int nRanks = 0;                           // 2..8; kBeyondEightRanks for the rule that covers 9 and more
  uint64_t oneShotMaxBytes = 0;             // all-reduces of 1..oneShotMaxBytes bytes go one-shot (0: off)
  uint64_t twoShotMaxBytes = 0;             // above the one-shot limit up to this, two-shot (0: off)
  std::array<NcclBand, kMaxBands> bands{};  // sorted by (collective, maxBytes)
  int numBands = 0;
  const char* source = "";  // where the numbers come from (built-in: a citation; file: path:line)
};
inline constexpr int kBeyondEightRanks = 9;

// What every rank of the communicator agrees on (exchanged at setup; for the tuner, node-wide facts).
struct CommFacts {
  int nRanks = 0;
  int nNodes = 1;
  ComputeCapability cc;                 // common capability; {0,0} if unknown or mixed
  LinkClass link = LinkClass::Unknown;  // worst link among the ranks
  bool allPairsP2p = false;             // every pair can read and write its peers' memory
  uint64_t symmetricCapacityBytes = 0;  // largest message the set-up symmetric path can take (0: none)
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
  constexpr bool symmetric() const { return path == Path::SymOneShot || path == Path::SymTwoShot; }
};

// The dtypes/ops the symmetric kernels implement: bf16, fp16, fp32 with sum, prod, min, max.
bool symmetricSupports(DataType dtype, ReduceOp op);

// The decision for one collective. `entry` may be null (no table entry applies): then NCCL untouched.
Decision decide(const CollRequest& request, const CommFacts& facts, const Thresholds* entry, const Policy& policy);

}  // namespace symmem
