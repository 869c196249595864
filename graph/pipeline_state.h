// Pipeline::State: everything a Pipeline holds, shared by its builder (graph/pipeline_build.cc),
// which fills it once, and its runtime (graph/pipeline.cc), which reads the configuration and
// changes only the atomics, the in-flight count and the live lists. Internal to graph/.
//
// Members are destroyed in reverse order: the flow graph first (its destructor waits for it to
// go idle), then the stages and their nodes, then what completions may still reach while nodes
// are destroyed (lifecycle, in-flight count, live lists).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/alert_webhook.h"
#include "graph/clock.h"
#include "graph/in_flight.h"
#include "graph/live_lists.h"
#include "graph/metrics.h"
#include "graph/pipeline.h"
#include "graph/pipeline_flow.h"
#include "graph/pipeline_lifecycle.h"
#include "graph/request_tracer.h"
#include "graph/stage.h"

namespace sluice {

struct Pipeline::State {
  // Where requests from one source enter, and what intake needs to know about it.
  struct Source {
    FlowGraph::Entry* entry = nullptr;
    int leaves_below = 1;                     // the new batch's pending_leaves
    AdmissionController* admission = nullptr;  // consulted at intake; borrowed from a node
  };

  // ---- fixed at build
  std::string name;
  Clock* clock = nullptr;
  MetricsRegistry* metrics = nullptr;
  std::vector<std::string> class_names;
  int default_class = 0;
  Nanos default_deadline = 60 * kNanosPerSecond;
  std::vector<Nanos> class_deadlines;  // by class: its `deadline` (SLO), 0 where it has none
  Nanos drain_timeout = 30 * kNanosPerSecond;
  std::size_t max_in_flight = 4096;
  std::vector<std::string> stage_names;
  std::map<std::string, Source> sources;          // by source name
  std::vector<AdmissionController*> controllers;  // installed by nodes at build; borrowed
  // alerts.webhook's poster (null without one); declared before the stages, whose budgets
  // notify it, so it outlives them.
  std::unique_ptr<AlertWebhook> alerts;
  std::vector<std::string> stage_kinds;  // by node index, for span attributes
  // TracingSpec's tracer (null without an endpoint); declared before the lifecycle, which
  // hands it completed requests, so it outlives it.
  std::unique_ptr<RequestTracer> tracer;

  // ---- changed at run time
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<std::uint64_t> next_batch_id{1};
  InFlight in_flight;
  std::atomic<bool> started{false};
  LiveLists live;

  // ---- the graph
  std::unique_ptr<PipelineLifecycle> lifecycle;
  std::vector<std::unique_ptr<Stage>> stages;  // by node index
  std::unique_ptr<FlowGraph> flow;
};

}  // namespace sluice
