// PipelinePlan: the shape a validated pipeline spec takes in the flow graph, worked out before
// any node or oneTBB object exists: which stages run together in one flow-graph node (chains),
// where a join goes and how many branches it takes, how many leaves a batch reaches from each
// point, and the edges left between flow-graph nodes.
//
// Chains: a synchronous stage of unlimited concurrency whose only input is a stage of the same
// sort with no other output runs in its predecessor's flow-graph node, right after it: the
// hand-off between them would cost a task (and a queue) and buy nothing, since neither limits
// its concurrency. runtime.chain_stages: false gives every stage its own flow-graph node.
//
// plan_pipeline is pure (the spec and the registered kinds' shapes in, the plan out);
// Pipeline::build makes the nodes (graph/pipeline_build.cc) and the oneTBB objects
// (graph/pipeline_flow.h) from it. Expects a spec that passed validate_spec().
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/node_registry.h"
#include "graph/schema.h"

namespace sluice {

struct PipelinePlan {
  // One flow-graph node: a chain of synchronous stages run one after another in one task, or a
  // single stage. Stages are node indices (PipelineSpec::nodes), head first.
  struct Unit {
    std::vector<int> stages;
    int fan_in = 0;  // joined inputs of the head; more than one puts a join in front of it
  };
  // An edge between flow-graph nodes: from a source or the tail of a unit into input `port` of
  // a unit's head (a port of its join when fan_in > 1). Edges inside a chain are not links.
  struct Link {
    std::string from;  // a source name, or the name of a unit's last stage
    int unit = 0;
    int port = 0;
  };

  std::vector<std::string> sources;  // source names, in spec order
  std::vector<Unit> units;  // in the node order of their heads
  std::vector<Link> links;  // in the spec's edge order
  std::vector<bool> leaf;   // by node index: no successors, its batches leave the graph after it
  // By source or node name: how many times a batch from there reaches a leaf (a join counts
  // once, however many of its branches the batch takes).
  std::map<std::string, int> leaves_below;
  std::map<std::string, std::vector<std::string>> predecessors;  // by node name, in edge order
  // Nodes whose inputs come from disjoint sets of sources (e.g. an HTTP and a Kafka source into
  // one router): their edges merge into one input (port 0, fan_in 1) instead of meeting in a
  // join, since no batch arrives on two of them.
  std::vector<std::string> merges;

  // The sources upstream of `node`, in the order a depth-first walk up the edges meets them.
  std::vector<std::string> sources_upstream(const std::string& node) const;
};

PipelinePlan plan_pipeline(const PipelineSpec& spec, const NodeRegistry& registry);

}  // namespace sluice
