// Registers the generation node kinds: generate, prompt.
#include "graph/node_registry.h"
#include "nodes/generation/generate_node.h"
#include "nodes/generation/prompt_node.h"

namespace sluice {

void register_generation_nodes(NodeRegistry& registry) {
  registry.add(NodeKind{
      .kind = "generate",
      .summary = "Streams a Llama model's answer into the request's sink through the serving engine (continuous batching, paged KV with prefix reuse).",
      .needs = {"request"},
      .adds = {"answer"},
      .async = true,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) -> std::unique_ptr<Node> {
        auto options = generation::generate_options_from(spec.generate(), ctx.base_dir);
        options.stage_index = ctx.stage_index;
        options.shrink_factor = ctx.shrink_factor;
        auto node = std::make_unique<generation::GenerateNode>(options, ctx.clock, ctx.metrics, ctx.class_names);
        node->name_cache_tier(ctx.name);
        return node;
      },
  });
  registry.add(NodeKind{
      .kind = "prompt",
      .summary = "Lays out the retrieved passages with numbered citations and the question as the model's prompt.",
      .needs = {"hits"},
      .adds = {"prompt"},
      .async = false,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) -> std::unique_ptr<Node> {
        return std::make_unique<generation::PromptNode>(generation::prompt_options_from(spec.prompt(), ctx.base_dir),
                                                        ctx.clock);
      },
  });
  registry.set_degradations("generate", "the node after it answers (e.g. `answer`, extractively)", "generates max_tokens times factor (at least 1), ending with finish_reason length");
}

}  // namespace sluice
