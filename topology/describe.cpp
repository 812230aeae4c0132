// SPDX-License-Identifier: Apache-2.0
#include "topology/describe.h"

#include "core/text_columns.h"
#include "topology/classify.h"
#include "topology/halves.h"

namespace symmem {

namespace {

std::string gpuLabel(const Topology& t, int g) { return "GPU" + std::to_string(t.gpu(g).index); }

std::vector<std::string> headerRow(const Topology& t) {
  std::vector<std::string> row{""};
  for (int g = 0; g < t.gpuCount(); ++g) row.push_back(gpuLabel(t, g));
  return row;
}

std::string pairList(const Topology& t, Crossing which) {
  std::string out;
  for (int a = 0; a < t.gpuCount(); ++a)
    for (int b = a + 1; b < t.gpuCount(); ++b)
      if (crossingOf(t, a, b) == which)
        out.append(out.empty() ? "" : " ").append(std::to_string(a) + "-" + std::to_string(b));
  return out.empty() ? "none" : out;
}

std::string middleName(SplitLevel level) {
  switch (level) {
    case SplitLevel::Socket:
      return "the socket";
    case SplitLevel::RootComplex:
      return "the CPU root complex";
    case SplitLevel::Switch:
      return "an upper PCIe switch";
    case SplitLevel::None:
    case SplitLevel::Unknown:
      break;
  }
  return "nothing";
}

// The halves over every GPU, the pairs across the middle, and how many flows cross it per all-reduce in
// each variant of each kernel (crossingFlows).
std::string halvesLines(const Topology& t) {
  const Halves h = halvesOfAll(t);
  std::string out = "Halves (the two sides of the slowest level that splits the GPUs): ";
  if (!h.ok) return out + "none (" + h.reason + ")\n";
  out += groupText(h.half[0]) + " " + groupText(h.half[1]) + ", split at " + middleName(h.level) + "\n";
  out += "Pairs across the middle:";
  for (size_t k = 0; k < h.half[0].size(); ++k)
    out.append(" ").append(std::to_string(h.half[0][k]) + "-" + std::to_string(h.half[1][k]));
  const size_t other = h.half[1].size();
  out +=
      "\nFlows crossing the middle per all-reduce (halves: one per GPU, to its partner; the others: each GPU to "
      "the " +
      std::to_string(other) + (other == 1 ? " GPU" : " GPUs") +
      " of the other half, pull as reads, two-shot in its scatter and again in its gather):\n";
  for (SymAlgo algo : {SymAlgo::OneShot, SymAlgo::TwoShot}) {
    out += algo == SymAlgo::OneShot ? "  one-shot" : "  two-shot";
    for (int v = 0; v < kNumSymVariants; ++v) {
      const auto variant = static_cast<SymVariant>(v);
      out += (v ? ", " : " ") + std::string(symVariantName(variant)) + " " +
             std::to_string(h.crossingFlows(algo, variant));
    }
    out += "\n";
  }
  return out;
}

}  // namespace

std::string describeTopology(const Topology& t) {
  const int n = t.gpuCount();
  std::string out = "Topology from " + (t.source().empty() ? std::string("(unknown source)") : t.source()) + ": " +
                    std::to_string(n) + (n == 1 ? " GPU\n" : " GPUs\n");

  if (n > 0) {
    std::vector<std::vector<std::string>> gpus;
    for (int g = 0; g < n; ++g) {
      const auto& gpu = t.gpu(g);
      gpus.push_back({gpuLabel(t, g), gpu.pciBusId.empty() ? "bus ?" : gpu.pciBusId,
                      gpu.capability.known() ? "cc " + gpu.capability.str() : "cc ?",
                      gpu.numaNode ? "numa " + std::to_string(*gpu.numaNode) : "numa ?",
                      gpu.cpuAffinity.empty() ? "cpus ?" : "cpus " + gpu.cpuAffinity,
                      gpu.name.empty() ? "" : gpu.name});
    }
    out += "\nGPUs:\n" + textColumns(gpus, "  ");

    std::vector<std::vector<std::string>> links{headerRow(t)};
    for (int a = 0; a < n; ++a) {
      std::vector<std::string> row{gpuLabel(t, a)};
      for (int b = 0; b < n; ++b)
        row.push_back(a == b ? "X"
                             : pathToken(t.link(a, b).path, t.link(a, b).nvlinks) + " " +
                                   std::string(linkClassName(pairLinkClass(t, a, b))));
      links.push_back(std::move(row));
    }
    out += "\nLinks (nvidia-smi path, link class):\n" + textColumns(links, "  ");

    bool anyP2p = false;
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b && (t.link(a, b).p2pRead != Support::Unknown || t.link(a, b).p2pWrite != Support::Unknown))
          anyP2p = true;
    if (anyP2p) {
      std::vector<std::vector<std::string>> p2p{headerRow(t)};
      for (int a = 0; a < n; ++a) {
        std::vector<std::string> row{gpuLabel(t, a)};
        for (int b = 0; b < n; ++b) {
          if (a == b) {
            row.push_back("X");
            continue;
          }
          const auto& l = t.link(a, b);
          row.push_back(l.p2pRead == l.p2pWrite ? std::string(supportName(l.p2pRead))
                                                : "r:" + std::string(supportName(l.p2pRead)) +
                                                      ",w:" + std::string(supportName(l.p2pWrite)));
        }
        p2p.push_back(std::move(row));
      }
      out += "\nP2P read+write (row reads from / writes to column):\n" + textColumns(p2p, "  ");
    } else {
      out += "\nP2P: unknown\n";
    }

    const auto islands = pcieIslands(t);
    out += "\nPCIe islands (GPUs sharing a switch):";
    if (islands.empty()) out += " none";
    for (const auto& island : islands) {
      out += " {";
      for (size_t k = 0; k < island.size(); ++k) out.append(k ? "," : "").append(std::to_string(island[k]));
      out += "}";
    }
    out += "\nPairs crossing the CPU root complex: " + pairList(t, Crossing::RootComplex) + "\n";
    out += "Pairs crossing the socket: " + pairList(t, Crossing::Socket) + "\n";
    const std::string unknownPairs = pairList(t, Crossing::Unknown);
    if (unknownPairs != "none") out += "Pairs with an unknown path: " + unknownPairs + "\n";
    out += halvesLines(t);

    const Support p2pAll = p2pOfAll(t);
    out += "\nCommunicator over all GPUs: link class " + std::string(linkClassName(linkClassOfAll(t))) +
           ", P2P on every pair: " + std::string(supportName(p2pAll)) + "\n";
  }

  if (!t.notes().empty()) {
    out += "\nNot known:\n";
    for (const auto& note : t.notes()) out += "  - " + note + "\n";
  }
  return out;
}

}  // namespace symmem
