// The pipeline plan: chains, joins, leaves and links worked out from a spec before any node or
// oneTBB object exists.
#include "graph/pipeline_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/spec_validator.h"
#include "tests/graph/test_support.h"

namespace sluice {
namespace {

using ::testing::ElementsAre;

struct Planned {
  explicit Planned(const std::string& yaml) : reg(testing::test_registry()) {
    spec = load_and_validate_text(yaml, "t.yaml", reg);
    plan = plan_pipeline(spec.pipeline, reg);
  }
  NodeRegistry reg;
  LoadedSpec spec;
  PipelinePlan plan;
};

TEST(PipelinePlan, UnlimitedSyncStagesInALineBecomeOneChain) {
  Planned p(R"(name: line
sources: [{name: api, kind: http}]
nodes: [{name: a, kind: mark}, {name: b, kind: mark}, {name: c, kind: answer_marks}]
edges: [{from: api, to: a}, {from: a, to: b}, {from: b, to: c}]
)");
  ASSERT_EQ(p.plan.units.size(), 1u);
  EXPECT_THAT(p.plan.units[0].stages, ElementsAre(0, 1, 2));
  EXPECT_EQ(p.plan.units[0].fan_in, 1);
  ASSERT_EQ(p.plan.links.size(), 1u);  // only api -> a; the rest are inside the chain
  EXPECT_EQ(p.plan.links[0].from, "api");
  EXPECT_THAT(p.plan.leaf, ElementsAre(false, false, true));
  EXPECT_EQ(p.plan.leaves_below.at("api"), 1);
}

TEST(PipelinePlan, ChainsStopAtConcurrencyLimitsAsyncNodesAndWhenTurnedOff) {
  Planned limited(R"(name: limited
sources: [{name: api, kind: http}]
nodes: [{name: a, kind: mark}, {name: b, kind: mark, concurrency: 2}, {name: c, kind: hold}]
edges: [{from: api, to: a}, {from: a, to: b}, {from: b, to: c}]
)");
  ASSERT_EQ(limited.plan.units.size(), 3u);
  EXPECT_EQ(limited.plan.links.size(), 3u);

  Planned off(R"(name: off
runtime: {chain_stages: false}
sources: [{name: api, kind: http}]
nodes: [{name: a, kind: mark}, {name: b, kind: answer_marks}]
edges: [{from: api, to: a}, {from: a, to: b}]
)");
  EXPECT_EQ(off.plan.units.size(), 2u);
}

TEST(PipelinePlan, AFanInGetsAJoinWithOnePortPerBranchAndCountsAsOneLeaf) {
  Planned p(R"(name: wide
sources: [{name: api, kind: http}]
nodes:
  - {name: a, kind: mark}
  - {name: b, kind: mark}
  - {name: c, kind: mark}
  - {name: join, kind: answer_marks}
edges:
  - {from: api, to: a}
  - {from: api, to: b}
  - {from: api, to: c}
  - {from: a, to: join}
  - {from: b, to: join}
  - {from: c, to: join}
)");
  // Fan-out and fan-in points end chains: four units.
  ASSERT_EQ(p.plan.units.size(), 4u);
  EXPECT_EQ(p.plan.units[3].fan_in, 3);
  std::vector<int> ports;
  for (const auto& l : p.plan.links) {
    if (l.unit == 3) ports.push_back(l.port);
  }
  EXPECT_THAT(ports, ElementsAre(0, 1, 2));
  // Three branches, one join: a batch from the source reaches one leaf once.
  EXPECT_EQ(p.plan.leaves_below.at("api"), 1);
  EXPECT_EQ(p.plan.leaves_below.at("a"), 1);
}

TEST(PipelinePlan, BranchesEndingInTheirOwnLeavesCountEach) {
  Planned p(R"(name: fork
sources: [{name: api, kind: http}]
nodes: [{name: a, kind: answer_marks}, {name: b, kind: mark}]
edges: [{from: api, to: a}, {from: api, to: b}]
)");
  EXPECT_EQ(p.plan.leaves_below.at("api"), 2);
  EXPECT_THAT(p.plan.leaf, ElementsAre(true, true));
}

TEST(PipelinePlan, SourcesUpstreamOfANodeAreFoundThroughEveryPath) {
  Planned p(R"(name: two
sources: [{name: api, kind: http}, {name: batch, kind: http}]
nodes: [{name: a, kind: mark}, {name: b, kind: mark}, {name: join, kind: answer_marks}]
edges:
  - {from: api, to: a}
  - {from: batch, to: b}
  - {from: a, to: join}
  - {from: b, to: join}
)");
  EXPECT_THAT(p.plan.sources_upstream("join"), ElementsAre("batch", "api"));
  EXPECT_THAT(p.plan.sources_upstream("a"), ElementsAre("api"));
  EXPECT_THAT(p.plan.sources, ElementsAre("api", "batch"));
}

}  // namespace
}  // namespace sluice
