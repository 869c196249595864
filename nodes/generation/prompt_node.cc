#include "nodes/generation/prompt_node.h"

#include <algorithm>
#include <stdexcept>

#include "graph/batch.h"

namespace sluice::generation {

using namespace sluice::inference;  // the model runtime these nodes drive

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

CitedPromptDraft cited_prompt(std::shared_ptr<const PromptNodeOptions> options, const RequestInput& input,
                              const retrieval::RetrievalHits* hits,
                              std::shared_ptr<const retrieval::KbSnapshot> gen) {
  CitedPromptDraft out;
  const std::size_t n = hits ? passages_used(options->layout, hits->hits.size()) : 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto chunk = hits->hits[i].chunk;
    if (gen == nullptr || chunk >= gen->chunks().size()) {
      throw std::out_of_range("retrieval hit " + std::to_string(i + 1) + " (chunk " + std::to_string(chunk) +
                              ") is not in the request's pinned knowledge-base generation");
    }
    const retrieval::Chunk& c = gen->chunks()[chunk];
    out.passages.push_back({c.doc_id, c.title, c.text});
    out.citations.push_back({int(i + 1), c.doc_id, c.title, c.begin, c.end, retrieval::chunk_key(c)});
  }
  out.chat_template = input.kind == RequestInput::Kind::kChat ? options->chat_template : ChatTemplate::kPlain;
  out.options = std::move(options);
  out.input = input;
  out.generation = std::move(gen);
  return out;
}

PromptText CitedPromptDraft::render(std::size_t n, std::size_t last_passage_chars) const {
  const std::vector<Passage> used(passages.begin(), passages.begin() + std::ptrdiff_t(std::min(n, passages.size())));
  std::string user_turn = passages_and_question(options->layout, used, input.query(), last_passage_chars);
  return render_chat(cited_conversation(options->layout, input, std::move(user_turn)), chat_template);
}

void PromptNode::process(Batch& batch) {
  for (auto& r : batch.requests) {
    if (!r->active()) continue;
    const auto hits = r->attachment<retrieval::RetrievalHits>(retrieval::kHitsKey);
    const auto gen = r->attachment<const retrieval::KbSnapshot>(retrieval::kSnapshotKey);
    try {
      auto draft = std::make_shared<CitedPromptDraft>(cited_prompt(options_, r->input(), hits.get(), gen));
      r->attach(kCitationsKey, std::make_shared<std::vector<Citation>>(draft->citations));
      r->attach(kPromptKey, std::shared_ptr<const CitedPromptDraft>(std::move(draft)));
    } catch (const std::out_of_range& e) {
      r->complete(Status::Error(StatusCode::kInternal, std::string("prompt: ") + e.what()), clock_->now());
    }
  }
}

}  // namespace sluice::generation
