// Cited prompt: retrieved passages numbered [1]..[n] and the question, laid out so that a
// prefix cache can reuse the model's work across requests.
//
// Layout, fixed so the first bytes are the same for every request:
//   1. the configured system text (never a timestamp, request id or passage), then the
//      client's own system messages, as the conversation's system turn;
//   2. earlier turns of a chat, unchanged;
//   3. the last user turn, replaced by: each passage through `passage_template` in rank order,
//      numbered from 1 ({{n}}, {{doc_id}}, {{title}}, {{text}}), or `no_passages` when there
//      are none; then `question_template` ({{question}}) last.
// A chat template (chat_template.h) then renders that conversation into text.
//
// Templates use the {{name}} placeholders of graph/placeholders.h (shared with the `template`
// node kind); single braces are plain text. An unknown or unclosed placeholder is a
// configuration error naming the field.
// Passages are plain views so the layout does not depend on where they came from.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "graph/request.h"

namespace sluice::generation {

struct Passage {
  std::string_view doc_id;
  std::string_view title;
  std::string_view text;
};

struct CitedPromptOptions {
  std::string system;
  std::string passage_template;
  std::string question_template;
  std::string no_passages;
  std::size_t max_passages = 4;        // passages beyond it are left out (and not cited)
  std::size_t max_passage_chars = 0;   // characters (code points) of a passage's text; 0: whole
};

// Checks the templates' placeholders; throws std::invalid_argument "<field>: <problem>" with
// the fields named passage_template, question_template and no_passages.
void check_cited_prompt_options(const CitedPromptOptions& options);

// How many of `available` passages the prompt uses.
std::size_t passages_used(const CitedPromptOptions& options, std::size_t available);

// `text` cut to at most `max_chars` code points (0: unchanged), at the last white space in the
// second half of the allowance when there is one, and marked with "..." when cut. Never splits
// a UTF-8 character.
std::string cut_passage(std::string_view text, std::size_t max_chars);

// Part 3 of the layout: the passages (passages_used() of them, numbered from 1) then the
// question. `last_passage_chars` (0: no extra limit) further cuts the last passage, which is how
// a prompt is fitted to a token budget (prompt_fit.h).
std::string passages_and_question(const CitedPromptOptions& options, const std::vector<Passage>& passages,
                                  std::string_view question, std::size_t last_passage_chars = 0);

// Parts 1-3 as chat messages for `input` (a chat's messages, or a completion's prompt as the
// one user turn); `user_turn` replaces the last user message (or is appended when there is none).
std::vector<ChatMessage> cited_conversation(const CitedPromptOptions& options, const RequestInput& input,
                                            std::string user_turn);

}  // namespace sluice::generation
