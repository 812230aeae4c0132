// SPDX-License-Identifier: Apache-2.0
#include "plugin/hooks/attach.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace symmem {
namespace {

// ---- Which relocations fill GOT slots on this architecture ----------------------------------------
#if defined(__x86_64__)
constexpr bool kArchSupported = true;
constexpr uint32_t kRelocJumpSlot = R_X86_64_JUMP_SLOT;  // call through the PLT
constexpr uint32_t kRelocGlobDat = R_X86_64_GLOB_DAT;    // address taken through the GOT
constexpr uint32_t kRelocAbsolute = R_X86_64_64;         // address stored in plain data
#elif defined(__aarch64__)
constexpr bool kArchSupported = true;
constexpr uint32_t kRelocJumpSlot = R_AARCH64_JUMP_SLOT;
constexpr uint32_t kRelocGlobDat = R_AARCH64_GLOB_DAT;
constexpr uint32_t kRelocAbsolute = R_AARCH64_ABS64;
#else
constexpr bool kArchSupported = false;
constexpr uint32_t kRelocJumpSlot = ~0u;
constexpr uint32_t kRelocGlobDat = ~0u;
constexpr uint32_t kRelocAbsolute = ~0u;
#endif

using Addr = ElfW(Addr);
using Dyn = ElfW(Dyn);
using Phdr = ElfW(Phdr);
using Rela = ElfW(Rela);
using Sym = ElfW(Sym);

#if __WORDSIZE == 64
uint32_t relocType(const Rela& r) { return ELF64_R_TYPE(r.r_info); }
uint32_t relocSymbol(const Rela& r) { return ELF64_R_SYM(r.r_info); }
#else
uint32_t relocType(const Rela& r) { return ELF32_R_TYPE(r.r_info); }
uint32_t relocSymbol(const Rela& r) { return ELF32_R_SYM(r.r_info); }
#endif

constexpr const char* kMainProgram = "(main program)";

std::string labelOf(const char* path) { return path && *path ? std::string(path) : std::string(kMainProgram); }

Addr pageSize() {
  static const Addr size = static_cast<Addr>(sysconf(_SC_PAGESIZE));
  return size;
}
Addr alignDown(Addr a) { return a & ~(pageSize() - 1); }

// ---- One loaded object as its program headers and dynamic section describe it --------------------
struct LoadedObject {
  const char* path = "";
  Addr base = 0;
  const Phdr* phdrs = nullptr;
  int phdrCount = 0;
  const Sym* symtab = nullptr;
  const char* strtab = nullptr;
  const Rela* pltRelocs = nullptr;
  size_t pltRelocCount = 0;
  const Rela* relocs = nullptr;
  size_t relocCount = 0;
  const uint32_t* gnuHash = nullptr;
  const uint32_t* sysvHash = nullptr;

