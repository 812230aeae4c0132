// SPDX-License-Identifier: Apache-2.0
#include "tools/info/check.h"

#include <dlfcn.h>

#include "core/printable_text.h"
#include "core/table_file.h"
#include "tools/info/topology.h"

namespace symmem {

namespace {

// SYMMEM_DISASSEMBLER names a library the plugin loads for its code hooks; one it cannot load, or one
// that is not Zydis, leaves the hooks off (the plugin then says so at its first communicator).
std::string disassemblerProblem(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL);
  const std::string name = "SYMMEM_DISASSEMBLER='" + printableText(library) + "'";
  if (handle == nullptr) {
    const char* why = dlerror();
    return name + " cannot be loaded: " + printableText(why != nullptr ? why : "unknown error") +
           " (the code hooks would be off)";
  }
  const bool zydis =
      dlsym(handle, "ZydisDecoderInit") != nullptr && dlsym(handle, "ZydisDecoderDecodeInstruction") != nullptr;
  dlclose(handle);
  return zydis ? std::string() : name + " is not a Zydis library (no ZydisDecoderInit): the code hooks would be off";
}

}  // namespace

std::vector<std::string> configurationProblems(const CheckInputs& in) {
  std::vector<std::string> problems;
  if (in.settings != nullptr)
    for (const SettingSpec& spec : settingSpecs()) {
      const SettingValue& v = in.settings->value(spec.id);
      if (v.source == SettingSource::InvalidUsedDefault)
        problems.push_back(std::string(spec.name) + "='" + v.raw + "' is not valid (the default '" + spec.defaultValue +
                           "' is used)");
    }
  problems.insert(problems.end(), in.unknownNames.begin(), in.unknownNames.end());
  if (in.settings != nullptr) {
    const std::string& library = in.settings->text(SettingId::Disassembler);
    if (!library.empty())
      if (const std::string why = disassemblerProblem(library); !why.empty()) problems.push_back(why);
  }
  if (!in.tablePath.empty()) {
    const TableFileResult table = readTableFile(in.tablePath);
    if (!table.ok()) problems.push_back(table.error);
  }
  if (!in.topoPath.empty() && in.settings != nullptr) {
    const MachineView machine = describeMachine(in.topoPath, *in.settings);
    if (machine.failed) {
      std::string text = machine.text;
      while (!text.empty() && text.back() == '\n') text.pop_back();
      problems.push_back(text);
    }
  }
  return problems;
}

}  // namespace symmem
