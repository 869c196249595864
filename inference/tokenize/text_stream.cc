#include "inference/tokenize/text_stream.h"

#include <algorithm>

namespace sluice::inference {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Expected length of a character from its lead byte; 0 for bytes that cannot start one.
size_t lead_len(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}
bool is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

TextStream::TextStream(std::vector<std::string> stop, Callback on_text) : on_text_(std::move(on_text)) {
  for (auto& s : stop)
    if (!s.empty()) stop_.push_back(std::move(s));
}

void TextStream::take_complete_chars(bool flush) {
  const std::string& b = pending_bytes_;
  size_t i = 0;
  while (i < b.size()) {
    const auto c = static_cast<unsigned char>(b[i]);
    const size_t len = lead_len(c);
    if (len == 0) {
      valid_ += kReplacement;
      ++i;
      continue;
    }
    size_t have = 1;
    while (have < len && i + have < b.size() && is_cont(static_cast<unsigned char>(b[i + have]))) ++have;
    if (have == len) {
      valid_.append(b, i, len);
      i += len;
    } else if (i + have == b.size() && !flush) {
      break;  // the rest of this character has not arrived yet
    } else {
      valid_ += kReplacement;  // malformed: replace the lead byte, resume after it
      ++i;
    }
  }
  pending_bytes_.erase(0, i);
}

void TextStream::emit_safe() {
  // Emitted text never ends with a stop-string prefix, so any match lies wholly in valid_.
  size_t cut = std::string::npos;
  for (const auto& s : stop_) cut = std::min(cut, valid_.find(s));
  if (cut != std::string::npos) {
    valid_.resize(cut);
    stopped_ = true;
  }
  size_t hold = 0;
  if (!stopped_) {
    // Hold back the longest suffix that is a proper prefix of some stop string.
    for (const auto& s : stop_)
      for (size_t k = std::min(s.size() - 1, valid_.size()); k > hold; --k)
        if (valid_.compare(valid_.size() - k, k, s, 0, k) == 0) {
          hold = k;
          break;
        }
  }
  const size_t n = valid_.size() - hold;
  if (n > 0) {
    text_.append(valid_, 0, n);
    if (on_text_) on_text_(std::string_view(valid_).substr(0, n));
    valid_.erase(0, n);
  }
}

bool TextStream::push(std::string_view bytes) {
  if (stopped_) return true;
  pending_bytes_.append(bytes);
  take_complete_chars(false);
  emit_safe();
  return stopped_;
}

void TextStream::finish() {
  if (stopped_) return;
  take_complete_chars(true);
  emit_safe();
  if (!stopped_ && !valid_.empty()) {  // a held-back prefix that never became a stop string
    text_ += valid_;
    if (on_text_) on_text_(valid_);
    valid_.clear();
  }
}

}  // namespace sluice::inference
