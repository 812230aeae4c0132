// SPDX-License-Identifier: Apache-2.0
#include "plugin/hooks/x86_decoder.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#if SYMMEM_HAVE_ZYDIS
#include <Zydis/Zydis.h>
#endif

namespace symmem {

std::vector<std::string> X86Decoder::searchOrder(const std::string& requested, const std::string& ownDirectory,
                                                 const std::string& soname) {
  if (!requested.empty()) return {requested};
  // Beside the plugin first: a copy shipped with it (a wheel, a container) wins over whatever version
  // LD_LIBRARY_PATH or the system holds; dlopen's own search would look there only after them.
  std::vector<std::string> order;
  if (!ownDirectory.empty()) order.push_back(ownDirectory + "/" + soname);
  order.push_back(soname);
  return order;
}

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

// The directory of the object this code is linked into (the plugin's .so, or a tool or test binary),
// or "" when the loader cannot say.
std::string ownDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&ownDirectory), &info) == 0 || !info.dli_fname) return {};
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::unique_ptr<X86Decoder> open(const std::string& requested, std::string* why) {
  const std::vector<std::string> candidates = X86Decoder::searchOrder(requested, ownDirectory(), defaultLibrary());
  void* handle = nullptr;
  std::string library, errors;
  for (const std::string& candidate : candidates) {
    // RTLD_LOCAL: nothing else in the process sees its symbols. Kept open for the process's life.
    handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      library = candidate;
      break;
    }
    const char* err = dlerror();
    errors += std::string(errors.empty() ? "" : "; ") + (err ? err : (candidate + ": unknown error"));
  }
  if (!handle) {
    *why = "the disassembler library " + defaultLibrary() + " could not be loaded (" + errors +
           "); without it the code hooks are off and ctypes clients (vLLM's and SGLang's pynccl) are not reached: "
           "put " +
           defaultLibrary() + " next to the plugin or install Zydis " + versionText(ZYDIS_VERSION).substr(0, 3) +
           " (Debian's libzydis4.0)";
    if (!requested.empty())
      *why = "the disassembler library " + requested + " (SYMMEM_DISASSEMBLER) could not be loaded (" + errors + ")";
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
  if (why) *why = std::string(kCodeHooksOffReason);
  return nullptr;
}

#endif

}  // namespace symmem
