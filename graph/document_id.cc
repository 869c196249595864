#include "graph/document_id.h"

#include <cstdint>
#include <cstdio>

#include "graph/utf8.h"

namespace sluice {
namespace {

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
    const Utf8CodePoint cp = utf8_decode_at(id, i);
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
    const Utf8CodePoint cp = utf8_decode_at(id, i);
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
