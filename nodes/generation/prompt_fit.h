// Fitting a cited prompt to the model's context in tokens, so that the prompt plus the answer's
// max_tokens fit the positions a sequence has.
//
// The rule (docs/generation.md, "Fitting the prompt to the context"):
//   1. the whole draft (every passage, each within max_passage_chars) when it fits `budget`;
//   2. else whole passages are dropped, last (lowest ranked) first, until the rest fits;
//   3. then the first dropped passage comes back cut at its tail (at a word, marked "...") to
//      the longest cut that still fits, when at least kMinCutPassageChars of it fit;
//   4. the system part, the chat's earlier turns and the question are never cut: when they
//      alone exceed the budget, the prompt keeps no passage (the `no_passages` text stands in)
//      and the engine's own rule applies (a prompt longer than the context is refused; one
//      that fits gets the positions left, finishing with "length").
// Token counts come from the model's tokenizer on the rendered prompt (BOS included), so
// markers that are control tokens count as one token each.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "inference/tokenize/tokenizer.h"
#include "nodes/generation/prompt_node.h"

namespace sluice::generation {

// A cut passage shorter than this (code points) is left out: a few words cannot support a
// citation and still cost one.
inline constexpr std::size_t kMinCutPassageChars = 32;

struct FittedPrompt {
  std::vector<int32_t> tokens;  // BOS first
  std::size_t passages = 0;     // passages kept, numbered 1..passages (the last may be cut)
  std::size_t last_passage_chars = 0;  // the cut (code points) of the last passage; 0: none
};

// `draft` fitted to `budget` tokens (the context minus the answer's max_tokens) by the rule above.
FittedPrompt fit_prompt(const CitedPromptDraft& draft, const inference::Tokenizer& tokenizer, int64_t budget);

}  // namespace sluice::generation
