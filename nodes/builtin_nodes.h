// register_builtin_nodes: every node kind shipped with Sluice, registered into one registry.
// The definition is generated from the capability folders under nodes/ (see CMakeLists.txt).
#pragma once

#include "graph/node_registry.h"

namespace sluice {

void register_builtin_nodes(NodeRegistry& registry);

}  // namespace sluice
