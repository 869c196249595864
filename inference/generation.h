// The one vocabulary of a generation, shared by the single-sequence Generator
// (llama/generator.h) and the serving engine (engine/serving_engine.h): what is asked
// (GenerationRequest), how it ended (FinishReason) and what came back (GenerationResult).
// A field only the engine acts on (priority, tenant, prompt_tokens, grammar, on_finish) is ignored by
// the Generator; a result field only the engine measures (reused_tokens, preemptions,
// queue_seconds) stays 0 there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graph/sampling_params.h"
#include "inference/constrain/json_grammar.h"
#include "inference/tokenize/prompt_text.h"

namespace sluice::inference {

// kError: the engine's step failed with an exception (a bug, never the request's input); every
// sequence in the engine then ends with it and the engine goes on serving.
enum class FinishReason { kStop, kLength, kCancelled, kShutdown, kError };
// "stop", "length", "cancelled", "shutdown", "error" (the first two are OpenAI's finish_reason names).
const char* finish_reason_name(FinishReason reason);

struct GenerationResult {
  std::string text;
  int prompt_tokens = 0;      // including BOS
  int completion_tokens = 0;  // sampled tokens (an end-of-generation token is not counted)
  int reused_tokens = 0;      // engine: prompt positions served from the prefix cache (last admission)
  int preemptions = 0;        // engine: times this sequence was preempted and later resumed
  FinishReason finish = FinishReason::kStop;
  double queue_seconds = 0;   // engine: submit -> first admitted
  double ttft_seconds = 0;    // start -> first token (0 when none)
  double total_seconds = 0;   // start -> finish
  std::string error;          // kError: what failed
};

struct GenerationRequest {
  // Encoded with Tokenizer::encode_prompt: a chat template's markers may become control tokens,
  // literal text never does. A std::string converts to all-literal text.
  PromptText prompt;
  bool add_bos = true;
  // Engine: token ids to use instead of encoding `prompt` (benchmarks, token-array prompts).
  std::vector<int32_t> prompt_tokens;
  // Keep generating through end-of-generation tokens (benchmarks measure fixed lengths, as
  // llama-batched-bench does); the answer then ends at max_tokens or the context.
  bool ignore_eos = false;
  SamplingParams sampling;
  // Engine: constrained decoding (inference/constrain/token_mask.h): every token keeps the
  // answer inside this JSON grammar, the answer closes before max_tokens, and generation ends
  // when the document is complete. Null: free text.
  std::shared_ptr<const constrain::JsonGrammar> grammar;
  int max_tokens = 256;             // completion tokens at most
  std::vector<std::string> stop;    // stop strings, excluded from the text
  int priority = 0;                 // engine: class index, 0 most urgent
  std::string tenant;               // engine: scopes prefix reuse; tenants never share KV
  std::string request_id;           // engine: names the request in logs (the pipeline's external id)
  // Polled before every token (engine: every step): true stops the sequence as cancelled.
  std::function<bool()> should_stop;
  // Text as it is decoded (never a split UTF-8 character); on the engine's thread for the engine.
  std::function<void(std::string_view)> on_text;
  // Engine: called exactly once with the result, on the engine's thread.
  std::function<void(const GenerationResult&)> on_finish;
};

}  // namespace sluice::inference
