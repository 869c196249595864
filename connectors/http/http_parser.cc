#include "connectors/http/http_parser.h"

#include <cctype>
#include <cstring>

namespace sluice::http {
namespace {

bool is_tchar(unsigned char c) {
  if (std::isalnum(c)) return true;
  return c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// Calls fn(token) for each comma-separated element of a list header value.
template <class Fn>
void for_each_list_item(std::string_view value, Fn fn) {
  while (!value.empty()) {
    std::size_t comma = value.find(',');
    fn(trim_ows(value.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

}  // namespace

std::string_view HttpRequest::path() const {
  std::string_view t = target;
  std::size_t q = t.find('?');
  return q == std::string_view::npos ? t : t.substr(0, q);
}

const std::string* HttpRequest::header(std::string_view lower_name) const {
  for (const auto& h : headers) {
    if (h.name == lower_name) return &h.value;
  }
  return nullptr;
}

HttpRequestParser::State HttpRequestParser::fail(int status, std::string message) {
  error_status_ = status;
  error_message_ = std::move(message);
  return State::kError;
}

void HttpRequestParser::reset() {
  scanned_ = 0;
  head_parsed_ = false;
  expects_continue_ = false;
  head_bytes_ = 0;
  content_length_ = 0;
  consumed_ = 0;
  request_ = HttpRequest{};
  error_status_ = 0;
  error_message_.clear();
}

HttpRequest HttpRequestParser::take() { return std::move(request_); }

HttpRequestParser::State HttpRequestParser::parse(std::string_view data) {
  if (error_status_ != 0) return State::kError;
  if (!head_parsed_) {
    // Robustness (RFC 9112 2.2): empty lines before a request line are ignored.
    std::size_t start = 0;
    while (start < data.size() && (data[start] == '\r' || data[start] == '\n')) ++start;
    std::size_t i = scanned_ > start ? scanned_ : start;
    std::size_t end = 0;
    while (true) {
      std::size_t nl = data.find('\n', i);
      if (nl == std::string_view::npos) {
        scanned_ = data.size();
        break;
      }
      if (nl + 1 >= data.size()) { scanned_ = nl; break; }
      if (data[nl + 1] == '\n') { end = nl + 2; break; }
      if (data[nl + 1] == '\r') {
        if (nl + 2 >= data.size()) { scanned_ = nl; break; }
        if (data[nl + 2] == '\n') { end = nl + 3; break; }
      }
      i = nl + 1;
    }
    if (end == 0) {
      if (data.size() > limits_.max_header_bytes) {
        return fail(431, "request line and headers exceed max_header_bytes (" +
                             std::to_string(limits_.max_header_bytes) + ")");
      }
      return State::kNeedMore;
    }
    if (end > limits_.max_header_bytes) {
      return fail(431, "request line and headers are " + std::to_string(end) +
                           " bytes, more than max_header_bytes (" + std::to_string(limits_.max_header_bytes) + ")");
    }
    State s = parse_head(data.substr(start, end - start));
    if (s == State::kError) return s;
    head_bytes_ = end;
    head_parsed_ = true;
  }
  if (data.size() - head_bytes_ < content_length_) return State::kNeedMore;
  request_.body.assign(data.substr(head_bytes_, content_length_));
  consumed_ = head_bytes_ + content_length_;
  return State::kComplete;
}

HttpRequestParser::State HttpRequestParser::parse_head(std::string_view head) {
  bool first = true;
  while (!head.empty()) {
    std::size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (first) {
      if (!parse_request_line(line)) return State::kError;
      first = false;
      continue;
    }
    if (line.empty()) break;  // the blank line ending the head
    if (!parse_header_line(line)) return State::kError;
  }

  // Framing and connection semantics.
  bool have_length = false;
  bool close = request_.version_minor == 0;
  for (const auto& h : request_.headers) {
    if (h.name == "connection") {
      for_each_list_item(h.value, [&](std::string_view item) {
        if (iequals(item, "close")) close = true;
        if (iequals(item, "keep-alive")) close = false;
      });
    } else if (h.name == "transfer-encoding") {
      bool chunked = false;
      for_each_list_item(h.value, [&](std::string_view item) { chunked = chunked || iequals(item, "chunked"); });
      if (chunked) return fail(411, "chunked request bodies are not supported; send Content-Length");
      return fail(501, "Transfer-Encoding '" + h.value + "' is not supported");
    } else if (h.name == "content-length") {
      const std::string& v = h.value;
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) {
        return fail(400, "Content-Length '" + v + "' is not a non-negative integer");
      }
      // More digits than fit certainly exceeds any body limit.
      std::size_t n = v.size() > 15 ? static_cast<std::size_t>(-1) : std::stoull(v);
      if (have_length && n != content_length_) return fail(400, "conflicting Content-Length headers");
      have_length = true;
      content_length_ = n;
    } else if (h.name == "expect") {
      if (!iequals(h.value, "100-continue")) return fail(417, "unsupported expectation '" + h.value + "'");
      expects_continue_ = true;
    }
  }
  request_.keep_alive = !close;
  if (content_length_ > limits_.max_body_bytes) {
    return fail(413, "request body of " + (content_length_ == static_cast<std::size_t>(-1)
                                               ? std::string("too many")
                                               : std::to_string(content_length_)) +
                         " bytes exceeds max_body_bytes (" + std::to_string(limits_.max_body_bytes) + ")");
  }
  if (content_length_ == 0) expects_continue_ = false;
  return State::kComplete;
}

bool HttpRequestParser::parse_request_line(std::string_view line) {
  std::size_t sp1 = line.find(' ');
  std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    fail(400, "malformed request line: expected 'METHOD target HTTP/1.x'");
    return false;
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (method.empty()) return fail(400, "malformed request line: empty method"), false;
  for (char c : method) {
    if (!is_tchar(static_cast<unsigned char>(c))) return fail(400, "malformed request line: bad character in method"), false;
  }
  if (target.empty()) return fail(400, "malformed request line: empty target"), false;
  for (char c : target) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return fail(400, "malformed request line: bad character in target"), false;
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !std::isdigit(static_cast<unsigned char>(version[5])) ||
      version[6] != '.' || !std::isdigit(static_cast<unsigned char>(version[7]))) {
    return fail(400, "malformed request line: bad HTTP version"), false;
  }
  if (version[5] != '1') return fail(505, "only HTTP/1.0 and HTTP/1.1 are supported"), false;
  request_.method.assign(method);
  request_.target.assign(target);
  request_.version_minor = version[7] - '0';
  return true;
}

bool HttpRequestParser::parse_header_line(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t') {
    return fail(400, "obsolete header line folding is not allowed"), false;
  }
  std::size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    return fail(400, "malformed header line (no 'name: value')"), false;
  }
  std::string_view name = line.substr(0, colon);
  for (char c : name) {
    if (!is_tchar(static_cast<unsigned char>(c))) {
      return fail(400, "malformed header name '" + std::string(name) + "'"), false;
    }
  }
  std::string_view value = trim_ows(line.substr(colon + 1));
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\t') || u == 0x7f) {
      return fail(400, "control character in header '" + std::string(name) + "'"), false;
    }
  }
  HttpHeader h;
  h.name.resize(name.size());
  for (std::size_t i = 0; i < name.size(); ++i) h.name[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
  h.value.assign(value);
  request_.headers.push_back(std::move(h));
  return true;
}

}  // namespace sluice::http
