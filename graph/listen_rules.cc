#include "graph/listen_rules.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "graph/units.h"

namespace sluice {

bool is_loopback_host(std::string_view host) {
  if (host == "localhost") return true;
  const std::string text(host);
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    static const in6_addr kLoopback = IN6ADDR_LOOPBACK_INIT;
    return std::equal(std::begin(v6.s6_addr), std::end(v6.s6_addr), std::begin(kLoopback.s6_addr));
  }
  return false;
}

AuthMode effective_auth_mode(const AuthConfig& auth) {
  if (auth.mode() == "keys") return AuthMode::kKeys;
  if (auth.mode() == "none") return AuthMode::kNone;
  return auth.keys_file().empty() && auth.keys_env().empty() ? AuthMode::kNone : AuthMode::kKeys;
}

std::optional<ListenProblem> listen_auth_problem(const HttpSourceConfig& config) {
  const AuthConfig& auth = config.auth();
  const bool has_keys = !auth.keys_file().empty() || !auth.keys_env().empty();
  if (auth.mode() == "keys" && !has_keys) {
    return ListenProblem{"auth.mode", "auth mode 'keys' needs keys_file or keys_env to say where the keys are"};
  }
  if (auth.mode() == "none" && has_keys) {
    return ListenProblem{auth.keys_file().empty() ? "auth.keys_env" : "auth.keys_file",
                         "auth mode 'none' serves without keys; remove the keys or set mode: keys"};
  }
  if (!auth.mode().empty() || has_keys) return std::nullopt;
  std::string host, error;
  std::uint16_t port = 0;
  const std::string listen = config.listen().empty() ? "127.0.0.1:8080" : config.listen();
  if (!parse_host_port(listen, &host, &port, &error)) return std::nullopt;
  if (is_loopback_host(host)) return std::nullopt;
  return ListenProblem{"listen", "'" + listen + "' is reachable from other machines and auth is not configured: set "
                                 "auth.keys_file or auth.keys_env (docs/operations.md, Security), or write `auth: none` "
                                 "to serve without authentication on purpose"};
}

}  // namespace sluice
