// SPDX-License-Identifier: Apache-2.0
#include "plugin/process/process_context.h"

#include "plugin/process/node_discovery.h"
#include "plugin/process/process.h"
#include "topology/node_facts.h"

namespace symmem {

HalvesMode halvesModeFrom(const Settings& settings) {
  const std::string& mode = settings.text(SettingId::Halves);
  return mode == "off" ? HalvesMode::Off : mode == "split" ? HalvesMode::Split : HalvesMode::Auto;
}

Policy policyFrom(const Settings& settings) {
  Policy p;
  p.enabled = settings.flag(SettingId::Enable);
  p.symmetric = settings.flag(SettingId::Symmetric);
  p.tuner = settings.flag(SettingId::Tuner);
  const std::string& force = settings.text(SettingId::ForcePath);
  p.force = force == "oneshot"   ? ForcedPath::OneShot
            : force == "twoshot" ? ForcedPath::TwoShot
            : force == "nccl"    ? ForcedPath::Nccl
                                 : ForcedPath::Auto;
  return p;
}

NodeSummary summarizeNode(const Topology& topology, const Settings& settings) {
  NodeSummary facts = summarizeNodeFacts(nodeFactsOf(topology));
  if (const std::string& cc = settings.text(SettingId::Capability); !cc.empty()) {
    facts.cc = *parseCapability(cc);  // validated by the settings registry
    facts.mixedCapabilities = false;
    facts.description += ", capability " + cc + " (SYMMEM_CC)";
  }
  return facts;
}

const ProcessContext& processContext() { return Process::get().context(); }

}  // namespace symmem
