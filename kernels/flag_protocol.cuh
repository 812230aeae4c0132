// SPDX-License-Identifier: Apache-2.0
#pragma once
// The flag-in-data protocol: a receive slot is a row of 16-byte SentinelPackets whose data is its own
// "arrived" flag. No separate flag word, no barrier, no remote read, no fence.
#include <cstdint>

#include "kernels/symmetric_layout.h"

namespace symmem::kernels::device {

// The only two accesses by which data crosses between GPUs: one 16-byte vector instruction of four
// 32-bit elements, relaxed, system scope. PTX makes each 32-bit element single-copy atomic; the 16
// bytes as a whole are not. The setup check and the latency probe use them too, so that they check
// and measure the very stores the kernels make.
__device__ __forceinline__ void storeRelaxedSys(char* p, uint4 v) {
  asm volatile("st.relaxed.sys.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}
__device__ __forceinline__ uint4 loadRelaxedSys(const char* p) {
  uint4 v;
  asm volatile("ld.relaxed.sys.global.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

// One 16-byte vector of a receive slot (slots are whole vectors, symmetric_layout.h). Contract:
//  - Width: every write and poll is one v4.b32 access (storeRelaxedSys / loadRelaxedSys), so a reader
//    may see any mix of old and new 32-bit words of a packet, never a torn word.
//  - Armed: a packet is armed while each word is kArmedWord (0x80000000), as fp32 -0.0, as two 16-bit
//    elements (+0.0, -0.0): one word arms a slot for whatever dtype the next call has. Only the
//    slot's owner arms it, in its own buffer, with plain stores (arm(), 16 bytes; setup's armKernel,
//    4 bytes), in a launch no peer's write into that slot can overlap (re-arming: round_control.cuh;
//    setup arms before its last barrier).
//  - Writer: write() puts a sealed payload (seal(): every -0.0 element of T becomes +0.0; the tail of
//    a message is padded with +0.0) into a peer's slot. A sealed word never looks pending.
//  - Reader: poll() reads its own buffer only, arrived() judges what it read. A word is pending while
//    it holds a -0.0 element of T (fp32: the word is 0x80000000; fp16/bf16: either half is 0x8000).
//    Words are atomic and sealed data has no -0.0, so once no word of a packet is pending every word is
//    the writer's: the packet is exactly what was written.
//  - Order: the reader assumes no order between packets, nor between a packet and any other memory:
//    it uses only the data of the packets it polled.
//  - Cost: -0.0 cannot travel; it arrives as +0.0.
struct alignas(16) SentinelPacket {
  uint32_t word[4];

  // Whether word `w` of a packet of T elements has not arrived yet.
  template <typename T>
  __device__ __forceinline__ static bool pending(uint32_t w) {
    return sizeof(T) == 4 ? wordPending32(w) : wordPending16(w);
  }
  template <typename T>
  __device__ __forceinline__ static bool pending(const uint4& v) {
    return pending<T>(v.x) || pending<T>(v.y) || pending<T>(v.z) || pending<T>(v.w);
  }

  // What a sender may send: `payload` with every -0.0 element of T replaced by +0.0.
  template <typename T>
  __device__ __forceinline__ static uint4 seal(uint4 payload) {
    if constexpr (sizeof(T) == 4)
      return make_uint4(clearNegZero32(payload.x), clearNegZero32(payload.y), clearNegZero32(payload.z),
                        clearNegZero32(payload.w));
    else
      return make_uint4(clearNegZero16(payload.x), clearNegZero16(payload.y), clearNegZero16(payload.z),
                        clearNegZero16(payload.w));
  }

  // Sender, into a peer's slot.
  __device__ __forceinline__ void write(uint4 sealed) { storeRelaxedSys(reinterpret_cast<char*>(word), sealed); }

  // Receiver, own slot: one poll, whatever it holds (arrived<T> says whether it is the writer's).
  // Polls of several packets issued one after the other are in flight together.
  __device__ __forceinline__ uint4 poll() const { return loadRelaxedSys(reinterpret_cast<const char*>(word)); }
  template <typename T>
  __device__ __forceinline__ static bool arrived(const uint4& polled) {
    return !pending<T>(polled);
  }

  // Owner, own slot: back to armed.
  __device__ __forceinline__ void arm() {
    *reinterpret_cast<uint4*>(word) = make_uint4(kArmedWord, kArmedWord, kArmedWord, kArmedWord);
  }
};
static_assert(sizeof(SentinelPacket) == kVecBytes, "a packet is one 16-byte vector");

__device__ __forceinline__ SentinelPacket* packetAt(char* p) { return reinterpret_cast<SentinelPacket*>(p); }
__device__ __forceinline__ const SentinelPacket* packetAt(const char* p) {
  return reinterpret_cast<const SentinelPacket*>(p);
}

}  // namespace symmem::kernels::device
