// Renders a validated pipeline as a Graphviz DOT digraph (`sluice graph FILE`): sources as
// ellipses, nodes as boxes labelled "name / kind", fan-ins marked as joins.
#pragma once

#include <string>

#include "graph/schema.h"

namespace sluice {

std::string pipeline_to_dot(const PipelineSpec& pipeline);

}  // namespace sluice
