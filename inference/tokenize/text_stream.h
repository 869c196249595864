// TextStream: turns the byte pieces of decoded tokens into text events that
//  - never split a UTF-8 character (a byte-fallback token may carry 1 byte of a 4-byte
//    character; the bytes wait until the character is complete),
//  - are valid UTF-8 (a malformed sequence becomes U+FFFD),
//  - never include a stop string or any part of one (text that could be the start of a stop
//    string is held back until it is clear it is not).
// One per generation; not thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::inference {

class TextStream {
 public:
  using Callback = std::function<void(std::string_view)>;

  TextStream(std::vector<std::string> stop, Callback on_text);

  // Appends a token's bytes. Returns true when a stop string has appeared: the text before it
  // has been emitted and nothing more will be.
  bool push(std::string_view bytes);
  // End of generation: emits what was held back (an incomplete character becomes U+FFFD).
  void finish();

  const std::string& text() const { return text_; }  // everything emitted so far
  bool stopped() const { return stopped_; }

 private:
  void take_complete_chars(bool flush);
  void emit_safe();

  std::vector<std::string> stop_;
  Callback on_text_;
  std::string pending_bytes_;  // an incomplete UTF-8 character
  std::string valid_;          // decoded text not yet emitted (a possible stop-string start)
  std::string text_;
  bool stopped_ = false;
};

}  // namespace sluice::inference