  bool contains(const void* p) const {
    const Addr a = reinterpret_cast<Addr>(p);
    for (int i = 0; i < phdrCount; ++i) {
      const Phdr& ph = phdrs[i];
      if (ph.p_type == PT_LOAD && a >= base + ph.p_vaddr && a < base + ph.p_vaddr + ph.p_memsz) return true;
    }
    return false;
  }
  bool hasSymbols() const { return symtab && strtab; }
};

// glibc rewrites the dynamic section's pointers to run-time addresses when it can write there; other
// loaders (and read-only dynamic sections) leave link-time offsets. An offset is below the load base.
Addr runtimeAddress(Addr value, Addr base) { return value < base ? value + base : value; }

LoadedObject describe(const dl_phdr_info& info) {
  LoadedObject o;
  o.path = info.dlpi_name ? info.dlpi_name : "";
  o.base = info.dlpi_addr;
  o.phdrs = info.dlpi_phdr;
  o.phdrCount = info.dlpi_phnum;
  const Dyn* dynamic = nullptr;
  for (int i = 0; i < o.phdrCount; ++i)
    if (o.phdrs[i].p_type == PT_DYNAMIC) dynamic = reinterpret_cast<const Dyn*>(o.base + o.phdrs[i].p_vaddr);
  if (!dynamic) return o;

  Addr pltRelocBytes = 0, relocBytes = 0, relocEntryBytes = sizeof(Rela);
  bool pltIsRela = true;
  for (const Dyn* d = dynamic; d->d_tag != DT_NULL; ++d) {
    const Addr ptr = runtimeAddress(d->d_un.d_ptr, o.base);
    switch (d->d_tag) {
      case DT_SYMTAB:
        o.symtab = reinterpret_cast<const Sym*>(ptr);
        break;
      case DT_STRTAB:
        o.strtab = reinterpret_cast<const char*>(ptr);
        break;
      case DT_JMPREL:
        o.pltRelocs = reinterpret_cast<const Rela*>(ptr);
        break;
      case DT_PLTRELSZ:
        pltRelocBytes = d->d_un.d_val;
        break;
      case DT_PLTREL:
        pltIsRela = d->d_un.d_val == DT_RELA;
        break;
      case DT_RELA:
        o.relocs = reinterpret_cast<const Rela*>(ptr);
        break;
      case DT_RELASZ:
        relocBytes = d->d_un.d_val;
        break;
      case DT_RELAENT:
        relocEntryBytes = d->d_un.d_val ? d->d_un.d_val : sizeof(Rela);
        break;
      case DT_GNU_HASH:
        o.gnuHash = reinterpret_cast<const uint32_t*>(ptr);
        break;
      case DT_HASH:
        o.sysvHash = reinterpret_cast<const uint32_t*>(ptr);
        break;
      default:
        break;
    }
  }
  // x86-64 and aarch64 only use RELA; a REL PLT table would be read wrongly, so it is ignored.
  o.pltRelocCount = (o.pltRelocs && pltIsRela) ? pltRelocBytes / sizeof(Rela) : 0;
  o.relocCount = o.relocs ? relocBytes / relocEntryBytes : 0;
  return o;
}

// ---- Finding a symbol in an object's dynamic symbol table (through its hash table, as ld.so does) --
uint32_t gnuHashOf(const char* name) {
  uint32_t h = 5381;
  for (const unsigned char* c = reinterpret_cast<const unsigned char*>(name); *c; ++c) h = h * 33 + *c;
  return h;
}

uint32_t sysvHashOf(const char* name) {
  uint32_t h = 0;
  for (const unsigned char* c = reinterpret_cast<const unsigned char*>(name); *c; ++c) {
    h = (h << 4) + *c;
    const uint32_t high = h & 0xf0000000u;
    if (high) h ^= high >> 24;
    h &= ~high;
  }
  return h;
}

const Sym* findDynamicSymbol(const LoadedObject& o, const char* name) {
  if (!o.hasSymbols()) return nullptr;
  if (o.gnuHash) {
    const uint32_t bucketCount = o.gnuHash[0], firstHashed = o.gnuHash[1], bloomWords = o.gnuHash[2];
    if (bucketCount == 0) return nullptr;
    // The bloom filter words are address-sized; buckets and chain follow them.
    const uint32_t* buckets =
        reinterpret_cast<const uint32_t*>(reinterpret_cast<const Addr*>(o.gnuHash + 4) + bloomWords);
    const uint32_t* chain = buckets + bucketCount;
    const uint32_t h = gnuHashOf(name);
    uint32_t index = buckets[h % bucketCount];
    if (index < firstHashed) return nullptr;
    for (;; ++index) {
      const uint32_t entry = chain[index - firstHashed];
      if ((entry | 1u) == (h | 1u) && std::strcmp(o.strtab + o.symtab[index].st_name, name) == 0)
        return &o.symtab[index];
      if (entry & 1u) return nullptr;  // last entry of this bucket's chain
    }
  }
  if (o.sysvHash) {
    const uint32_t bucketCount = o.sysvHash[0];
    if (bucketCount == 0) return nullptr;
    const uint32_t* buckets = o.sysvHash + 2;
    const uint32_t* chain = buckets + bucketCount;
    for (uint32_t i = buckets[sysvHashOf(name) % bucketCount]; i != STN_UNDEF; i = chain[i])
      if (std::strcmp(o.strtab + o.symtab[i].st_name, name) == 0) return &o.symtab[i];
  }
  return nullptr;
}

// A definition, as opposed to an import. An import with a non-zero value is a non-PIE program's
// canonical PLT entry for a function whose address it takes: still an import.
bool definesSymbol(const LoadedObject& o, const char* name) {
  const Sym* s = findDynamicSymbol(o, name);
  return s && s->st_shndx != SHN_UNDEF;
}

// ---- Relocations that name one of our symbols ---------------------------------------------------
// Calls visit(reloc, rebindingIndex) for each relocation against a rebound symbol. The RELA table of
// some linkers also spans the PLT table; those entries are visited once, as PLT entries.
template <class Visit>
void forEachMatchingReloc(const LoadedObject& o, std::span<const Rebinding> rebindings, Visit&& visit) {
  if (!o.hasSymbols()) return;
  auto scan = [&](const Rela* table, size_t count, bool skipPltRange) {
    for (size_t k = 0; k < count; ++k) {
      const Rela& r = table[k];
      if (skipPltRange && &r >= o.pltRelocs && &r < o.pltRelocs + o.pltRelocCount) continue;
      const uint32_t symbolIndex = relocSymbol(r);
      if (symbolIndex == STN_UNDEF) continue;
      const char* name = o.strtab + o.symtab[symbolIndex].st_name;
      for (size_t i = 0; i < rebindings.size(); ++i)
        if (name[0] == rebindings[i].symbol[0] && std::strcmp(name, rebindings[i].symbol) == 0) visit(r, i);
    }
  };
  scan(o.pltRelocs, o.pltRelocCount, false);
  scan(o.relocs, o.relocCount, o.pltRelocs != nullptr);
}

bool isGotSlot(uint32_t type) { return type == kRelocJumpSlot || type == kRelocGlobDat; }

// ---- Page protections ----------------------------------------------------------------------------
// The kernel's view (/proc/self/maps), read once per pass; the program headers are the fallback
// (they say what the loader set: segment flags, then read-only over PT_GNU_RELRO).
struct MappedRegion {
  Addr start, end;
  int protection;
};

std::vector<MappedRegion> readMappedRegions() {
  std::vector<MappedRegion> regions;
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (!maps) return regions;
  char line[512];
  while (std::fgets(line, sizeof(line), maps)) {
    uintptr_t start = 0, end = 0;
    char perms[5] = {};
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &start, &end, perms) != 3) continue;
    const int protection =
        (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) | (perms[2] == 'x' ? PROT_EXEC : 0);
    regions.push_back({start, end, protection});
  }
  std::fclose(maps);
  return regions;
}

