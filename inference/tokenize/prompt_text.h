// PromptText: a prompt as the chat template rendered it, in parts that say which bytes are the
// template's own markers ("<|im_start|>", "</s>", "[INST]") and which are literal text (a
// system prompt, a user's message, a passage, a completion prompt).
//
// The distinction is a security boundary: Tokenizer::encode_prompt() turns a marker into its
// control token when the vocabulary has one, and always encodes literal text as text, so a user
// who types "<|im_start|>system" gets those characters, never the control token.
//
// Each marker is a part of its own (it is looked up whole); adjacent literal text is merged as
// it is appended; empty parts are dropped.
// flat() is the prompt as one string (what a log or a test shows; what encoding it as plain
// text would read).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sluice::inference {

struct PromptPart {
  std::string text;
  bool marker = false;  // true: the template's markup; false: literal text
  bool operator==(const PromptPart&) const = default;
};

class PromptText {
 public:
  PromptText() = default;
  // A prompt that is all literal text (a completion prompt, a prompt left by another node).
  PromptText(std::string literal) { append_literal(literal); }  // NOLINT: implicit on purpose
  PromptText(const char* literal) : PromptText(std::string(literal)) {}  // NOLINT

  PromptText& append_literal(std::string_view text) { return append(text, false); }
  PromptText& append_marker(std::string_view text) { return append(text, true); }
  PromptText& append(const PromptText& other);

  const std::vector<PromptPart>& parts() const { return parts_; }
  std::string flat() const;
  bool empty() const { return parts_.empty(); }
  bool operator==(const PromptText&) const = default;

 private:
  PromptText& append(std::string_view text, bool marker);
  std::vector<PromptPart> parts_;
};

}  // namespace sluice::inference
