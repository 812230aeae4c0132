// SPDX-License-Identifier: Apache-2.0
// The plugin itself, loaded as NCCL loads it, runs with the table symmem-tune --install wrote for this
// machine when SYMMEM_TABLE is unset (a recorded machine through SYMMEM_TOPO_FILE), and with the
// built-in table when the installed one was tuned for another machine.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/decision_table.h"
#include "core/installed_table.h"
#include "core/machine_fingerprint.h"
#include "core/table_file.h"
#include "plugin/nccl/tuner_abi.h"
#include "plugin/process/table_in_force.h"
#include "tests/unit/forked_check.h"
#include "tests/unit/temp_file.h"
#include "topology/fingerprint.h"
#include "topology/topology_file.h"

namespace symmem {
namespace {

std::vector<std::string> gLines;
void keep(int, unsigned long, const char*, int, const char* fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  gLines.emplace_back(buf);
}

bool logged(const std::string& part) {
  for (const std::string& l : gLines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

// Installs a table for the machine recorded in `topoFile` under `home`; returns its path.
std::string installFor(const std::string& home, const std::string& topoFile) {
  auto topo = loadTopologyFile(topoFile, HwlocXmlPolicy::Refuse);
  if (!topo.ok()) return "";
  const MachineFingerprint machine = fingerprintOf(topo.value(), thisDriverMajor());
  const std::string dir = userTableDirectory(home);
  std::filesystem::create_directories(dir);
  const std::string path = installedTablePath(dir, machine);
  Thresholds t = *DecisionTable::builtIn().thresholdsFor(ComputeCapability{9, 0}, LinkClass::NvLink, 8).entry;
  setPushLimits(t, 4096, 8192);
  std::ofstream(path) << formatTable({t}, {"written by symmem-tune", machineLine(machine)});
  return path;
}

std::string loadPluginWith(const std::string& home, const std::string& topoFile) {
  return testing::runForkedCheck([&]() -> std::string {
    setenv("XDG_CONFIG_HOME", home.c_str(), 1);
    setenv("SYMMEM_TOPO_FILE", topoFile.c_str(), 1);
    setenv("SYMMEM_ATTACH", "0", 1);
    unsetenv("SYMMEM_TABLE");
    void* lib = dlopen(SYMMEM_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    const auto* v5 = lib ? static_cast<const abi::TunerV5*>(dlsym(lib, "ncclTunerPlugin_v5")) : nullptr;
    void* ctx = nullptr;
    if (!v5 || v5->init(&ctx, 1, 8, 1, keep, nullptr, nullptr) != abi::kSuccess) return "the plugin did not load\n";
    std::string out;
    for (const std::string& l : gLines) out += "  " + l + "\n";
    v5->finalize(ctx);
    return out;  // the log, for the parent to read (the check passes on the text, not the exit)
  });
}

const std::string kTopo = std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/h100-sxm-x8-nv18.topo.txt";

TEST(PluginInstalledTable, ThePluginRunsWithTheTableInstalledForThisMachine) {
  testing::TempDir home("symmem-plugin-table");
  const std::string path = installFor(home.path(), kTopo);
  ASSERT_FALSE(path.empty());
  const std::string log = loadPluginWith(home.path(), kTopo);
  EXPECT_NE(log.find("decision table " + path), std::string::npos) << log;
}

TEST(PluginInstalledTable, ATableTunedForAnotherMachineIsIgnoredWithTheDifference) {
  testing::TempDir home("symmem-plugin-table");
  const std::string path = installFor(
      home.path(), std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/a100-sxm4-x8-aws-p4d-24xlarge-nv12.topo.txt");
  ASSERT_FALSE(path.empty());
  const std::string log = loadPluginWith(home.path(), kTopo);
  EXPECT_EQ(log.find("decision table " + path), std::string::npos) << log;
  EXPECT_NE(log.find("tuned for another machine"), std::string::npos) << log;
}

}  // namespace
}  // namespace symmem