int protectionFromHeaders(const LoadedObject& o, Addr a) {
  int protection = PROT_READ;
  for (int i = 0; i < o.phdrCount; ++i) {
    const Phdr& ph = o.phdrs[i];
    if (ph.p_type == PT_LOAD && a >= o.base + ph.p_vaddr && a < o.base + ph.p_vaddr + ph.p_memsz)
      protection = ((ph.p_flags & PF_R) ? PROT_READ : 0) | ((ph.p_flags & PF_W) ? PROT_WRITE : 0) |
                   ((ph.p_flags & PF_X) ? PROT_EXEC : 0);
  }
  for (int i = 0; i < o.phdrCount; ++i) {
    const Phdr& ph = o.phdrs[i];
    // Same rounding as the loader: whole pages from the start, the partial last page stays writable.
    if (ph.p_type == PT_GNU_RELRO && a >= alignDown(o.base + ph.p_vaddr) &&
        a < alignDown(o.base + ph.p_vaddr + ph.p_memsz))
      protection = PROT_READ;
  }
  return protection;
}

int protectionOf(const std::vector<MappedRegion>& regions, const LoadedObject& o, Addr a) {
  for (const MappedRegion& r : regions)
    if (a >= r.start && a < r.end) return r.protection;
  return protectionFromHeaders(o, a);
}

// Writes one slot with a single aligned store (a concurrent caller sees the old or the new target,
// never half of each), opening a read-only (RELRO) page only for the write and closing it again.
bool writeSlot(void** slot, void* value, int protection) {
  if (protection & PROT_WRITE) {
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    return true;
  }
  void* page = reinterpret_cast<void*>(alignDown(reinterpret_cast<Addr>(slot)));
  if (mprotect(page, pageSize(), protection | PROT_WRITE) != 0) return false;
  __atomic_store_n(slot, value, __ATOMIC_RELEASE);
  mprotect(page, pageSize(), protection);
  return true;
}

// ---- Objects that are never rewritten -----------------------------------------------------------
bool isDynamicLinkerOrVdso(const LoadedObject& o) {
  const Addr vdso = getauxval(AT_SYSINFO_EHDR);
  const Addr interpreterBase = getauxval(AT_BASE);
  if (vdso && o.contains(reinterpret_cast<const void*>(vdso))) return true;
  return interpreterBase && o.base == interpreterBase && *o.path != '\0';
}

