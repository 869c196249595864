#include "inference/tokenize/prompt_text.h"

namespace sluice::inference {

PromptText& PromptText::append(std::string_view text, bool marker) {
  if (text.empty()) return *this;
  if (!marker && !parts_.empty() && !parts_.back().marker) {
    parts_.back().text.append(text);
  } else {
    parts_.push_back({std::string(text), marker});
  }
  return *this;
}

PromptText& PromptText::append(const PromptText& other) {
  for (const PromptPart& p : other.parts_) append(p.text, p.marker);
  return *this;
}

std::string PromptText::flat() const {
  std::string out;
  for (const PromptPart& p : parts_) out += p.text;
  return out;
}

}  // namespace sluice::inference
