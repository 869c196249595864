#include "graph/utf8.h"

namespace sluice {

Utf8CodePoint utf8_decode_at(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return {c, 1};
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  char32_t value;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, value = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, value = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, value = c & 0x07;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return {};  // a continuation byte, C0/C1 (overlong 2-byte forms), F5..FF
  }
  if (s.size() - i < n) return {};
  for (std::size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return {};
    value = (value << 6) | (b & 0x3F);
  }
  return {value, n};
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t run = 0;  // start of the well-formed bytes not yet copied
  for (std::size_t i = 0; i < s.size();) {
    if (std::size_t n = utf8_sequence(s, i)) {
      i += n;
      continue;
    }
    out.append(s.substr(run, i - run));
    out += "\xEF\xBF\xBD";
    run = ++i;
  }
  out.append(s.substr(run));
  return out;
}

}  // namespace sluice
