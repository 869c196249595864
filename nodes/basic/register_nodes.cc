// Registers the basic node kinds: `passthrough` and the `template` test fixture.
#include "graph/node_registry.h"
#include "nodes/basic/passthrough_node.h"
#include "nodes/basic/template_responder.h"

namespace sluice {

void register_basic_nodes(NodeRegistry& registry) {
  registry.add(NodeKind{
      .kind = "passthrough",
      .summary = "Hands batches on unchanged (wiring, benchmarks).",
      .needs = {"request"},
      .adds = {},
      .async = false,
      .factory = [](const NodeSpec&, const NodeContext&) { return std::make_unique<PassthroughNode>(); },
  });
  registry.add(NodeKind{
      .kind = "template",
      .summary = "Test fixture, not a model: streams a fixed text word by word.",
      .needs = {"request"},
      .adds = {"answer"},
      .async = true,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) {
        return std::make_unique<TemplateResponder>(spec.template_(), ctx);
      },
  });
}

}  // namespace sluice
