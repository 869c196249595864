// libFuzzer target for HttpRequestParser (connectors/http/http_parser.h), run by scripts/fuzz.
// The input is a connection's bytes after a 3-byte prefix: byte 0 picks the limits (header
// and body bytes), bytes 1-2 a split point. Any input must give requests, "need more" or an
// HTTP error, never a crash, a hang or an out-of-bounds read (ASan+UBSan), and:
//  - fed in two pieces, split at the chosen point, the parser answers what it answers when fed
//    everything at once (incremental parsing keeps its place);
//  - after each complete request the same parser is reset() and parses the rest (keep-alive,
//    pipelining), answering as a fresh parser would;
//  - a complete request is well formed (method, target, lower-case header names, the body
//    Content-Length says); an error is a 4xx/5xx;
//  - what the server makes of the bytes is valid JSON: the error body of a protocol error
//    (error_body, as HttpSource answers it) and of errors quoting the method, path and header
//    values (404, X-Priority, X-Request-Timeout), and X-Request-Timeout / traceparent values
//    are read without surprises (parse_timeout_header gives a positive duration or nothing).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "connectors/http/http_parser.h"
#include "connectors/http/openai_request.h"
#include "connectors/http/openai_response.h"
#include "tests/support/fuzz_check.h"

namespace {

using namespace sluice::http;
using sluice::fuzzing::must_parse;
using State = HttpRequestParser::State;

struct Outcome {
  State state = State::kNeedMore;
  std::size_t consumed = 0;
  int status = 0;
  std::string message;
  HttpRequest request;
};

bool same_request(const HttpRequest& a, const HttpRequest& b) {
  if (a.method != b.method || a.target != b.target || a.version_minor != b.version_minor || a.body != b.body ||
      a.keep_alive != b.keep_alive || a.headers.size() != b.headers.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.headers.size(); ++i) {
    if (a.headers[i].name != b.headers[i].name || a.headers[i].value != b.headers[i].value) return false;
  }
  return true;
}

Outcome finish(HttpRequestParser& p, State s) {
  Outcome o;
  o.state = s;
  if (s == State::kComplete) {
    o.consumed = p.consumed();
    o.request = p.take();
  } else if (s == State::kError) {
    o.status = p.error_status();
    o.message = p.error_message();
  }
  return o;
}

// A fresh parser fed `data` in two pieces: [0, split) then everything.
Outcome parse_split(const ParseLimits& limits, std::string_view data, std::size_t split) {
  HttpRequestParser p(limits);
  if (split > 0 && split < data.size()) {
    State s = p.parse(data.substr(0, split));
    if (s != State::kNeedMore) return finish(p, s);
  }
  return finish(p, p.parse(data));
}

void check_error_json(const ApiError& e) {
  nlohmann::json j = must_parse(error_body(e), "error body");
  FUZZ_CHECK(j["error"]["message"].is_string());
}

bool is_lower_token(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (c <= 0x20 || c >= 0x7f || (c >= 'A' && c <= 'Z') || c == ':') return false;
  }
  return true;
}

void check_request(const HttpRequest& r, std::size_t consumed, std::size_t available, const ParseLimits& limits) {
  FUZZ_CHECK(consumed > 0 && consumed <= available);
  FUZZ_CHECK(!r.method.empty() && !r.target.empty());
  FUZZ_CHECK(r.version_minor >= 0 && r.version_minor <= 9);  // HTTP/1.<digit>
  FUZZ_CHECK(r.body.size() <= limits.max_body_bytes);
  for (unsigned char c : r.target) FUZZ_CHECK(c > 0x20 && c != 0x7f);
  for (const HttpHeader& h : r.headers) {
    FUZZ_CHECK(is_lower_token(h.name));
    for (unsigned char c : h.value) FUZZ_CHECK(c != '\r' && c != '\n' && c != 0);
  }
  const std::string* length = r.header("content-length");
  FUZZ_CHECK(length ? std::stoull(*length) == r.body.size() : r.body.empty());

  // What HttpSource answers about this request quotes it; the JSON must stay valid.
  check_error_json(ApiError{404, "no route for " + r.method + " " + std::string(r.path()), "invalid_request_error", "",
                            "not_found"});
  for (const HttpHeader& h : r.headers) {
    check_error_json(ApiError{400, "X-Priority '" + h.value + "' is not a priority class", "invalid_request_error",
                              "X-Priority", "invalid_value"});
    if (auto t = parse_timeout_header(h.value)) FUZZ_CHECK(*t > 0 && *t <= 86400LL * 1'000'000'000);
    (void)valid_traceparent(h.value);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  static constexpr std::size_t kHeaderLimits[] = {16 * 1024, 64, 256, 1024};
  static constexpr std::size_t kBodyLimits[] = {1024 * 1024, 0, 16, 4096};
  const ParseLimits limits{kHeaderLimits[data[0] & 3], kBodyLimits[(data[0] >> 2) & 3]};
  const std::size_t split_at = static_cast<std::size_t>(data[1]) << 8 | data[2];
  std::string_view bytes(reinterpret_cast<const char*>(data) + 3, size - 3);

  HttpRequestParser connection(limits);  // one parser for the whole connection, reset between requests
  std::size_t offset = 0;
  for (int request = 0; request < 64; ++request) {
    std::string_view rest = bytes.substr(offset);
    // The split point is where the input says, counted from this request's start.
    const std::size_t split = rest.empty() ? 0 : split_at % (rest.size() + 1);
    Outcome whole = finish(connection, connection.parse(rest));
    Outcome pieces = parse_split(limits, rest, split);
    FUZZ_CHECK(whole.state == pieces.state);
    FUZZ_CHECK(whole.status == pieces.status);
    if (whole.state == State::kNeedMore) break;
    if (whole.state == State::kError) {
      FUZZ_CHECK(whole.status >= 400 && whole.status < 600 && !whole.message.empty());
      ApiError e;  // as HttpSource's protocol_error
      e.status = whole.status;
      e.message = whole.message;
      e.code = "bad_request";
      check_error_json(e);
      break;
    }
    FUZZ_CHECK(whole.consumed == pieces.consumed);
    FUZZ_CHECK(same_request(whole.request, pieces.request));
    check_request(whole.request, whole.consumed, rest.size(), limits);
    offset += whole.consumed;
    connection.reset();
  }
  return 0;
}
