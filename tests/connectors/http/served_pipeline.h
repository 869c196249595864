// ServedPipeline: a real Pipeline built from spec text and started, behind an HttpSource built
// from the spec's first source (which must be `kind: http`), wired as `sluice run` wires them;
// drained and stopped on destruction. For end-to-end tests over loopback.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "connectors/http/http_source.h"
#include "graph/pipeline.h"
#include "graph/spec_validator.h"

namespace sluice::http::testing {

// The `name:` and `sources:` head of an end-to-end spec: one http source "api" on a free
// loopback port, serving model "sluice", default class P0. Append `nodes:` and `edges:`.
inline std::string loopback_spec_head(const std::string& pipeline_name) {
  return "name: " + pipeline_name + R"(
sources:
  - name: api
    kind: http
    config: {listen: "127.0.0.1:0", models: [sluice], default_priority: P0}
)";
}

struct ServedPipeline {
  ServedPipeline(const std::string& spec_text, const std::function<void(NodeRegistry&)>& register_nodes) {
    register_nodes(registry);
    spec = load_and_validate_text(spec_text, "served.yaml", registry);
    pipeline = Pipeline::build(spec, registry, {&SteadyClock::instance(), &metrics});
    pipeline->start();
    const SourceSpec& s = spec.pipeline.sources(0);
    source = std::make_unique<HttpSource>(s.http(), s.name(), *pipeline);
    source->start();
  }
  ~ServedPipeline() {
    source->stop_accepting();
    if (!pipeline->draining()) pipeline->drain();
    source->stop();
  }
  ServedPipeline(const ServedPipeline&) = delete;
  ServedPipeline& operator=(const ServedPipeline&) = delete;

  NodeRegistry registry;
  LoadedSpec spec;
  MetricsRegistry metrics;
  std::unique_ptr<Pipeline> pipeline;
  std::unique_ptr<HttpSource> source;
};

}  // namespace sluice::http::testing