bool nameMatches(const char* path, const std::string& wanted) {
  const char* slash = std::strrchr(path, '/');
  const std::string_view base = slash ? slash + 1 : path;
  if (base == wanted) return true;
  return base.size() > wanted.size() && base.substr(0, wanted.size()) == wanted && base[wanted.size()] == '.';
}

// ---- Process-wide state ---------------------------------------------------------------------------
struct WrittenSlot {
  void** slot;
  void* previous;       // what it held before we wrote
  void* written;        // the replacement we wrote
  bool previousIsStub;  // previous was the object's own lazy-binding stub, not a function
};

struct LastCall {
  std::vector<std::string> symbols;  // owns the names the copied rebindings point at
  std::vector<Rebinding> rebindings;
  AttachOptions options;
};

struct AttachState {
  std::mutex mutex;
  std::vector<WrittenSlot> written;
  bool haveLastCall = false;
  LastCall last;
  unsigned long long loadsAtAttach = 0, unloadsAtAttach = 0;
};

AttachState& state() {
  static AttachState* s = new AttachState;  // never destroyed: a late caller at exit still finds it
  return *s;
}

struct LoadCounters {
  unsigned long long loads = 0, unloads = 0;
};

LoadCounters loadCounters() {
  LoadCounters c;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* data) {
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
          static_cast<LoadCounters*>(data)->loads = info->dlpi_adds;
          static_cast<LoadCounters*>(data)->unloads = info->dlpi_subs;
        }
        return 1;  // the counters are the same in every entry
      },
      &c);
  return c;
}

template <class Visit>
void forEachLoadedObject(Visit&& visit) {
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        (*static_cast<Visit*>(data))(describe(*info));
        return 0;
      },
      &visit);
}

// ---- Finding the real targets ---------------------------------------------------------------------
bool sameObject(const void* a, const void* b) {
  Dl_info ia{}, ib{};
  return dladdr(a, &ia) && dladdr(b, &ib) && ia.dli_fbase == ib.dli_fbase;
}

// A forward target must not lead back into a replacement: not one itself, not inside an object
// that holds one (the plugin's own exported ncclAllReduce, for instance).
bool acceptableTarget(const void* candidate, std::span<const Rebinding> rebindings) {
  if (!candidate) return false;
  for (const Rebinding& r : rebindings)
    if (candidate == r.replacement || sameObject(candidate, r.replacement)) return false;
  return true;
}

// Values that resolved slots hold, and values we replaced earlier: the fallback when no library
// names the real definition. dladdr cannot run inside dl_iterate_phdr (lock order against dlopen),
// so candidates are gathered first and judged afterwards.
std::vector<std::vector<void*>> slotCandidates(std::span<const Rebinding> rebindings,
                                               const std::vector<WrittenSlot>& written) {
  std::vector<std::vector<void*>> candidates(rebindings.size());
  forEachLoadedObject([&](const LoadedObject& o) {
    if (isDynamicLinkerOrVdso(o)) return;
    forEachMatchingReloc(o, rebindings, [&](const Rela& r, size_t i) {
      if (!isGotSlot(relocType(r))) return;
      void* value = __atomic_load_n(reinterpret_cast<void**>(o.base + r.r_offset), __ATOMIC_ACQUIRE);
      if (o.contains(value)) return;  // a lazy-binding stub of this object, not a function
      if (candidates[i].size() < 8) candidates[i].push_back(value);
    });
  });
  for (auto it = written.rbegin(); it != written.rend(); ++it)
    for (size_t i = 0; i < rebindings.size(); ++i)
      if (it->written == rebindings[i].replacement && !it->previousIsStub) candidates[i].push_back(it->previous);
  return candidates;
}

