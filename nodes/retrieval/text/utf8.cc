#include "nodes/retrieval/text/utf8.h"

namespace sluice::retrieval {

char32_t utf8_decode(std::string_view s, std::size_t pos, std::size_t& len) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) {
    len = 1;
    return b0;
  }
  int extra = 0;
  char32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    extra = 1;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    extra = 2;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    extra = 3;
    cp = b0 & 0x07;
  } else {
    len = 1;
    return 0xFFFD;
  }
  if (pos + extra >= s.size()) {
    len = 1;
    return 0xFFFD;
  }
  for (int i = 1; i <= extra; ++i) {
    const auto b = static_cast<unsigned char>(s[pos + i]);
    if ((b & 0xC0) != 0x80) {
      len = 1;
      return 0xFFFD;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  len = static_cast<std::size_t>(extra) + 1;
  return cp;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::size_t count_words(std::string_view text) {
  std::size_t n = 0;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t len = 1;
    const bool w = is_word_char(utf8_decode(text, i, len));
    n += w && !in_word;
    in_word = w;
    i += len;
  }
  return n;
}

char32_t unicode_lower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;                 // Latin-1
  if (c >= 0x100 && c <= 0x137) return c | 1;                              // Latin Ext-A, pairs
  if (c >= 0x139 && c <= 0x148) return (c & 1) ? c + 1 : c;
  if (c >= 0x14A && c <= 0x177) return c | 1;
  if (c == 0x178) return 0xFF;
  if (c >= 0x179 && c <= 0x17E) return (c & 1) ? c + 1 : c;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;               // Greek
  if (c >= 0x410 && c <= 0x42F) return c + 32;                             // Cyrillic
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

bool is_word_char(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  if (c < 0xC0 || c == 0xD7 || c == 0xF7) return false;  // Latin-1 punctuation and symbols
  if (c >= 0x2000 && c <= 0x2BFF) return false;            // punctuation, arrows, maths, shapes
  if (c >= 0x3000 && c <= 0x303F) return false;            // CJK punctuation
  if (c >= 0xFE30 && c <= 0xFE4F) return false;            // CJK compatibility forms
  if (c >= 0xFF00 && c <= 0xFF0F) return false;            // full-width punctuation
  if (c >= 0xFF1A && c <= 0xFF20) return false;
  if (c == 0xFFFD || c == 0xFEFF) return false;            // replacement char, BOM
  return true;
}

}  // namespace sluice::retrieval
