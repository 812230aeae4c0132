// SPDX-License-Identifier: Apache-2.0
// symmem-health's command line and what it plans to check, from recorded topologies (no GPU): every
// ordered pair with what the topology says of it, one loopback pair on one GPU, clear errors.
#include "tools/health/plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topology/topology_file.h"

namespace symmem {
namespace {

std::string fixture(const std::string& name) { return std::string(SYMMEM_TEST_DATA_DIR) + "/topologies/" + name; }

Topology load(const std::string& name) {
  auto t = loadTopologyFile(fixture(name));
  EXPECT_TRUE(t.ok()) << t.error();
  return t.ok() ? std::move(t).value() : Topology();
}

HealthArgsResult parse(const std::vector<std::string>& args) { return parseHealthArgs(args); }

TEST(HealthOptions, DefaultsAndValues) {
  const HealthArgsResult d = parse({});
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_TRUE(d.options.gpus.empty());
  EXPECT_EQ(d.options.timeoutSec, 20);
  EXPECT_FALSE(d.options.quick);
  const HealthArgsResult r = parse({"--gpus", "2,0", "--timeout-s", "5", "--quick", "--csv", "h.csv"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.options.gpus, (std::vector<int>{2, 0}));
  EXPECT_EQ(r.options.timeoutSec, 5);
  EXPECT_TRUE(r.options.quick);
  EXPECT_EQ(r.options.csv, "h.csv");
  EXPECT_TRUE(parse({"--judge", "h.csv"}).ok());
}

TEST(HealthOptions, BadArgumentsAreNamed) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"--gpus", "0,0"}, "bad --gpus '0,0'"},
           {{"--timeout-s", "0"}, "bad --timeout-s '0'"},
           {{"--timeout-s"}, "--timeout-s needs a value"},
           {{"--frobnicate"}, "unknown option --frobnicate (symmem-health --help lists the options)"},
           {{"--judge", "x.csv", "--quick"}, "--judge reads recorded measurements"},
       }) {
    const HealthArgsResult r = parse(c.args);
    EXPECT_NE(r.error.find(c.message), std::string::npos) << "got: " << r.error;
  }
  EXPECT_NE(healthUsage().find("--judge"), std::string::npos);
}

TEST(HealthPlan, EveryOrderedPairWithWhatTheTopologyKnows) {
  const Topology topo = load("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  const HealthPlan plan = planHealth(topo, parse({}).options);
  ASSERT_TRUE(plan.ok()) << plan.error;
  const HealthMeasurements& m = plan.skeleton;
  ASSERT_EQ(m.gpus.size(), 8u);
  ASSERT_EQ(m.pairs.size(), 56u);
  EXPECT_FALSE(m.loopback);
  EXPECT_EQ(m.link, LinkClass::PcieCrossSocket);
  for (const HealthPair& p : m.pairs) {
    EXPECT_NE(p.a, p.b);
    EXPECT_EQ(p.path, topo.link(p.a, p.b).path);
    EXPECT_EQ(p.writeCheck, PatternResult::NotRun);
    EXPECT_TRUE(std::isnan(p.writeGBs));
  }
  EXPECT_EQ(m.pairs[0].path, PathKind::Pix);  // GPU0->GPU1 share a switch there
}

TEST(HealthPlan, ChosenGpusKeepTheirOrderAndNumbers) {
  const Topology topo = load("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  const HealthPlan plan = planHealth(topo, parse({"--gpus", "3,2"}).options);
  ASSERT_TRUE(plan.ok()) << plan.error;
  ASSERT_EQ(plan.skeleton.gpus.size(), 2u);
  EXPECT_EQ(plan.skeleton.gpus[0].index, 3);
  EXPECT_EQ(plan.skeleton.gpus[1].index, 2);
  ASSERT_EQ(plan.skeleton.pairs.size(), 2u);
  EXPECT_EQ(plan.skeleton.pairs[0].a, 0);  // positions in skeleton.gpus, not topology indices
  EXPECT_EQ(plan.skeleton.pairs[0].b, 1);
  EXPECT_EQ(plan.skeleton.pairs[0].path, topo.link(3, 2).path);
  EXPECT_EQ(plan.skeleton.link, LinkClass::PcieSameSwitch);
}

TEST(HealthPlan, OneGpuIsALoopbackAndNoGpuIsNothingToDo) {
  const Topology topo = load("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  const HealthPlan one = planHealth(topo, parse({"--gpus", "5"}).options);
  ASSERT_TRUE(one.ok()) << one.error;
  EXPECT_TRUE(one.skeleton.loopback);
  ASSERT_EQ(one.skeleton.pairs.size(), 1u);
  EXPECT_EQ(one.skeleton.pairs[0].a, 0);
  EXPECT_EQ(one.skeleton.pairs[0].b, 0);

  const HealthPlan missing = planHealth(topo, parse({"--gpus", "9"}).options);
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_NE(missing.error.find("--gpus names GPU9, but this machine has 8 GPUs"), std::string::npos) << missing.error;

  const HealthPlan none = planHealth(Topology(), parse({}).options);
  EXPECT_EQ(none.exitCode, 3);
  EXPECT_NE(none.error.find("symmem-health: no CUDA GPU found"), std::string::npos) << none.error;
}

// NVML that cannot see the GPUs whose device nodes exist: the check could not run (4), not "nothing to gain".
TEST(HealthPlan, NoGpuWhereDeviceNodesExistIsACheckThatCouldNotRun) {
  HealthPlan none = planHealth(Topology(), parse({}).options);
  explainNoGpu(&none, 0);
  EXPECT_EQ(none.exitCode, 3) << none.error;
  explainNoGpu(&none, 2);
  EXPECT_EQ(none.exitCode, 4);
  EXPECT_EQ(none.error.rfind(
                "symmem-health: this machine has 2 NVIDIA device nodes (/dev/nvidiaN), but NVML lists no GPU", 0),
            0u)
      << none.error;
  EXPECT_EQ(none.error.find("nothing to check"), std::string::npos) << none.error;
  const std::string once = none.error;
  explainNoGpu(&none, 2);  // a plan already explained stays as it is
  EXPECT_EQ(none.error, once);

  const Topology topo = load("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  HealthPlan missing = planHealth(topo, parse({"--gpus", "9"}).options);
  explainNoGpu(&missing, 8);
  EXPECT_EQ(missing.exitCode, 2);
}

TEST(HealthPlan, WorstCaseGrowsWithPairsAndTheStepLimit) {
  const Topology topo = load("rtx-pro-6000-server-x8-asus-esc8000a-e13p-broadcom.topo.txt");
  HealthOptions o = parse({}).options;
  const int two = healthWorstCaseSec(planHealth(topo, parse({"--gpus", "0,1"}).options), o);
  const int eight = healthWorstCaseSec(planHealth(topo, o), o);
  EXPECT_GT(eight, two);
  o.timeoutSec = 40;
  EXPECT_GT(healthWorstCaseSec(planHealth(topo, o), o), eight);
}

}  // namespace
}  // namespace symmem