// The real function for each rebinding (null: unknown, that symbol is left alone).
std::vector<void*> resolveTargets(std::span<const Rebinding> rebindings, const AttachOptions& options,
                                  const std::vector<WrittenSlot>& written, AttachReport& report) {
  std::vector<void*> targets(rebindings.size(), nullptr);
  bool allGiven = true;
  for (size_t i = 0; i < rebindings.size(); ++i) {
    if (rebindings[i].real && acceptableTarget(rebindings[i].real, rebindings))
      targets[i] = rebindings[i].real;
    else
      allGiven = false;
  }
  if (allGiven) return targets;
  if (!options.definingLibrary.empty()) {
    void* library = dlopen(options.definingLibrary.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!library) {
      report.notCovered.push_back(options.definingLibrary + " is not loaded: nothing rebound");
      return targets;
    }
    for (size_t i = 0; i < rebindings.size(); ++i) {
      if (targets[i]) continue;
      void* real = dlsym(library, rebindings[i].symbol);
      if (acceptableTarget(real, rebindings))
        targets[i] = real;
      else
        report.notCovered.push_back(std::string(rebindings[i].symbol) + ": no usable definition in " +
                                    options.definingLibrary + "; left alone");
    }
    dlclose(library);  // drops the reference RTLD_NOLOAD took; the library stays loaded
    return targets;
  }
  std::vector<std::vector<void*>> candidates;
  for (size_t i = 0; i < rebindings.size(); ++i) {
    if (targets[i]) continue;
    void* global = dlsym(RTLD_DEFAULT, rebindings[i].symbol);
    if (acceptableTarget(global, rebindings)) {
      targets[i] = global;
      continue;
    }
    if (candidates.empty()) candidates = slotCandidates(rebindings, written);
    for (void* c : candidates[i])
      if (acceptableTarget(c, rebindings)) {
        targets[i] = c;
        break;
      }
    if (!targets[i])
      report.notCovered.push_back(std::string(rebindings[i].symbol) +
                                  ": real definition not found (name the defining library); left alone");
  }
  return targets;
}

// ---- The patching pass ----------------------------------------------------------------------------
struct PatchPass {
  std::span<const Rebinding> rebindings;
  const AttachOptions& options;
  const std::vector<void*>& targets;
  const std::vector<MappedRegion>& regions;
  std::vector<WrittenSlot>& written;
  AttachReport& report;
  std::vector<bool> referenced;
  std::vector<bool> definedHere;  // per rebinding, for the object being visited

  bool leftAlone(const LoadedObject& o) const {
    if (isDynamicLinkerOrVdso(o)) return true;
    for (size_t i = 0; i < rebindings.size(); ++i)
      if (o.contains(rebindings[i].replacement) || (targets[i] && o.contains(targets[i]))) return true;
    for (const void* p : options.skipObjectsContaining)
      if (o.contains(p)) return true;
    for (const std::string& name : options.skipObjectsNamed)
      if (nameMatches(o.path, name)) return true;
    return options.shouldPatch && !options.shouldPatch(o.path);
  }

  void visit(const LoadedObject& o) {
    if (!o.hasSymbols() || leftAlone(o)) return;
    // An object with its own definition (static NCCL) reaches it through its own PLT when the symbol
    // is exported; sending those calls to a wrapper that forwards to the other copy would mix two
    // NCCL instances, so its slots for that symbol stay as they are.
    for (size_t i = 0; i < rebindings.size(); ++i) {
      definedHere[i] = targets[i] && definesSymbol(o, rebindings[i].symbol);
      if (definedHere[i])
        report.notCovered.push_back(std::string(rebindings[i].symbol) + " defined inside " + labelOf(o.path) +
                                    " (static NCCL?): its own calls stay on that copy");
    }
    bool patchedHere = false;
    forEachMatchingReloc(o, rebindings, [&](const Rela& r, size_t i) {
      if (!targets[i] || definedHere[i]) return;
      const Rebinding& rebinding = rebindings[i];
      const uint32_t type = relocType(r);
      if (type == kRelocAbsolute) {
        report.notCovered.push_back(labelOf(o.path) + " stores the address of " + rebinding.symbol +
                                    " in plain data: calls through that copy stay on the real function");
        return;
      }
      if (!isGotSlot(type)) return;
      referenced[i] = true;
      void** slot = reinterpret_cast<void**>(o.base + r.r_offset);
      void* current = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
      const bool already = current == rebinding.replacement;
      if (!already) {
        if (!writeSlot(slot, rebinding.replacement, protectionOf(regions, o, reinterpret_cast<Addr>(slot)))) {
          report.notCovered.push_back(std::string("cannot write the GOT slot of ") + rebinding.symbol + " in " +
                                      labelOf(o.path) + ": " + std::strerror(errno));
          return;
        }
        written.push_back({slot, current, rebinding.replacement, o.contains(current)});
        ++report.slotsWritten;
      }
      ++report.slotsPatched;
      report.slots.push_back({labelOf(o.path), rebinding.symbol, slot, already});
      patchedHere = true;
    });
    if (patchedHere) report.patchedObjects.push_back(labelOf(o.path));
  }
};

