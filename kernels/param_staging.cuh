// SPDX-License-Identifier: Apache-2.0
#pragma once
// Keeping what a launch needs from its parameters in registers across the programmatic wait.
//
// Kernel parameters live in the constant bank, and the code generator reads a parameter from there
// again wherever it is used (an operand c[0x0][...] of the instruction, or an LDC just before it),
// also after the kernel's griddepcontrol.wait, even where the source copied it into a local before:
// the bank does not change during a launch, so to it a register holding the value is a waste. Every
// launch has its parameters at a new place in the bank; each first read of one of their lines is a
// miss, and after the wait those misses fall on the call's critical path, one behind the other where
// an address needs the previous one's value. Neither an empty inline asm nor an identity shuffle
// stops it (the code generator sees that a shuffle of a warp-uniform value is that value).
//
// stageThroughShared(plan) hands a plan computed from the parameters through shared memory: thread 0
// stores it, the block meets, every thread loads it back. What the code generator holds then are
// loads from memory that may change, which it keeps in registers (or spills) and cannot read from
// the constant bank again. Called by every thread of the block, before the wait: there it costs
// nothing on a parked launch, and one store, barrier and load (about 0.05 us) on one that is not.
namespace symmem::kernels::device {

template <typename Plan>
__device__ __forceinline__ Plan stageThroughShared(const Plan& plan) {
  __shared__ Plan staged;
  if (threadIdx.x == 0) staged = plan;
  __syncthreads();
  return staged;
}

}  // namespace symmem::kernels::device
