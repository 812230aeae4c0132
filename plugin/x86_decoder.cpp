// SPDX-License-Identifier: Apache-2.0
#include "plugin/x86_decoder.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>

#if SYMMEM_HAVE_ZYDIS
#include <Zydis/Zydis.h>
#endif

namespace symmem {

#if SYMMEM_HAVE_ZYDIS

struct X86Decoder::Api {
  ZyanU64 (*getVersion)();
  ZyanStatus (*decoderInit)(ZydisDecoder*, ZydisMachineMode, ZydisStackWidth);
  ZyanStatus (*decodeInstruction)(const ZydisDecoder*, ZydisDecoderContext*, const void*, ZyanUSize,
                                  ZydisDecodedInstruction*);
  const char* (*mnemonicString)(ZydisMnemonic);
  ZydisDecoder decoder;
};

namespace {

std::string versionText(ZyanU64 v) {
  return std::to_string(ZYDIS_VERSION_MAJOR(v)) + "." + std::to_string(ZYDIS_VERSION_MINOR(v)) + "." +
         std::to_string(ZYDIS_VERSION_PATCH(v));
}

// Zydis names its shared object after major.minor (libZydis.so.4.0): the structs this file was
// compiled against are only promised for that pair, so that is the one name tried by default.
std::string defaultLibrary() {
  return "libZydis.so." + std::to_string(ZYDIS_VERSION_MAJOR(ZYDIS_VERSION)) + "." +
         std::to_string(ZYDIS_VERSION_MINOR(ZYDIS_VERSION));
}

std::unique_ptr<X86Decoder> open(const std::string& requested, std::string* why) {
  const std::string library = requested.empty() ? defaultLibrary() : requested;
  // RTLD_LOCAL: nothing else in the process sees its symbols. Kept open for the process's life.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    *why = "the disassembler library " + library + " could not be loaded (" + (err ? err : "unknown error") +
           "; install Zydis " + versionText(ZYDIS_VERSION).substr(0, 3) + ", e.g. Debian's libzydis4.0)";
    return nullptr;
  }
  auto api = std::make_unique<X86Decoder::Api>();
  auto sym = [&](const char* name, auto& out) {
    out = reinterpret_cast<std::remove_reference_t<decltype(out)>>(dlsym(handle, name));
    return out != nullptr;
  };
  if (!sym("ZydisGetVersion", api->getVersion) || !sym("ZydisDecoderInit", api->decoderInit) ||
      !sym("ZydisDecoderDecodeInstruction", api->decodeInstruction) ||
      !sym("ZydisMnemonicGetString", api->mnemonicString)) {
    *why = library + " lacks the Zydis decoder functions";
    return nullptr;
  }
  const ZyanU64 have = api->getVersion();
  if (ZYDIS_VERSION_MAJOR(have) != ZYDIS_VERSION_MAJOR(ZYDIS_VERSION) ||
      ZYDIS_VERSION_MINOR(have) != ZYDIS_VERSION_MINOR(ZYDIS_VERSION)) {
    *why = library + " is Zydis " + versionText(have) + ", built against " + versionText(ZYDIS_VERSION) +
           " (its structures differ between minor versions)";
    return nullptr;
  }
  if (!ZYAN_SUCCESS(api->decoderInit(&api->decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
    *why = "Zydis refused to set up a 64-bit decoder";
    return nullptr;
  }
  return std::make_unique<X86Decoder>(std::move(api), "Zydis " + versionText(have) + " (" + library + ")");
}

}  // namespace

std::optional<X86Instruction> X86Decoder::decode(const uint8_t* code, size_t available, uint64_t address) const {
  ZydisDecodedInstruction in;
  if (!ZYAN_SUCCESS(api_->decodeInstruction(&api_->decoder, nullptr, code, available, &in))) return std::nullopt;
  X86Instruction out;
  out.length = in.length;
  const char* name = api_->mnemonicString(in.mnemonic);
  out.mnemonic = name ? name : "?";
  out.isEndbr64 = in.mnemonic == ZYDIS_MNEMONIC_ENDBR64;
  switch (in.meta.category) {
    case ZYDIS_CATEGORY_CALL:
    case ZYDIS_CATEGORY_COND_BR:
    case ZYDIS_CATEGORY_UNCOND_BR:
    case ZYDIS_CATEGORY_RET:
    case ZYDIS_CATEGORY_INTERRUPT:
    case ZYDIS_CATEGORY_SYSCALL:
    case ZYDIS_CATEGORY_SYSRET:
    case ZYDIS_CATEGORY_SYSTEM:
      out.changesControlFlow = true;
      break;
    default:
      break;
  }
  for (const auto& imm : in.raw.imm) {
    if (!imm.is_relative) continue;
    out.hasRelativeTarget = true;
    out.changesControlFlow = true;  // loop, xbegin and friends too
    out.relativeTarget = address + in.length + static_cast<uint64_t>(imm.value.s);
  }
  const bool hasModrm = (in.attributes & ZYDIS_ATTRIB_HAS_MODRM) != 0;
  if (hasModrm && in.raw.modrm.mod == 0 && in.raw.modrm.rm == 5) {  // [rip + disp32] in 64-bit mode
    out.ripRelative = true;
    out.displacementOffset = in.raw.disp.offset;
    out.displacementBytes = static_cast<uint8_t>(in.raw.disp.size / 8);
  }
  // Position-relative, yet neither form above: not something the hooks know how to move.
  if ((in.attributes & ZYDIS_ATTRIB_IS_RELATIVE) && !out.hasRelativeTarget && !out.ripRelative)
    out.changesControlFlow = true;
  return out;
}

X86Decoder::X86Decoder(std::unique_ptr<Api> api, std::string description)
    : api_(std::move(api)), description_(std::move(description)) {}
X86Decoder::~X86Decoder() = default;

const X86Decoder* X86Decoder::load(const std::string& library, std::string* why) {
  static std::mutex mutex;
  static std::map<std::string, std::pair<std::unique_ptr<X86Decoder>, std::string>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(library);
  if (it == loaded.end()) {
    std::string reason;
    auto decoder = open(library, &reason);
    it = loaded.emplace(library, std::make_pair(std::move(decoder), reason)).first;
  }
  if (!it->second.first && why) *why = it->second.second;
  return it->second.first.get();
}

#else  // built without the Zydis headers

struct X86Decoder::Api {};
X86Decoder::X86Decoder(std::unique_ptr<Api> api, std::string description)
    : api_(std::move(api)), description_(std::move(description)) {}
X86Decoder::~X86Decoder() = default;

std::optional<X86Instruction> X86Decoder::decode(const uint8_t*, size_t, uint64_t) const { return std::nullopt; }

const X86Decoder* X86Decoder::load(const std::string&, std::string* why) {
  if (why) *why = "the plugin was built without the Zydis headers (install libzydis-dev and rebuild)";
  return nullptr;
}

#endif

}  // namespace symmem
