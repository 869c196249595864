// shared_serving_engine(): one ServingEngine (and one mapped model) per model file and engine
// options per metrics registry, so every `generate` node of a pipeline that names the same
// model and settings shares one running batch and one KV cache, and with it the prefix cache.
// The model is loaded for options.backend. The engine lives while any node holds it.
// Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/metrics.h"
#include "inference/engine/serving_engine.h"

namespace sluice::inference {

// Throws std::invalid_argument with the loader's message when the model cannot be loaded, or
// the options cannot serve it (e.g. a KV budget below one sequence).
std::shared_ptr<ServingEngine> shared_serving_engine(const std::string& model_path, const EngineOptions& options,
                                                     MetricsRegistry* metrics,
                                                     const std::vector<std::string>& class_names);

}  // namespace sluice::inference
