// SPDX-License-Identifier: Apache-2.0
#pragma once
// How a symmetric all-reduce moves its data between GPUs (kernels/allreduce_kernels.cuh):
//   push    every rank stores its data into every peer's buffer at once (posted writes); the best on
//           NVLink and on a quiet PCIe switch;
//   pull    every rank publishes its data in its own buffer with a small flag write to each peer, and
//           peers read it over P2P (non-posted reads), which PCIe switches that collapse under many
//           concurrent writers serve at full speed;
//   staged  pushes scheduled so that at any step each rank sends to one peer and receives from one
//           (peer rank+k at step k): one outbound and one inbound stream per GPU;
//   halves  hierarchical, for GPUs that form two equal halves (two sockets, two PCIe switches;
//           topology/halves.h): reduce inside each half (push), then one outbound flow per GPU across the
//           middle, to its partner (the rank at its position in the other half), then finish inside the
//           half (push). It needs the halves (CommFacts::halves, SymmetricConfig::halves) with at least 2
//           ranks per half (4, 6 or 8 ranks); decide() runs push for a band naming it on a communicator
//           without them.
// Each of one-shot and two-shot comes in every variant; the decision table's bands name the pair.
#include <optional>
#include <string_view>

namespace symmem {

enum class SymVariant : int { Push = 0, Pull = 1, Staged = 2, Halves = 3 };
inline constexpr int kNumSymVariants = 4;

std::string_view symVariantName(SymVariant v);                     // "push", "pull", "staged", "halves"
std::optional<SymVariant> parseSymVariant(std::string_view text);  // exact names only

}  // namespace symmem
