// KafkaWorker: a pipeline with a kafka source (source 0 of `yaml`) built, started and consuming,
// as `sluice worker` runs one; stop() drains and stops it as SIGTERM does. `register_nodes` adds
// the node kinds the file uses. Shared by the Kafka tests that need a live worker.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "connectors/kafka/kafka_source.h"
#include "graph/clock.h"
#include "graph/metrics.h"
#include "graph/node_registry.h"
#include "graph/pipeline.h"
#include "graph/spec_validator.h"

namespace sluice::kafka::testing {

struct KafkaWorker {
  KafkaWorker(const std::function<void(NodeRegistry&)>& register_nodes, const std::string& yaml) {
    register_nodes(registry);
    spec = load_and_validate_text(yaml, "worker-test.yaml", registry);
    pipeline = Pipeline::build(spec, registry, {&SteadyClock::instance(), &metrics});
    pipeline->start();
    source = std::make_unique<KafkaSource>(spec.pipeline.sources(0).kafka(), spec.pipeline.sources(0).name(), *pipeline);
    source->start();
  }
  ~KafkaWorker() { stop(); }
  void stop() {
    if (!source) return;
    source->stop_accepting();
    pipeline->drain(5 * kNanosPerSecond);
    source->stop();
    source.reset();
  }
  NodeRegistry registry;
  LoadedSpec spec;
  MetricsRegistry metrics;
  std::unique_ptr<Pipeline> pipeline;
  std::unique_ptr<KafkaSource> source;
};

}  // namespace sluice::kafka::testing
