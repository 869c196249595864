#include "graph/embedding_result.h"

#include <charconv>

#include "graph/base64.h"

namespace sluice {

std::string embedding_event_json(const EmbeddingResult& result, bool base64) {
  const size_t dim = size_t(result.dimension);
  const size_t n = dim == 0 ? 0 : result.vectors.size() / dim;
  std::string body;
  // Shortest float text is at most 15 characters ("-1.2345678e-05") and usually 11-13, plus a
  // comma: reserving 12 a value made a 256 x 512 answer outgrow its buffer and double it.
  body.reserve(64 + n * (base64 ? dim * 16 / 3 + 64 : dim * 16 + 64));
  body += "{\"data\":[";
  char buf[32];
  for (size_t i = 0; i < n; ++i) {
    if (i) body += ',';
    body += "{\"object\":\"embedding\",\"index\":";
    body += std::to_string(i);
    body += ",\"embedding\":";
    const float* row = result.vectors.data() + i * dim;
    if (base64) {
      body += '"';
      static_assert(sizeof(float) == 4);
      append_base64(body, std::string_view(reinterpret_cast<const char*>(row), dim * 4));  // x86-64: little-endian
      body += '"';
    } else {
      body += '[';
      for (size_t k = 0; k < dim; ++k) {
        if (k) body += ',';
        const auto r = std::to_chars(buf, buf + sizeof buf, row[k]);  // shortest text that reads back exactly
        body.append(buf, r.ptr);
      }
      body += ']';
    }
    body += '}';
  }
  body += "],\"usage\":{\"prompt_tokens\":" + std::to_string(result.prompt_tokens) +
          ",\"total_tokens\":" + std::to_string(result.prompt_tokens) + "}}";
  return body;
}

}  // namespace sluice
