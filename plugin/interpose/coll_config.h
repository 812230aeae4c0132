// SPDX-License-Identifier: Apache-2.0
#pragma once
// NCCL 2.31's per-call configuration (`ncclAllReduceConfig(..., const ncclCollConfig_t* config)`),
// read without trusting it. The headers this project builds against (2.28) do not declare it, so the
// layout is written here: a versioned, append-only struct, NCCL_CONFIG_UNDEF_INT (INT_MIN) or null
// meaning "unset" in every field (docs/transparent-use.md, "Per-call configuration", says where the
// layout comes from and how far it was checked).
//
// A call goes the symmetric way only when its configuration asks nothing of the execution: no
// algorithm selection, no CTA bounds, no CTA policy, no cluster size, no vendor extensions. Anything
// else, or a configuration this code cannot read with certainty, goes to NCCL unchanged, which
// validates it and answers as it would have. NCCL requires those fields to match across ranks, so every
// rank reaches the same verdict. The launch-completion event does not decide: it is a local CUDA
// object, which one rank may pass and its peers not. The symmetric path records it after its kernel
// (completionEventOf).
#include <cstddef>
#include <cstdint>

namespace symmem {

// ncclCollConfig_t as NCCL 2.32 publishes it (2.31's ends before launchCompletionEvent).
struct CollConfigLayout {
  size_t size;
  unsigned int magic;
  unsigned int version;
  void* ext;  // vendor extension list
  int minCTAs;
  int maxCTAs;
  int nvlsCTAs;
  int cgaClusterSize;
  const char* algSelection;
  int forceAlgSelection;
  int CTAPolicy;
  uint64_t userProfilerTag;     // does not affect execution
  void* launchCompletionEvent;  // cudaEvent_t, 2.32
};
static_assert(offsetof(CollConfigLayout, ext) == 16);
static_assert(offsetof(CollConfigLayout, minCTAs) == 24);
static_assert(offsetof(CollConfigLayout, algSelection) == 40);
static_assert(offsetof(CollConfigLayout, CTAPolicy) == 52);
static_assert(offsetof(CollConfigLayout, userProfilerTag) == 56);
static_assert(offsetof(CollConfigLayout, launchCompletionEvent) == 64);
static_assert(sizeof(CollConfigLayout) == 72);

inline constexpr unsigned int kCollConfigMagic = 0xcafebeef;  // NCCL_API_MAGIC
// The sizes this code knows every field of: 2.31's (up to userProfilerTag) and 2.32's.
inline constexpr size_t kCollConfigSize2_31 = offsetof(CollConfigLayout, launchCompletionEvent);
inline constexpr size_t kCollConfigSize2_32 = sizeof(CollConfigLayout);

struct CollConfigVerdict {
  bool symmetricAllowed = false;
  const char* why = "";  // what sends the call to NCCL (empty when allowed)
};

// `config` may be null (the plain call). Reads at most `size` bytes of it, and nothing when the
// header is not one this code knows.
CollConfigVerdict judgeCollConfig(const void* config);

// The configuration's launch-completion event (a cudaEvent_t), or null: none set, no configuration, or
// a header other than 2.32's (2.31's struct ends before the field).
void* completionEventOf(const void* config);

}  // namespace symmem
