// Reading a raw HTTP/1.1 response as the load generator receives it (head and body in one
// string, the connection closed by the server): the status, a header, and the body with a
// chunked transfer encoding undone. What is cut off or malformed reads as absent, never throws.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace sluice::loadgen {

// The status code, or 0 while the head is incomplete or not HTTP.
int status_of(std::string_view response);
// The value of header `lower_name` (given in lower case), spaces before it trimmed; "" when absent.
std::string header_value(std::string_view response, std::string_view lower_name);
// The body after the head, de-chunked when the head says Transfer-Encoding: chunked.
std::string response_body(std::string_view response);

}  // namespace sluice::loadgen
