// RequestAuth: who is calling an HTTP source and whether they may (docs/operations.md,
// Security). With auth mode "keys" every endpoint except /healthz and auth.open_paths needs
// `Authorization: Bearer <key>` (as OpenAI clients send it) naming a key of the KeyRing with
// the endpoint's scope:
//
//   /v1/chat/completions, /v1/completions, /v1/models   infer
//   /v1/retrieve                                        retrieve
//   /v1/documents                                       documents:write
//   /metrics, /readyz (unless open)                     admin
//
// A refusal is an OpenAI-shaped error: 401 invalid_api_key / missing_api_key (with
// WWW-Authenticate: Bearer), 403 insufficient_scope, 429 rate_limit_exceeded with Retry-After
// (the key's requests_per_second bucket is empty, or its tokens_per_minute bucket is in debt).
// An admitted request carries the key's tenant, its priority ceiling and, when the key has a
// token limit, a TokenMeter the response charges with the request's tokens when it ends.
//
// reload() reads the keys again (SIGHUP): on success the new ring serves the next request and
// each surviving key (same id) keeps its bucket levels; on failure the old ring stays and the
// error is returned. Connections are untouched either way.
// Time is the injected Clock's. Thread-safety: all methods, from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "connectors/http/api_keys.h"
#include "connectors/http/http_metrics.h"
#include "connectors/http/http_parser.h"
#include "connectors/http/openai_request.h"
#include "graph/clock.h"
#include "graph/metrics.h"
#include "graph/mutex.h"
#include "graph/schema.h"
#include "graph/status.h"
#include "graph/token_bucket.h"

namespace sluice::http {

// One key's buckets, shared by the limiter and the responses that charge tokens.
class TokenMeter {
 public:
  TokenMeter(const ApiKey& key, Nanos now, Counter& limited_requests, Counter& limited_tokens);
  // nullopt when admitted (one request taken); else the wait before a retry can pass.
  std::optional<Nanos> admit(Nanos now, bool counts_tokens);
  void charge_tokens(Nanos now, int tokens);
  void reconfigure(const ApiKey& key, Nanos now);

 private:
  mutable Mutex mu_;
  TokenBucket requests_ GUARDED_BY(mu_);
  TokenBucket tokens_ GUARDED_BY(mu_);
  Counter& limited_requests_;
  Counter& limited_tokens_;
};

struct AuthDecision {
  std::optional<ApiError> error;     // set: answer it (with `headers`)
  std::vector<HttpHeader> headers;   // WWW-Authenticate, Retry-After
  std::string key_id;                // empty without auth
  std::string tenant;
  int ceiling_class = 0;             // lowest class index the caller may ask for
  std::string ceiling_name;
  std::shared_ptr<TokenMeter> meter;  // charge tokens here when the answer ends; may be null
  Nanos now = 0;
};

class RequestAuth {
 public:
  // Reads the keys when the mode is "keys"; throws std::invalid_argument naming the source and
  // the problem (a key file's problems at file:line:column). `classes` resolves max_priority.
  RequestAuth(const AuthConfig& config, const std::string& source, KeyRing::ClassLookup classes, const Clock& clock,
              MetricsRegistry& metrics);

  bool enabled() const { return enabled_; }
  AuthDecision authorize(const HttpRequest& request, Endpoint endpoint);
  // Ok, or why the keys were not replaced (the file's place and problem).
  Status reload();
  std::size_t key_count() const;
  // The 403 for an X-Priority above the key's max_priority (the source reads the header), counted.
  ApiError priority_refusal(const AuthDecision& decision, const std::string& asked);

 private:
  // The keys in use and each key's meter (index-aligned with ring->keys()), replaced whole by a
  // reload so a request sees one consistent pair under one lock.
  struct Installed {
    std::shared_ptr<const KeyRing> ring;
    std::vector<std::shared_ptr<TokenMeter>> meters;
  };
  std::shared_ptr<const KeyRing> read_keys() const;  // throws KeyFileError / std::runtime_error
  void install(std::shared_ptr<const KeyRing> ring) REQUIRES(mu_);
  static AuthDecision refuse(ApiError error, std::vector<HttpHeader> headers = {});

  const AuthConfig config_;
  const std::string source_;
  const KeyRing::ClassLookup classes_;
  const Clock& clock_;
  MetricsRegistry& metrics_;
  bool enabled_ = false;
  bool metrics_open_ = false;
  bool readyz_open_ = false;
  mutable Mutex mu_;
  std::shared_ptr<const Installed> installed_ GUARDED_BY(mu_);
  Gauge& keys_loaded_;
  Counter& reloads_ok_;
  Counter& reloads_failed_;
  Counter& refused_missing_;
  Counter& refused_invalid_;
  Counter& refused_scope_;
  Counter& refused_priority_;
};

// The key in an Authorization header value ("Bearer <key>", scheme case-insensitive), or empty.
std::string_view bearer_token(std::string_view authorization);

}  // namespace sluice::http
