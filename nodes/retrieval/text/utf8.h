// UTF-8 decoding and the character classes the analyzer needs.
//
// Deliberately small and locale-independent (the C locale's towlower would make results depend
// on the environment): lowercase folding covers Latin-1, Latin Extended-A, Greek and Cyrillic;
// word characters are ASCII letters and digits plus every code point from U+00C0 up, minus the
// punctuation and symbol blocks (general punctuation, arrows, maths, box drawing, CJK
// punctuation, full-width ASCII punctuation). Invalid bytes decode as U+FFFD and count as
// separators, so malformed input never stops analysis. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sluice::retrieval {

// Decodes the code point starting at text[pos]; sets `len` to the bytes consumed (>= 1).
char32_t utf8_decode(std::string_view text, std::size_t pos, std::size_t& len);
void utf8_append(std::string& out, char32_t cp);

char32_t unicode_lower(char32_t cp);
bool is_word_char(char32_t cp);

// Runs of word characters: the chunker's and the LSA embedder's token count.
std::size_t count_words(std::string_view text);

}  // namespace sluice::retrieval
