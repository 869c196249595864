#include "apps/loadgen/http_response.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace sluice::loadgen {

int status_of(std::string_view in) {
  if (in.size() < 12 || in.substr(0, 5) != "HTTP/") return 0;
  return std::atoi(std::string(in.substr(9, 3)).c_str());
}

std::string header_value(std::string_view in, std::string_view lower_name) {
  const std::string_view head = in.substr(0, in.find("\r\n\r\n"));
  std::string lower(head);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string key = "\r\n" + std::string(lower_name) + ":";
  const std::size_t at = lower.find(key);
  if (at == std::string::npos) return {};
  std::size_t start = at + key.size();
  const std::size_t end = std::min(head.find("\r\n", start), head.size());
  while (start < end && head[start] == ' ') ++start;
  return std::string(head.substr(start, end - start));
}

std::string response_body(std::string_view in) {
  const std::size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string_view::npos) return {};
  const std::string_view body = in.substr(head_end + 4);
  std::string te = header_value(in, "transfer-encoding");
  std::transform(te.begin(), te.end(), te.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (te.find("chunked") == std::string::npos) return std::string(body);
  std::string out;
  std::size_t at = 0;
  while (at < body.size()) {
    const std::size_t eol = body.find("\r\n", at);
    if (eol == std::string_view::npos) break;
    const std::size_t size = std::strtoul(std::string(body.substr(at, eol - at)).c_str(), nullptr, 16);
    if (size == 0 || eol + 2 + size > body.size()) break;
    out.append(body.substr(eol + 2, size));
    at = eol + 2 + size + 2;
  }
  return out;
}

}  // namespace sluice::loadgen
