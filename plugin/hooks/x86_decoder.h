// SPDX-License-Identifier: Apache-2.0
#pragma once
// An x86-64 instruction decoder for the code hooks, backed by Zydis loaded at run time (like NVML
// and hwloc, it is not a load-time dependency of the plugin). It answers only what relocating a
// function's first instructions needs: length, control flow, and RIP-relative operands.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace symmem {

// Why load() fails in a build configured with -DSYMMEM_CODE_HOOKS=OFF (tests skip on it, naming it).
inline constexpr std::string_view kCodeHooksOffReason =
    "the plugin was built without the Zydis headers (-DSYMMEM_CODE_HOOKS=OFF): no code hooks, so ctypes clients "
    "such as vLLM's and SGLang's pynccl are not reached (install libzydis-dev and configure with "
    "-DSYMMEM_CODE_HOOKS=ON)";

struct X86Instruction {
  uint8_t length = 0;
  std::string mnemonic;  // "push", "endbr64", ... (for messages)
  bool isEndbr64 = false;
  bool changesControlFlow = false;  // jmp, jcc, call, ret, loop, int3, syscall, ...
  // A branch with a relative target (jmp/jcc/call/loop/xbegin rel8/rel32): where it goes.
  bool hasRelativeTarget = false;
  uint64_t relativeTarget = 0;
  // A memory operand addressed relative to RIP: where its 32-bit displacement sits in the bytes.
  bool ripRelative = false;
  uint8_t displacementOffset = 0;
  uint8_t displacementBytes = 0;
};

class X86Decoder {
 public:
  // The process's decoder: Zydis loaded once from `library` (a name or path; empty: the soname this
  // plugin was built against). Null when it cannot be loaded; `why` then says what was missing.
  // Zydis is looked for beside the object this code is in (the plugin's own directory) first, then
  // through the loader's search (LD_LIBRARY_PATH, the system).
  static const X86Decoder* load(const std::string& library, std::string* why);

  // Where load() looks, in order: `requested` alone when set (SYMMEM_DISASSEMBLER); else `soname` in
  // `ownDirectory` (when known), then `soname` through the loader's search.
  static std::vector<std::string> searchOrder(const std::string& requested, const std::string& ownDirectory,
                                              const std::string& soname);

  // Decodes one instruction at `code` (as if it ran at `address`), reading at most `available`
  // bytes. nullopt: not a valid instruction.
  std::optional<X86Instruction> decode(const uint8_t* code, size_t available, uint64_t address) const;

  const std::string& description() const { return description_; }  // "Zydis 4.0.0 (libZydis.so.4.0)"

  struct Api;  // the resolved Zydis entry points (x86_decoder.cpp)
  X86Decoder(std::unique_ptr<Api> api, std::string description);
  ~X86Decoder();

 private:
  std::unique_ptr<Api> api_;
  std::string description_;
};

}  // namespace symmem
