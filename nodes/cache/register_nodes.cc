// Registers the answer cache node kinds: response_cache, semantic_cache.
#include "graph/node_registry.h"
#include "nodes/cache/response_cache_node.h"
#include "nodes/cache/semantic_cache_node.h"

namespace sluice {

void register_cache_nodes(NodeRegistry& registry) {
  registry.add(NodeKind{
      .kind = "response_cache",
      .summary = "Exact answer cache: replays a stored answer to a request whose every answer-deciding field matches "
                 "one answered before; stores answers as they complete; knowledge-base updates invalidate.",
      .needs = {"request"},
      .adds = {},
      .async = false,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) -> std::unique_ptr<Node> {
        return std::make_unique<cache::ResponseCacheNode>(spec.response_cache(), ctx);
      },
  });
  registry.add(NodeKind{
      .kind = "semantic_cache",
      .summary = "Semantic answer cache: replays the answer to a question that means the same (sentence-encoder "
                 "similarity at or above the threshold and every verification guard agreeing) in the same scope.",
      .needs = {"request"},
      .adds = {},
      .async = false,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) -> std::unique_ptr<Node> {
        return std::make_unique<cache::SemanticCacheNode>(spec.semantic_cache(), ctx);
      },
  });
}

}  // namespace sluice
