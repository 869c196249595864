// HttpResponse and its wire form: status line, headers, and the chunk framing of streamed
// bodies. Serialisation happens on whichever thread produces the response (usually an engine
// thread), so the event loop only copies bytes.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/http/http_parser.h"

namespace sluice::http {

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<HttpHeader> headers;  // extra headers, names as they should appear
  std::string body;
};

// "OK", "Not Found", ...; "Unknown" for codes we never send.
std::string_view reason_phrase(int status);

// The status line and headers, ending with the blank line. `content_length` nullopt means
// a chunked body follows. `close` adds "Connection: close".
std::string serialize_head(int status, std::string_view content_type, const std::vector<HttpHeader>& headers,
                           std::optional<std::size_t> content_length, bool close);

// A complete response with a Content-Length body.
std::string serialize_response(const HttpResponse& response, bool close);
// The same, reusing the body's buffer (the head is inserted before it): a large body is not
// copied, and with spare capacity not even reallocated.
std::string serialize_response(HttpResponse&& response, bool close);

// Appends `data` as one chunk of a chunked body; empty data appends nothing (an empty chunk
// would end the body).
void append_chunk(std::string& out, std::string_view data);
// The last chunk that ends a chunked body.
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace sluice::http
