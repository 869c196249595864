// The app's shared pieces: the node registry with every built-in kind, and pipeline loading
// that prints each problem as file:line:column.
#pragma once

#include <string>

#include "graph/node_registry.h"
#include "graph/spec_loader.h"

namespace sluice::cli {

NodeRegistry& node_registry();
// Loads and validates; prints every problem to stderr. False when the file is not usable.
bool load_pipeline(const std::string& path, LoadedSpec* out);

}  // namespace sluice::cli
