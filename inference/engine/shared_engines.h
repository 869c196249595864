// shared_serving_engine(): one ServingEngine (and one mapped model) per model file and engine
// options per metrics registry, so every node of a pipeline that generates with the same model
// (`generate`, the `answer` node's generated mode) shares one running batch and one KV cache,
// and with it the prefix cache. The engine lives while any node holds it.
// Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/metrics.h"
#include "nodes/generation/engine/serving_engine.h"

namespace sluice::generation {

// Throws std::invalid_argument with the loader's message when the model cannot be loaded, or
// the options cannot serve it (e.g. a KV budget below one sequence).
std::shared_ptr<ServingEngine> shared_serving_engine(const std::string& model_path, const EngineOptions& options,
                                                     MetricsRegistry* metrics,
                                                     const std::vector<std::string>& class_names);

}  // namespace sluice::generation
