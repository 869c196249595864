// Token counts estimated without a tokenizer: UTF-8 bytes / chars_per_token, rounded up. Used
// where no model's tokenizer is at hand: the router's token budget at admission, and the usage
// of answers no model wrote (the extractive `answer` node), so usage, per-key token budgets
// and `sluice bench` count tokens rather than pieces. 4 bytes per token is the usual figure
// for English with BPE vocabularies (OpenAI's own rule of thumb); it is an estimate, documented
// as one (docs/operations.md, "Usage").
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "graph/request.h"

namespace sluice {

inline constexpr double kDefaultCharsPerToken = 4.0;

// ceil(bytes / chars_per_token); 0 for an empty text.
std::int64_t estimate_tokens(std::string_view text, double chars_per_token = kDefaultCharsPerToken);
// The prompt's and chat messages' text together; at least 1.
std::int64_t estimate_prompt_tokens(const RequestInput& input, double chars_per_token = kDefaultCharsPerToken);

}  // namespace sluice
