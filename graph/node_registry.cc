#include "graph/node_registry.h"

#include <stdexcept>

namespace sluice {

void NodeRegistry::add(NodeKind kind) {
  std::string name = kind.kind;
  if (!kinds_.emplace(name, std::move(kind)).second) {
    throw std::logic_error("node kind '" + name + "' registered twice");
  }
}

const NodeKind* NodeRegistry::find(const std::string& kind) const {
  auto it = kinds_.find(kind);
  return it == kinds_.end() ? nullptr : &it->second;
}

std::vector<std::string> NodeRegistry::kinds() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : kinds_) out.push_back(name);
  return out;
}

}  // namespace sluice
