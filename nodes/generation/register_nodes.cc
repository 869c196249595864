// Registers the generation node kinds: generate.
#include "graph/node_registry.h"
#include "nodes/generation/generate_node.h"

namespace sluice {

void register_generation_nodes(NodeRegistry& registry) {
  registry.add(NodeKind{
      .kind = "generate",
      .summary = "Streams a Llama model's answer (GGUF; own CPU kernels) into the request's sink.",
      .needs = {"request"},
      .adds = {"answer"},
      .async = true,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) -> std::unique_ptr<Node> {
        return std::make_unique<generation::GenerateNode>(
            generation::generate_options_from(spec.generate(), ctx.base_dir), ctx.clock);
      },
  });
}

}  // namespace sluice
