// Well-formed UTF-8 (RFC 3629, table 3-7): the range of a sequence's second byte depends on its
// first, which is what excludes overlong forms (C0, C1, E0 80..9F, F0 80..8F), surrogates
// (ED A0..BF) and code points past U+10FFFF (F4 90.., F5..FF). One definition for what Sluice
// writes into JSON and protobuf strings (connectors) and what a document id may hold
// (graph/document_id.h). The retrieval analyzer's decoder (nodes/retrieval/text/utf8.h) is
// lenient by design and separate.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sluice {

struct Utf8CodePoint {
  char32_t value = 0;
  std::size_t length = 0;  // 0: the bytes at the position are not one well-formed sequence
};

// The sequence starting at s[i] (i < s.size()).
Utf8CodePoint utf8_decode_at(std::string_view s, std::size_t i);

// Its length in bytes, 0 when the bytes at s[i] are not a well-formed sequence.
inline std::size_t utf8_sequence(std::string_view s, std::size_t i) { return utf8_decode_at(s, i).length; }

// `s` with each byte that is not part of a well-formed sequence replaced by U+FFFD, so that JSON
// can carry it and protobuf string fields accept it.
std::string valid_utf8(std::string_view s);

}  // namespace sluice
