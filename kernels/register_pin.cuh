// SPDX-License-Identifier: Apache-2.0
#pragma once
// Keeping a launch's parameters in registers across the programmatic wait.
//
// Kernel parameters live in the constant bank, and the code generator reads a parameter from there
// again wherever it is used (an operand c[0x0][...] of the instruction, or an LDC just before it),
// also after the kernel's griddepcontrol.wait, even where the source copied it into a local before:
// the bank does not change during a launch, so to it a register holding the value is a waste. Every
// launch has its parameters at a new place in the bank; each first read of one of their lines is a
// miss, and after the wait those misses fall on the call's critical path, one behind the other where
// an address depends on the previous one's result. An empty inline asm does not stop it (the asm
// vanishes before the code generator sees the value); a plain move does not either.
//
// pinToRegister(x) replaces x by the value lane l of its warp holds, for l its own lane (an identity
// shuffle): the code generator cannot know that the result equals the parameter, so it reads the
// parameter once, before the shuffle, and keeps the result in a register. One SHFL per 32 bits,
// issued while the kernel is parked in its wait. Call it where the whole warp is converged, in
// blocks of whole warps (launchShape's blocks are).
#include <cstddef>
#include <cstdint>

namespace symmem::kernels::device {

__device__ __forceinline__ uint32_t ownLane() {
  uint32_t lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

__device__ __forceinline__ uint32_t ownLaneValue(uint32_t x) { return __shfl_sync(0xffffffffu, x, ownLane()); }

__device__ __forceinline__ void pinToRegister(uint32_t& x) { x = ownLaneValue(x); }
__device__ __forceinline__ void pinToRegister(int& x) { x = static_cast<int>(ownLaneValue(static_cast<uint32_t>(x))); }
__device__ __forceinline__ void pinToRegister(unsigned long long& x) {
  x = (static_cast<unsigned long long>(ownLaneValue(static_cast<uint32_t>(x >> 32))) << 32) |
      ownLaneValue(static_cast<uint32_t>(x));
}
__device__ __forceinline__ void pinToRegister(unsigned long& x) {
  auto wide = static_cast<unsigned long long>(x);
  pinToRegister(wide);
  x = static_cast<unsigned long>(wide);
}
__device__ __forceinline__ void pinToRegister(bool& x) { x = ownLaneValue(x ? 1u : 0u) != 0u; }
template <typename T>
__device__ __forceinline__ void pinToRegister(T*& p) {
  auto bits = static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p));
  pinToRegister(bits);
  p = reinterpret_cast<T*>(static_cast<uintptr_t>(bits));
}

}  // namespace symmem::kernels::device
