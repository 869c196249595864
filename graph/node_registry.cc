#include "graph/node_registry.h"

#include <stdexcept>

namespace sluice {

void NodeRegistry::add(NodeKind kind) {
  std::string name = kind.kind;
  if (!kinds_.emplace(name, std::move(kind)).second) {
    throw std::logic_error("node kind '" + name + "' registered twice");
  }
}

void NodeRegistry::set_degradations(const std::string& kind, std::string on_skip, std::string on_shrink) {
  if (!kinds_.count(kind)) throw std::logic_error("degradations for unregistered node kind '" + kind + "'");
  degradations_[kind] = {std::move(on_skip), std::move(on_shrink)};
}

const Degradations& NodeRegistry::degradations(const std::string& kind) const {
  static const Degradations kNone;
  auto it = degradations_.find(kind);
  return it == degradations_.end() ? kNone : it->second;
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

std::set<std::string> NodeRegistry::kinds_that_degrade(const std::string& action) const {
  std::set<std::string> out;
  for (const auto& [name, d] : degradations_) {
    if (!(action == "skip" ? d.on_skip : d.on_shrink).empty()) out.insert(name);
  }
  return out;
}

}  // namespace sluice
