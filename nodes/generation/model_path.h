// Where a generation node's model file is: the config's `model` (relative paths are relative to
// the pipeline file), else the SLUICE_MODEL environment variable, so one pipeline file serves
// any model chosen at start-up.
#pragma once

#include <string>

namespace sluice::generation {

// Throws std::invalid_argument("model is not set and SLUICE_MODEL is empty") when neither names one.
std::string model_path_from(const std::string& configured, const std::string& base_dir);

}  // namespace sluice::generation
