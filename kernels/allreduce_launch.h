// SPDX-License-Identifier: Apache-2.0
#pragma once
// Host entry points of the all-reduce kernels (allreduce_kernels.cu; callable from plain C++).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/collective.h"
#include "core/sym_variant.h"
#include "kernels/device_view.h"

namespace symmem::kernels {

struct LaunchOptions {
  int maxBlocks = kDefaultMaxBlocks;  // grid cap (launchShape); also view.gridCap
  bool programmatic = true;           // programmatic dependent launch (overlaps the launch with the previous kernel)
  // The clocked instance (kernel_clock.cuh): the execution counts and times itself into
  // view.control->stats. Rank-local: both instances speak the same protocol.
  bool clocked = false;
};

// The all-reduce kernels, in the variant asked (push, pull, staged: core/sym_variant.h). Unsupported
// dtype/op: cudaErrorInvalidValue (the caller checks symmetricSupports, core/decision.h, first).
cudaError_t launchOneShot(const DeviceView& view, const void* send, void* recv, size_t count, DataType dtype,
                          ReduceOp op, SymVariant variant, const LaunchOptions& options, cudaStream_t stream);
cudaError_t launchTwoShot(const DeviceView& view, const void* send, void* recv, size_t count, DataType dtype,
                          ReduceOp op, SymVariant variant, const LaunchOptions& options, cudaStream_t stream);

}  // namespace symmem::kernels
