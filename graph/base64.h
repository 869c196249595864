// base64: RFC 4648 standard alphabet with '=' padding, the one encoder of the project's wire
// formats (Kafka dead letters' original_base64, OpenAI embeddings' encoding_format "base64").
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

namespace sluice {

// Appends the encoding of `bytes` to `out`.
void append_base64(std::string& out, std::string_view bytes);
inline std::string base64(std::string_view bytes) {
  std::string out;
  append_base64(out, bytes);
  return out;
}

}  // namespace sluice
