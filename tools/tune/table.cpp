// SPDX-License-Identifier: Apache-2.0
#include "tools/tune/table.h"

#include <cctype>
#include <cstdio>
#include <span>

#include "core/table_file.h"
#include "tools/common/nccl_library.h"
#include "tools/common/version_text.h"

namespace symmem {

std::vector<Thresholds> tunedEntries(ComputeCapability cc, const std::vector<TunedWorld>& worlds) {
  std::vector<Thresholds> entries;
  for (const TunedWorld& w : worlds) {
    if (!w.bands.measured) continue;
    Thresholds t;
    t.cc = cc;
    t.link = w.link;
    t.nRanks = w.nRanks;
    t.source = "symmem-tune";
    // chooseBands keeps to kMaxSymBands and the symmetric limits; a refusal here would leave the
    // entry without bands, which the read-back check below then reports.
    setSymBands(t, std::span<const SymBand>(w.bands.symBands));
    for (const NcclBand& b : w.bands.ncclBands)
      if (t.numBands < kMaxBands) t.bands[static_cast<size_t>(t.numBands++)] = b;
    entries.push_back(t);
  }
  return entries;
}

std::string metaSafe(std::string_view text) {
  std::string out;
  for (char c : text) out += (c == '#' || std::iscntrl(static_cast<unsigned char>(c))) ? ' ' : c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::vector<std::string> provenanceMeta(const TuneProvenance& p, const std::vector<TunedWorld>& worlds) {
  std::vector<std::string> meta;
  meta.push_back("written by symmem-tune on " + p.date);
  meta.push_back("gpu " + p.gpuName + ", capability " + p.capability.str() +
                 (p.kernelDriver.empty() ? std::string() : ", driver " + p.kernelDriver));
  meta.push_back("cuda runtime " + cudaVersionText(p.cudaRuntimeVersion) + ", driver API " +
                 cudaVersionText(p.cudaDriverVersion) + ", nccl " + ncclVersionText(p.ncclVersion));
  std::string topology = "topology " + p.topologySource + ", " + std::to_string(p.nodeGpuCount) + " GPUs;";
  for (const TunedWorld& w : worlds) {
    std::string gpus;
    for (int g : w.gpus) gpus.append(gpus.empty() ? "" : ",").append(std::to_string(g));
    topology +=
        " ranks=" + std::to_string(w.nRanks) + " " + std::string(linkClassName(w.link)) + " (GPUs " + gpus + ")";
  }
  meta.push_back(topology);
  meta.push_back("method " + p.method);
  meta.push_back("command " + p.commandLine);
  for (std::string& m : meta) m = metaSafe(m);
  return meta;
}

std::string tunedTableText(const std::vector<Thresholds>& entries, const std::vector<std::string>& meta,
                           std::string_view fileName, std::string* error) {
  const std::string text = formatTable(entries, meta);
  const TableFileResult back = parseTableText(text, fileName);
  auto fail = [&](std::string why) {
    *error = "the table symmem-tune made does not read back: " + why;
    return std::string();
  };
  if (!back.ok()) return fail(back.error);
  if (back.entries.size() != entries.size()) return fail("entry count changed");
  for (size_t i = 0; i < entries.size(); ++i) {
    const Thresholds& a = entries[i];
    const Thresholds& b = back.entries[i];
    if (a.cc != b.cc || a.link != b.link || a.nRanks != b.nRanks || a.oneShotMaxBytes != b.oneShotMaxBytes ||
        a.twoShotMaxBytes != b.twoShotMaxBytes || a.numSymBands != b.numSymBands || a.symBands != b.symBands ||
        a.numBands != b.numBands || a.bands != b.bands)
      return fail("entry " + std::to_string(i + 1) + " changed");
  }
  if (back.meta != meta) return fail("meta lines changed");
  return text;
}

}  // namespace symmem
