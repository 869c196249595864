// `prompt`: turns each request's retrieved passages and question into the text the `generate`
// node continues, with numbered citations.
//
// Reads the `retrieval.hits` attachment (fuse, rerank) and the knowledge-base generation it
// indexes (`retrieval.generation`); lays out the prompt as cited_prompt.h describes (configured
// system text first and byte-stable, then passages [1]..[n], the question last); renders it
// with the chat template when the request is a chat (plain for completions, whose prompt is raw
// model text). Leaves two attachments:
//   prompt            std::string                      what `generate` feeds the model
//   prompt.citations  std::vector<retrieval::Citation>  number -> doc id, title, offsets of each
//                                                       passage in the prompt, for the sources
// A request without hits (or with none found) gets the `no_passages` text and no citations.
//
// Thread-safety: process() runs concurrently; the node holds only immutable options.
#pragma once

#include <string>
#include <vector>

#include "graph/clock.h"
#include "graph/node.h"
#include "nodes/generation/chat_template.h"
#include "nodes/generation/cited_prompt.h"
#include "nodes/retrieval/node/retrieval_nodes.h"
#include "sluice/generation.pb.h"

namespace sluice::generation {

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

struct CitedPrompt {
  std::string text;
  std::vector<retrieval::Citation> citations;  // numbered from 1, in prompt order
};

// One request's prompt from its hits (nullptr: none) over `gen`, which must hold every hit's
// chunk. Throws std::out_of_range when a hit's chunk is not in `gen`.
CitedPrompt cited_prompt(const PromptNodeOptions& options, const RequestInput& input,
                         const retrieval::RetrievalHits* hits, const retrieval::IndexGeneration* gen);

class PromptNode final : public SyncNode {
 public:
  PromptNode(PromptNodeOptions options, Clock* clock) : options_(std::move(options)), clock_(clock) {}
  void process(Batch& batch) override;

 private:
  PromptNodeOptions options_;
  Clock* clock_;
};

}  // namespace sluice::generation
