// Registers the embedding node kinds: embeddings.
#include "graph/node_registry.h"
#include "nodes/embedding/embeddings_node.h"

namespace sluice {

void register_embedding_nodes(NodeRegistry& registry) {
  registry.add(NodeKind{
      .kind = "embeddings",
      .summary = "Answers embedding requests (POST /v1/embeddings, Kafka embedding jobs) with the pretrained sentence "
                 "encoder, batched across requests; other requests pass on.",
      .needs = {"request"},
      .adds = {},
      .async = false,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) -> std::unique_ptr<Node> {
        return std::make_unique<EmbeddingsNode>(spec.embeddings(), ctx);
      },
  });
}

}  // namespace sluice