AttachReport attachLocked(AttachState& s, std::span<const Rebinding> rebindings, const AttachOptions& options) {
  AttachReport report;
  if (!kArchSupported) {
    report.notCovered.push_back("GOT rebinding is not implemented for this architecture");
    return report;
  }
  const std::vector<void*> targets = resolveTargets(rebindings, options, s.written, report);
  // Every forward target is in place before the first slot is written.
  for (size_t i = 0; i < rebindings.size(); ++i) {
    void** original = rebindings[i].original;
    if (original && targets[i] && !acceptableTarget(*original, rebindings)) *original = targets[i];
  }
  const std::vector<MappedRegion> regions = readMappedRegions();
  PatchPass pass{rebindings,
                 options,
                 targets,
                 regions,
                 s.written,
                 report,
                 std::vector<bool>(rebindings.size(), false),
                 std::vector<bool>(rebindings.size(), false)};
  forEachLoadedObject([&](const LoadedObject& o) { pass.visit(o); });
  for (size_t i = 0; i < rebindings.size(); ++i)
    if (targets[i] && !pass.referenced[i]) report.unreferenced.push_back(rebindings[i].symbol);
  const LoadCounters counters = loadCounters();
  s.loadsAtAttach = counters.loads;
  s.unloadsAtAttach = counters.unloads;
  return report;
}

}  // namespace

AttachReport attachRebindings(std::span<const Rebinding> rebindings, const AttachOptions& options) {
  AttachState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  LastCall last;
  last.symbols.reserve(rebindings.size());  // no reallocation: the copies point into these strings
  for (const Rebinding& r : rebindings) {
    last.symbols.emplace_back(r.symbol);
    // Every member, `real` included: a re-attach must forward where the first call did.
    last.rebindings.push_back({last.symbols.back().c_str(), r.replacement, r.original, r.real});
  }
  last.options = options;
  s.last = std::move(last);
  s.haveLastCall = true;
  return attachLocked(s, s.last.rebindings, s.last.options);
}

AttachReport reattachRebindings() {
  AttachState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.haveLastCall) return {};
  return attachLocked(s, s.last.rebindings, s.last.options);
}

bool loadedObjectsChangedSinceAttach() {
  AttachState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const LoadCounters now = loadCounters();
  return s.haveLastCall && (now.loads != s.loadsAtAttach || now.unloads != s.unloadsAtAttach);
}

int rebindOwnCalls(const void* objectAddress, std::span<const Rebinding> rebindings) {
  if (!kArchSupported) return 0;
  AttachState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const std::vector<MappedRegion> regions = readMappedRegions();
  int bound = 0;
  forEachLoadedObject([&](const LoadedObject& o) {
    if (!o.contains(objectAddress)) return;
    forEachMatchingReloc(o, rebindings, [&](const Rela& r, size_t i) {
      if (relocType(r) != kRelocJumpSlot) return;  // calls only: an address the object hands out stays
      void** slot = reinterpret_cast<void**>(o.base + r.r_offset);
      void* current = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
      void* to = rebindings[i].replacement;
      if (current == to) {
        ++bound;
        return;
      }
      if (!writeSlot(slot, to, protectionOf(regions, o, reinterpret_cast<Addr>(slot)))) return;
      s.written.push_back({slot, current, to, o.contains(current)});
      ++bound;
    });
  });
  return bound;
}

int undoRebindings() {
  AttachState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const std::vector<MappedRegion> regions = readMappedRegions();
  int restored = 0;
  // Newest first, so a slot rewritten twice ends on its first value. Only slots of objects still
  // loaded, and only where our value is still there, are touched.
  forEachLoadedObject([&](const LoadedObject& o) {
    for (auto it = s.written.rbegin(); it != s.written.rend(); ++it) {
      if (!o.contains(it->slot) || __atomic_load_n(it->slot, __ATOMIC_ACQUIRE) != it->written) continue;
      if (writeSlot(it->slot, it->previous, protectionOf(regions, o, reinterpret_cast<Addr>(it->slot)))) ++restored;
    }
  });
  s.written.clear();
  s.haveLastCall = false;
  s.last = {};
  return restored;
}

}  // namespace symmem
