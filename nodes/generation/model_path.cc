#include "nodes/generation/model_path.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace sluice::generation {

std::string model_path_from(const std::string& configured, const std::string& base_dir) {
  if (configured.empty()) {
    const char* env = std::getenv("SLUICE_MODEL");
    if (!env || !*env) throw std::invalid_argument("model is not set and SLUICE_MODEL is empty");
    return env;
  }
  if (std::filesystem::path(configured).is_relative() && !base_dir.empty()) {
    return (std::filesystem::path(base_dir) / configured).string();
  }
  return configured;
}

}  // namespace sluice::generation
