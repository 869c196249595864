#include "connectors/http/http_response.h"

#include <cstdio>
#include <utility>

namespace sluice::http {

std::string_view reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
  }
  return "Unknown";
}

std::string serialize_head(int status, std::string_view content_type, const std::vector<HttpHeader>& headers,
                           std::optional<std::size_t> content_length, bool close) {
  std::string out;
  out.reserve(160 + content_type.size());
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += reason_phrase(status);
  out += "\r\nServer: sluice\r\n";
  if (!content_type.empty()) {
    out += "Content-Type: ";
    out += content_type;
    out += "\r\n";
  }
  for (const auto& h : headers) {
    out += h.name;
    out += ": ";
    out += h.value;
    out += "\r\n";
  }
  if (status == 204) {
    // No Content: no body and, per RFC 9110, no Content-Length either.
  } else if (content_length) {
    out += "Content-Length: ";
    out += std::to_string(*content_length);
    out += "\r\n";
  } else {
    out += "Transfer-Encoding: chunked\r\n";
  }
  if (close) out += "Connection: close\r\n";
  out += "\r\n";
  return out;
}

std::string serialize_response(const HttpResponse& response, bool close) {
  std::string out = serialize_head(response.status, response.content_type, response.headers, response.body.size(), close);
  out += response.body;
  return out;
}

std::string serialize_response(HttpResponse&& response, bool close) {
  const std::string head = serialize_head(response.status, response.content_type, response.headers, response.body.size(), close);
  std::string out = std::move(response.body);
  out.insert(0, head);
  return out;
}

void append_chunk(std::string& out, std::string_view data) {
  if (data.empty()) return;
  char size[24];
  int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  out.append(size, static_cast<std::size_t>(n));
  out += data;
  out += "\r\n";
}

}  // namespace sluice::http
