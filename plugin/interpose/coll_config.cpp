// SPDX-License-Identifier: Apache-2.0
#include "plugin/interpose/coll_config.h"

#include <climits>
#include <cstring>

namespace symmem {

namespace {
constexpr int kUnsetInt = INT_MIN;  // NCCL_CONFIG_UNDEF_INT

struct Header {
  size_t size;
  unsigned int magic;
  unsigned int version;
};

// The header first, copied: the caller's struct may be smaller than ours.
Header headerOf(const void* config) {
  Header header{};
  std::memcpy(&header, config, sizeof(header));
  return header;
}
}  // namespace

CollConfigVerdict judgeCollConfig(const void* config) {
  if (config == nullptr) return {true, ""};
  const Header header = headerOf(config);
  if (header.magic != kCollConfigMagic) return {false, "a configuration without NCCL's magic (NCCL validates it)"};
  if (header.size != kCollConfigSize2_31 && header.size != kCollConfigSize2_32)
    return {false, "a configuration of a size this plugin does not know (a newer NCCL's fields)"};
  CollConfigLayout c{};
  std::memcpy(&c, config, header.size);
  if (c.ext != nullptr) return {false, "vendor extensions"};
  if (c.minCTAs != kUnsetInt || c.maxCTAs != kUnsetInt || c.nvlsCTAs != kUnsetInt) return {false, "a CTA count"};
  if (c.cgaClusterSize != kUnsetInt) return {false, "a cluster size"};
  if (c.algSelection != nullptr && c.algSelection[0] != '\0') return {false, "an algorithm selection"};
  if (c.CTAPolicy != kUnsetInt) return {false, "a CTA policy"};
  // launchCompletionEvent: local to this rank, so never a reason (completionEventOf).
  return {true, ""};
}

void* completionEventOf(const void* config) {
  if (config == nullptr) return nullptr;
  const Header header = headerOf(config);
  if (header.magic != kCollConfigMagic || header.size != kCollConfigSize2_32) return nullptr;
  void* event = nullptr;
  std::memcpy(&event, static_cast<const char*>(config) + offsetof(CollConfigLayout, launchCompletionEvent),
              sizeof(event));
  return event;
}

}  // namespace symmem
