#include "nodes/generation/prompt_node.h"

#include <stdexcept>

#include "graph/batch.h"

namespace sluice::generation {

PromptNodeOptions prompt_options_from(const PromptConfig& config, const std::string& base_dir) {
  PromptNodeOptions o;
  o.layout.system = config.system();
  o.layout.passage_template = config.passage_template();
  o.layout.question_template = config.question_template();
  o.layout.no_passages = config.no_passages();
  o.layout.max_passages = config.max_passages();
  o.layout.max_passage_chars = config.max_passage_chars();
  check_cited_prompt_options(o.layout);
  o.chat_template = chat_template_for(config.chat_template(), "chat_template", config.model(), base_dir);
  return o;
}

CitedPrompt cited_prompt(const PromptNodeOptions& options, const RequestInput& input,
                         const retrieval::RetrievalHits* hits, const retrieval::IndexGeneration* gen) {
  CitedPrompt out;
  std::vector<Passage> passages;
  const std::size_t n = hits ? passages_used(options.layout, hits->hits.size()) : 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto chunk = hits->hits[i].chunk;
    if (gen == nullptr || chunk >= gen->chunks().size()) {
      throw std::out_of_range("retrieval hit " + std::to_string(i + 1) + " (chunk " + std::to_string(chunk) +
                              ") is not in the request's pinned knowledge-base generation");
    }
    const retrieval::Chunk& c = gen->chunks()[chunk];
    passages.push_back({c.doc_id, c.title, c.text});
    out.citations.push_back({int(i + 1), c.doc_id, c.title, c.begin, c.end});
  }
  std::string user_turn = passages_and_question(options.layout, passages, input.query());
  const ChatTemplate t = input.kind == RequestInput::Kind::kChat ? options.chat_template : ChatTemplate::kPlain;
  out.text = render_chat(cited_conversation(options.layout, input, std::move(user_turn)), t);
  return out;
}

void PromptNode::process(Batch& batch) {
  for (auto& r : batch.requests) {
    if (!r->active()) continue;
    const auto hits = r->attachment<retrieval::RetrievalHits>(retrieval::kHitsKey);
    const auto gen = r->attachment<const retrieval::IndexGeneration>(retrieval::kGenerationKey);
    try {
      CitedPrompt p = cited_prompt(options_, r->input(), hits.get(), gen.get());
      r->attach(kPromptKey, std::make_shared<std::string>(std::move(p.text)));
      r->attach(kCitationsKey, std::make_shared<std::vector<retrieval::Citation>>(std::move(p.citations)));
    } catch (const std::out_of_range& e) {
      r->complete(Status::Error(StatusCode::kInternal, std::string("prompt: ") + e.what()), clock_->now());
    }
  }
}

}  // namespace sluice::generation
