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

// A pointer that came back from shared memory is a generic one to the code generator, so the accesses
// through it compile to generic loads and stores (LD/ST), not global ones (LDG/STG) as they would
// through a parameter. assumeGlobal(p) tells it that p points into global memory (device memory,
// mapped host memory): only for pointers that always do, never null, never shared or local memory.
template <typename T>
__device__ __forceinline__ void assumeGlobal(const T* p) {
  __builtin_assume(__isGlobal(p));
}

template <typename Plan>
__device__ __forceinline__ Plan stageThroughShared(const Plan& plan) {
  __shared__ Plan staged;
  if (threadIdx.x == 0) staged = plan;
  __syncthreads();
  return staged;
}

}  // namespace symmem::kernels::device
