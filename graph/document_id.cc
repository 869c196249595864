#include "graph/document_id.h"

#include <cstdint>
#include <cstdio>

namespace sluice {
namespace {

struct CodePoint {
  char32_t value = 0;
  std::size_t length = 0;  // 0: the bytes at the position are not well-formed UTF-8
};

// The well-formed UTF-8 sequence starting at s[i] (RFC 3629 table 3-7): the range of the
// second byte depends on the first, which is what excludes overlong forms (E0 80..9F, F0
// 80..8F), surrogates (ED A0..BF) and code points past U+10FFFF (F4 90.., F5..FF).
CodePoint decode(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return {c, 1};
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
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

bool is_control(char32_t cp) { return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F); }

std::string hex(unsigned value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*X", digits, value);
  return buf;
}

}  // namespace

std::optional<std::string> document_id_problem(std::string_view id) {
  if (id.empty()) return "it is empty";
  if (id.size() > kMaxDocumentIdBytes) {
    return "it is " + std::to_string(id.size()) + " bytes, over the limit of " + std::to_string(kMaxDocumentIdBytes);
  }
  for (std::size_t i = 0; i < id.size();) {
    const CodePoint cp = decode(id, i);
    if (cp.length == 0) {
      return "it is not valid UTF-8 (byte 0x" + hex(static_cast<unsigned char>(id[i]), 2) + " at offset " + std::to_string(i) + ")";
    }
    if (is_control(cp.value)) {
      return "it contains the control character U+" + hex(cp.value, 4) + " at byte " + std::to_string(i);
    }
    i += cp.length;
  }
  if (id.front() == '/') return "it starts with '/'; an id is a relative name, not an absolute path";
  for (std::size_t begin = 0; begin <= id.size();) {
    std::size_t end = id.find('/', begin);
    if (end == std::string_view::npos) end = id.size();
    const std::string_view segment = id.substr(begin, end - begin);
    if (segment == "..") return "it has a '..' path segment, which steps out of the directory it is relative to";
    if (segment == ".") return "it has a '.' path segment; write the id without it";
    begin = end + 1;
  }
  return std::nullopt;
}

std::string quote_document_id(std::string_view id) {
  constexpr std::size_t kShown = 64;
  std::string out = "\"";
  std::size_t i = 0;
  while (i < id.size() && i < kShown) {
    const CodePoint cp = decode(id, i);
    if (cp.length == 0) {
      out += "\\x" + hex(static_cast<unsigned char>(id[i]), 2);
      ++i;
      continue;
    }
    if (cp.value == '"' || cp.value == '\\') {
      out += '\\';
      out += static_cast<char>(cp.value);
    } else if (is_control(cp.value)) {
      out += "\\u" + hex(cp.value, 4);
    } else {
      out.append(id.substr(i, cp.length));  // a whole sequence: a cut never splits a character
    }
    i += cp.length;
  }
  if (i < id.size()) return out + "...\" (" + std::to_string(id.size()) + " bytes)";
  return out + "\"";
}

}  // namespace sluice
