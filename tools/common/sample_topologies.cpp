// SPDX-License-Identifier: Apache-2.0
#include "tools/common/sample_topologies.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstdio>
#include <cstdlib>

namespace symmem {
namespace {

// tests/data/topologies/MANIFEST.md says where each capture comes from. NCCL's own topology XML there
// is left out: it cannot describe a machine on its own (topology/topology_file.h).
constexpr std::array<SampleTopology, 12> kSamples{{
    {"rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt", "", 8, "RTX PRO 6000 Blackwell Server", "12.0",
     "PCIe Gen5, two Broadcom switches, dual socket"},
    {"rtx-pro-6000-server-x8-wrx90-microchip-3switch.topo.txt", "", 8, "RTX PRO 6000 Blackwell Server", "12.0",
     "PCIe Gen5, three Microchip switches, one socket"},
    {"rtx-5090-x2-wrx80-phb.topo.txt", "rtx-5090-x2-wrx80-phb.p2p-rw.txt", 2, "GeForce RTX 5090", "12.0",
     "PCIe host bridge, P2P blocked by the driver"},
    {"rtx-4090-x8-dual-socket-all-sys-2nic.topo.txt", "", 8, "GeForce RTX 4090", "8.9",
     "PCIe, every pair across the CPUs (SYS)"},
    {"rtx-6000-ada-x4-asus-esc8000a-e12-dual-socket.topo.txt", "", 4, "RTX 6000 Ada", "8.9",
     "PCIe root ports, dual socket"},
    {"rtx-6000-ada-x2-puget-threadripper-wrx90-phb.topo.txt", "", 2, "RTX 6000 Ada", "8.9", "PCIe host bridge"},
    {"l40s-x4-aws-g6e-12xlarge-vm.topo.txt", "", 4, "L40S", "8.9", "PCIe in a VM (AWS g6e.12xlarge)"},
    {"rtx-a6000-x3-nvlink-bridge-pair.topo.txt", "", 3, "RTX A6000", "8.6", "PCIe, one NVLink-bridged pair"},
    {"h100-sxm-x8-nv18.topo.txt", "", 8, "H100 SXM", "9.0", "NVLink, NVSwitch"},
    {"h20-3e-x8-nv18-8nic.topo.txt", "", 8, "H20-3e", "9.0", "NVLink, NVSwitch"},
    {"a100-sxm4-x8-aws-p4d-24xlarge-nv12.topo.txt", "", 8, "A100 SXM4 40GB", "8.0",
     "NVLink, NVSwitch (AWS p4d.24xlarge)"},
    {"dgx2h-v100-sxm3-x16-nvswitch.hwloc.xml", "", 16, "V100 SXM3", "7.0", "NVLink, NVSwitch (hwloc XML)"},
}};

bool isDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string executableDir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string path(buf, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

}  // namespace

std::span<const SampleTopology> sampleTopologies() { return kSamples; }

std::string sampleTopologiesDir() {
  const std::string bin = executableDir();
  if (bin.empty()) return "";
  for (const char* relative : {"/../share/nccl-symmem/topologies", "/../topologies"}) {
    char resolved[PATH_MAX];
    if (isDirectory(bin + relative) && realpath((bin + relative).c_str(), resolved) != nullptr) return resolved;
  }
  return "";
}

std::string sampleTopologiesHelp(const std::string& tool, const std::string& dir) {
  std::string text = "Sample topologies (real captures; give the capability with --cc):\n";
  text += "  " +
          (dir.empty() ? std::string("share/nccl-symmem/topologies of an install, nccl_symmem/topologies "
                                     "in the wheel (not found beside this program)")
                       : dir) +
          "\n";
  for (const SampleTopology& s : sampleTopologies()) {
    char line[256];
    std::snprintf(line, sizeof line, "    %-58s %2dx %s, --cc %s: %s\n", s.file, s.gpus, s.gpu, s.capability, s.fabric);
    text += line;
    if (*s.p2pFile != '\0') text += std::string("      with its P2P matrix: --topo ") + s.file + "," + s.p2pFile + "\n";
  }
  const SampleTopology& first = sampleTopologies().front();
  const std::string path = (dir.empty() ? std::string("DIR") : dir) + "/" + first.file;
  text += tool == "symmem-tune" ? "  e.g. symmem-tune --plan --topo " + path + " --cc " + first.capability + "\n"
                                : "  e.g. symmem-info --topo " + path + " --cc " + first.capability + "\n";
  return text;
}

}  // namespace symmem
