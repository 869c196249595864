// Who may reach an HTTP source: the rule that a source listening beyond this machine states its
// authentication. One function, used by `sluice validate` (spec_validator.cc, at the file's
// line and column) and by the source at start-up (connectors/http/http_source.cc), so the two
// never disagree.
//
//   auth.mode "keys"  needs keys_file or keys_env;
//   auth.mode "none"  serves without authentication, on any address, and takes no keys;
//   auth.mode empty   means "keys" when keys_file or keys_env is set, else no authentication,
//                     which is allowed only on a loopback listen (127.0.0.0/8, ::1, localhost).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "graph/schema.h"

namespace sluice {

enum class AuthMode { kNone, kKeys };

// 127.0.0.0/8, ::1 (or its long forms), "localhost". "0.0.0.0" and "::" are every interface.
bool is_loopback_host(std::string_view host);

// The mode a config asks for once the defaults above apply.
AuthMode effective_auth_mode(const AuthConfig& auth);

// What is wrong with `config`'s listen/auth pair, as {field under the source's config ("listen",
// "auth.mode", "auth.keys_file"), sentence}; nullopt when nothing is. A listen that does not
// parse is left to the address rule.
struct ListenProblem {
  std::string field;
  std::string message;
};
std::optional<ListenProblem> listen_auth_problem(const HttpSourceConfig& config);

}  // namespace sluice
