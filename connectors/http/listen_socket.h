// The HTTP server's listening socket: bound, listening and non-blocking, shared by all of
// its event loops.
#pragma once

#include <cstdint>
#include <string>

namespace sluice::http {

// Binds and listens on host:port (host an IPv4 or IPv6 literal, or "localhost" for
// 127.0.0.1; port 0 picks a free one). Returns the descriptor and sets *bound_port to the
// port it got. Throws std::runtime_error naming the address and the system's reason.
int open_listen_socket(const std::string& host, std::uint16_t port, std::uint16_t* bound_port);

}  // namespace sluice::http
