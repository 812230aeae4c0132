#include "plugin/process_context.h"

#include "core/log.h"
#include "plugin/node_discovery.h"

namespace symmem {

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

NodeSummary discoverNodeFacts(const Settings& settings) {
  NodeSummary facts = nodeFactsFromTopology(settings.text(SettingId::TopoFile));
  if (const std::string& cc = settings.text(SettingId::Capability); !cc.empty()) {
    facts.cc = *parseCapability(cc);  // validated by the settings registry
    facts.mixedCapabilities = false;
    facts.description += ", capability " + cc + " (SYMMEM_CC)";
  }
  return facts;
}

const ProcessContext& processContext() {
  static const ProcessContext context = [] {
    ProcessContext c;
    const Settings& settings = Settings::process();
    c.policy = policyFrom(settings);
    c.node = discoverNodeFacts(settings);
    c.table = &processTable();
    return c;
  }();
  return context;
}

}  // namespace symmem
