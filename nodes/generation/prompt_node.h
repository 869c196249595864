// `prompt`: turns each request's retrieved passages and question into the prompt the
// `generate` node continues, with numbered citations.
//
// Reads the `retrieval.hits` attachment (fuse, rerank) and the knowledge-base generation it
// indexes (`retrieval.snapshot`); lays out the prompt as cited_prompt.h describes (configured
// system text first and byte-stable, then passages [1]..[n], the question last); renders it
// with the chat template when the request is a chat (plain for completions, whose prompt is raw
// model text). Passages are sized in characters here (max_passage_chars): this node does not
// know the model's context or the answer's length. Leaves two attachments:
//   prompt            CitedPromptDraft                 the layout, renderable with fewer or
//                                                      shorter passages: `generate` fits it to
//                                                      the context in tokens (prompt_fit.h)
//   prompt.citations  std::vector<Citation>  number -> doc id, title, offsets of each
//                                                       passage's chunk, for the sources
// A request without hits (or with none found) gets the `no_passages` text and no citations.
//
// Thread-safety: process() runs concurrently; the node holds only immutable options.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/citation.h"
#include "graph/clock.h"
#include "graph/node.h"
#include "graph/schema.h"
#include "inference/tokenize/prompt_text.h"
#include "nodes/generation/chat_template.h"
#include "nodes/generation/cited_prompt.h"
#include "nodes/retrieval/node/retrieval_nodes.h"

namespace sluice::generation {

// A CitedPromptDraft from `prompt`; another node may leave a std::string instead (raw model
// text, encoded literally).
inline constexpr const char* kPromptKey = "prompt";
inline constexpr const char* kCitationsKey = "prompt.citations";

struct PromptNodeOptions {
  CitedPromptOptions layout;
  ChatTemplate chat_template = ChatTemplate::kPlain;  // for chat requests
};

// Resolves a PromptConfig: checks the templates; `chat_template: auto` reads the model file's
// tokenizer.chat_template (config.model, else SLUICE_MODEL). Throws std::invalid_argument
// naming the field and the problem.
PromptNodeOptions prompt_options_from(const PromptConfig& config, const std::string& base_dir);

// One request's cited prompt before it is fitted to a model: everything needed to render it
// again with fewer passages or a shorter last one. Immutable once made; holds the knowledge-base
// generation its passages point into.
struct CitedPromptDraft {
  std::shared_ptr<const PromptNodeOptions> options;
  ChatTemplate chat_template = ChatTemplate::kPlain;  // options' template for chats, else plain
  RequestInput input;
  std::shared_ptr<const retrieval::KbSnapshot> generation;
  std::vector<Passage> passages;               // used passages in rank order (views into generation)
  std::vector<Citation> citations;  // citations[i] cites passages[i]

  // The prompt with the first min(n, passages) passages, the last of them further cut to
  // `last_passage_chars` code points (0: only max_passage_chars applies).
  inference::PromptText render(std::size_t n, std::size_t last_passage_chars = 0) const;
  inference::PromptText render() const { return render(passages.size()); }
};

// One request's draft from its hits (nullptr: none) over `gen`, which must hold every hit's
// chunk. Throws std::out_of_range when a hit's chunk is not in `gen`.
CitedPromptDraft cited_prompt(std::shared_ptr<const PromptNodeOptions> options, const RequestInput& input,
                              const retrieval::RetrievalHits* hits,
                              std::shared_ptr<const retrieval::KbSnapshot> gen);

class PromptNode final : public SyncNode {
 public:
  PromptNode(PromptNodeOptions options, Clock* clock)
      : options_(std::make_shared<const PromptNodeOptions>(std::move(options))), clock_(clock) {}
  void process(Batch& batch) override;

 private:
  std::shared_ptr<const PromptNodeOptions> options_;
  Clock* clock_;
};

}  // namespace sluice::generation
