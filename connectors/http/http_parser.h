// HttpRequestParser: our small incremental HTTP/1.1 request parser (request line, headers,
// Content-Length bodies).
//
// The connection feeds it whatever bytes have arrived; it answers "need more", "a complete
// request" (how many bytes it used, so pipelined requests that follow stay in the buffer) or
// "an error" with the HTTP status to answer before closing. Limits are checked as early as
// they can be: the header limit while the head is still arriving (431), the body limit from
// Content-Length before any body byte is read (413). Chunked request bodies are refused with
// 411 (every OpenAI client sends Content-Length). Line endings: CRLF, and bare LF is accepted.
//
// Thread-safety: none; one parser belongs to one connection on one event loop.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::http {

struct HttpHeader {
  std::string name;   // lower-cased when parsed
  std::string value;  // without surrounding whitespace
};

struct HttpRequest {
  std::string method;
  std::string target;        // as received, e.g. "/v1/completions?x=1"
  int version_minor = 1;     // HTTP/1.<minor>
  std::vector<HttpHeader> headers;
  std::string body;
  bool keep_alive = true;    // from the version and the Connection header

  // The target without its query string.
  std::string_view path() const;
  // First header with this lower-case name, or nullptr.
  const std::string* header(std::string_view lower_name) const;
};

struct ParseLimits {
  std::size_t max_header_bytes = 16 * 1024;   // request line + headers + blank line
  std::size_t max_body_bytes = 1024 * 1024;
};

class HttpRequestParser {
 public:
  enum class State { kNeedMore, kComplete, kError };

  explicit HttpRequestParser(ParseLimits limits) : limits_(limits) {}

  // Parses from the start of `data` (the unconsumed bytes of the connection). On kComplete,
  // `consumed()` bytes of `data` made the request and `take()` returns it; on kError,
  // `error_status()` and `error_message()` say what to answer. Call again with more data
  // after kNeedMore; the parser remembers how far it scanned.
  State parse(std::string_view data);

  // After kNeedMore: true once the head is parsed and its body is still to come.
  bool head_parsed() const { return head_parsed_; }
  // After head_parsed(): where the body starts in the data (the head's bytes).
  std::size_t head_bytes() const { return head_bytes_; }
  // The head asked for "Expect: 100-continue" (answer before the body arrives).
  bool expects_continue() const { return expects_continue_; }

  std::size_t consumed() const { return consumed_; }
  HttpRequest take();
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }

  // Ready for the next request on the same connection.
  void reset();

 private:
  State fail(int status, std::string message);
  State parse_head(std::string_view head);
  bool parse_request_line(std::string_view line);
  bool parse_header_line(std::string_view line);

  ParseLimits limits_;
  std::size_t scanned_ = 0;        // bytes already searched for the end of the head
  bool head_parsed_ = false;
  bool expects_continue_ = false;
  std::size_t head_bytes_ = 0;
  std::size_t content_length_ = 0;
  std::size_t consumed_ = 0;
  HttpRequest request_;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace sluice::http
